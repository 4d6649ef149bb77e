"""A loaded skill's scripts as tools: `<skill>__<script>`, run like run_cmd.

A Python script is asked for its argparse help in a subprocess (never imported into tether)
when the skill is loaded, but only inside a sandbox that really confines it (and with a
timeout and no keys in its environment): loading a skill must not run a project's code
unconfined without asking. The help is the description and its arguments the parameters.
Without such a sandbox, and for an executable with a shebang, the tool takes a list of
arguments, and the model sees a script's options by calling it with `--help` (a command
like any other, asked for or allowed by the rules). Every call becomes one command line
handed to run_cmd's own handler, and the tool's main value is that line: the approval
policy, the rules and the sandbox see exactly what run_cmd would.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, create_model

from ..core.tool_params import Params
from ..core.toolspec import MCP_NAMESPACE, Tool, ToolContext, ToolError, ToolOutput
from ..host import open_regular, read_at_most
from ..safety.shell_session import Launcher
from ..tools.params import RunCmdParams

HELP_TIMEOUT = 10.0
HELP_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TMPDIR")
MAX_DESCRIPTION = 1500
OPTION_LINE = re.compile(r"^\s{2,}(?:-\w,\s*)?(--[\w-]+)(?:[ =]([A-Z_][A-Z0-9_]*))?(?:\s{2,}(.*))?$")
POSITIONAL_LINE = re.compile(r"^\s{2,}([a-z_][\w-]*)(?:\s{2,}(.*))?$")

UNREAD_HELP = (" Its options were not read at load (no sandbox to run it in): the skill's "
               "text says how to call it, or call it with [\"--help\"] to see them.")

RunCommand = Callable[[RunCmdParams, ToolContext], Any]


@dataclass(frozen=True)
class Argument:
    flag: str
    """"" for a positional argument, else the option as written (--dry-run)."""
    field: str
    takes_value: bool
    help: str


@dataclass(frozen=True)
class ScriptTool(Tool):  # type: ignore[misc]  # (Tool.params: a descriptor mypy takes for a default)
    """A tool whose main value is the command line it runs (so rules match the command)."""

    command_of: Callable[[dict[str, Any]], str] | None = None
    script: Path | None = None
    """The script it runs: only a tool of the same script may take its place (a reload)."""

    def main_value(self, arguments: dict[str, Any]) -> str:
        if self.command_of is None:
            return super().main_value(arguments)
        try:
            return self.command_of(arguments)
        except (TypeError, ValueError):
            return ""


def may_replace(existing: Tool | None, new: Tool) -> bool:
    """Whether `new` may take the name `existing` holds: a free name, or the same script's
    tool loaded again. Another skill's script of the same name keeps it, as any other
    tool does (its rules must not start judging a different program)."""
    if existing is None:
        return True
    return (isinstance(existing, ScriptTool) and isinstance(new, ScriptTool)
            and existing.script is not None and existing.script == new.script)


def tool_name(skill: str, script: Path) -> str:
    """`<skill>__<script>`; ToolError for a name in the MCP tools' namespace (a skill named
    `mcp` or `mcp__fs`), which would take the rules written for an MCP server's tool."""
    stem = re.sub(r"[^a-zA-Z0-9_]", "_", script.stem)
    name = f"{skill.replace('-', '_')}__{stem}"[:64]
    if name.startswith(MCP_NAMESPACE):
        raise ToolError(f"{name}: names starting with {MCP_NAMESPACE} belong to MCP servers' "
                        "tools; the skill needs another name for its scripts to be tools")
    return name


def read_help(script: Path, root: Path, launcher: Launcher) -> str:
    """The script's --help text, run through `launcher` (a confining sandbox); ToolError
    when it cannot be had."""
    env = {k: os.environ[k] for k in HELP_ENV_KEYS if k in os.environ}
    argv = [sys.executable, str(script), "--help"]
    try:
        with launcher.launch(argv, env) as started:
            try:
                done = _run_for_help(started.argv, root, started.env, started.pass_fds)
            finally:
                started.release()
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolError(f"{script.name} --help failed: {exc}") from None
    if done.returncode != 0 or "usage:" not in done.stdout:
        raise ToolError(f"{script.name} --help printed no argparse usage "
                        f"(exit code {done.returncode})")
    return done.stdout


def _run_for_help(
    argv: list[str], root: Path, env: dict[str, str], pass_fds: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=root, env=env, pass_fds=pass_fds, capture_output=True, text=True,
        errors="replace", timeout=HELP_TIMEOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )


def help_arguments(help_text: str) -> list[Argument]:
    """Positionals and options from argparse's help sections (-h/--help left out)."""
    found: list[Argument] = []
    section = ""
    for line in help_text.splitlines():
        if line and not line.startswith(" "):
            section = line.strip().lower()
            continue
        if section.startswith("positional"):
            match = POSITIONAL_LINE.match(line)
            if match:
                found.append(Argument("", field_name(match[1]), True, match[2] or ""))
        elif section.startswith(("options", "optional")):
            match = OPTION_LINE.match(line)
            if match and match[1] != "--help":
                found.append(Argument(match[1], field_name(match[1]), bool(match[2]),
                                      match[3] or ""))
    return found


def field_name(flag: str) -> str:
    return re.sub(r"\W", "_", flag.lstrip("-")) or "arg"


def params_model(name: str, arguments: list[Argument]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for arg in arguments:
        if not arg.flag:
            fields[arg.field] = (str, Field(description=arg.help or arg.field))
        elif arg.takes_value:
            fields[arg.field] = (str | None, Field(None, description=arg.help or arg.flag))
        else:
            fields[arg.field] = (bool, Field(False, description=arg.help or arg.flag))
    return create_model(name, **fields)


class ArgList(Params):
    args: list[str] = Field(default_factory=list, description="The script's arguments.")


def shown_path(script: Path, root: Path) -> str:
    try:
        return str(script.relative_to(root))
    except ValueError:
        return str(script)


def python_argv(arguments: list[Argument]) -> Callable[[dict[str, Any]], list[str]]:
    def argv(values: dict[str, Any]) -> list[str]:
        out: list[str] = []
        for arg in arguments:
            value = values.get(arg.field)
            if not arg.flag:
                out.append(str(value if value is not None else ""))
            elif arg.takes_value and value is not None:
                out += [arg.flag, str(value)]
            elif not arg.takes_value and value is True:
                out.append(arg.flag)
        return out
    return argv


def script_tool(
    skill: str, script: Path, root: Path, run_command: RunCommand,
    help_launcher: Launcher | None = None,
) -> Tool:
    """A Python script's parameters come from its --help, read through `help_launcher`
    (None: not read, the script takes an argument list); ToolError when it cannot be read."""
    name = tool_name(skill, script)
    if script.suffix == ".py" and help_launcher is not None:
        help_text = read_help(script, root, help_launcher)
        arguments = help_arguments(help_text)
        params: type[BaseModel] = params_model(name, arguments)
        prefix = [sys.executable, shown_path(script, root)]
        argv = python_argv(arguments)
        description = f"Script of skill {skill}.\n{help_text.strip()}"
    else:
        params = ArgList
        prefix = [sys.executable] if script.suffix == ".py" else []
        prefix.append(shown_path(script, root))
        argv = lambda values: [str(a) for a in values.get("args") or []]  # noqa: E731
        description = f"Script {script.name} of skill {skill}; give its arguments as a list."
        if script.suffix == ".py":
            description += UNREAD_HELP

    def command_of(values: dict[str, Any]) -> str:
        return shlex.join(prefix + argv(values))

    async def run(args: BaseModel, ctx: ToolContext) -> ToolOutput:
        params = RunCmdParams.model_validate({"command": command_of(args.model_dump())})
        result = run_command(params, ctx)
        return await result  # type: ignore[no-any-return]

    return ScriptTool(
        name=name, description=description[:MAX_DESCRIPTION], params=params, handler=run,
        runs_commands=True, main_arg="command", command_of=command_of, script=script.resolve(),
    )


def is_script(path: Path) -> bool:
    """A .py file, or an executable file that starts with a shebang."""
    if not path.is_file():
        return False
    if path.suffix == ".py":
        return True
    try:
        with open_regular(path) as handle:
            starts = read_at_most(handle, path, 2, cut=True) == b"#!"
    except OSError:
        return False
    return starts and os.access(path, os.X_OK)
