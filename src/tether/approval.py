"""The approval policy dispatch consults: permission rules, path checks, then the default.

Reads run; anything with side effects asks; deny rules always win; `--auto`
allows everything a deny rule does not forbid. A path outside the project root
asks even when a rule would allow it (except under --auto).

Every path a call names (each argument its tool declares in `path_params`) is
checked, not only its main argument: copy_file's destination and
search_in_file's path meet the same deny rules as any other path, and an allow
rule must cover all of them.

Three checks stand above every rule and --auto: tether's saved keys
(`credentials.json` in the state directory) are never read or written through
a tool; when a sandbox was asked for but cannot run, every command asks
before it runs unconfined; and a file tool's write into git's own files
(`.git/config`, hooks, `info/attributes`: settings that make git run programs)
always asks. Where nobody can ask (one-shot mode) such a write is refused
unless an allow rule names that exact path.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from .dispatch import GateVerdict
from .git_guard import writes_git_files
from .keys import CREDENTIALS_FILE
from .messages import ToolCall
from .permissions import Decision, RuleSet
from .sandbox import Sandbox
from .shell_parse import split_command
from .tools._paths import is_inside_root, is_within
from .toolspec import Tool

SHELL_TOOL = "run_cmd"
SANDBOXED_TOOLS = ("run_cmd", "send_input")
"""The tools whose commands the sandbox confines (end_process only stops one)."""
SEARCH_TOOL = "search_in_file"
COMMAND_TEXT_PARAMS = ("command", "stdin", "text")
"""Arguments of the shell tools whose text reaches a shell."""


@dataclass
class ApprovalPolicy:
    root: Path
    rules: RuleSet
    auto: bool = False
    home: Path | None = None
    """tether's state directory (TETHER_HOME): its saved keys are out of every tool's reach."""
    sandbox: Sandbox | None = None
    """The sandbox commands run in; when it was asked for but cannot run, commands ask."""
    can_ask: bool = True
    """Whether a person can answer "ask" (False in one-shot mode)."""

    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        decisions = [self._decide(tool, value, is_path) for value, is_path in checked_values(call, tool)]
        denied = next((d for d in decisions if d.verdict == "deny"), None)
        if denied is not None:
            return GateVerdict("deny", denied.reason)
        guarded = (
            self.secrets_verdict(call, tool)
            or self.sandbox_verdict(tool)
            or self.git_files_verdict(call, tool)
        )
        if guarded is not None:
            return guarded
        unverifiable = self.unverifiable(call, tool)
        if self.auto:
            if unverifiable:  # --auto turns "ask" into "run": deny rules must still be able to see it
                return GateVerdict("deny", f"{unverifiable}, so deny rules cannot check it")
            return GateVerdict("allow")
        outside = self.outside_paths(call, tool)
        if outside:
            return GateVerdict("ask", f"path outside the project: {', '.join(outside)}")
        if unverifiable:
            return GateVerdict("ask", unverifiable)
        if all(d.verdict == "allow" for d in decisions):
            return GateVerdict("allow")
        if tool.read_only or tool.needs_approval is False:
            return GateVerdict("allow")
        return GateVerdict("ask", describe_effect(tool))

    def secrets_verdict(self, call: ToolCall, tool: Tool) -> GateVerdict | None:
        """Deny a call that names the saved keys; ask before a search that would read them."""
        if self.home is None:
            return None
        if tool.name in SANDBOXED_TOOLS:
            texts = [call.arguments.get(k) for k in COMMAND_TEXT_PARAMS]
            if any(isinstance(t, str) and self._mentions_secrets(t) for t in texts):
                return GateVerdict("deny", (
                    f"the command names tether's state directory, which holds the saved keys "
                    f"({CREDENTIALS_FILE}) that no tool may read or change. This check reads the "
                    "command text only; --sandbox hides the state directory from every command"
                ))
            return None
        paths = list(tool.path_values(call.arguments).values())
        if any(is_secret_path(self.root, self.home, p) for p in paths):
            return GateVerdict("deny", (
                f"tether's saved keys ({CREDENTIALS_FILE} in the state directory) are never "
                "read or written through a tool"
            ))
        if tool.name == SEARCH_TOOL and any(contains_home(self.root, self.home, p) for p in paths):
            return GateVerdict("ask", (
                "the search would read tether's state directory, which holds saved keys"
            ))
        return None

    def git_files_verdict(self, call: ToolCall, tool: Tool) -> GateVerdict | None:
        """A write into git's own files asks, whatever the rules and --auto say: a setting
        or hook there makes the next git command run a program. Nobody to ask: refused,
        unless an allow rule names exactly that path."""
        if not tool.writes_files:
            return None
        written = tool.path_values(call.arguments, written_only=bool(tool.written_params))
        hits = [p for p in written.values() if writes_git_files(self.root, p)]
        if not hits:
            return None
        shown = ", ".join(hits)
        if self.can_ask:
            return GateVerdict("ask", (
                f"writes git's own files ({shown}): git settings and hooks there can make "
                "git run programs"
            ))
        if all(self._exact_allow_rule(tool.name, p) for p in hits):
            return None
        return GateVerdict("deny", (
            f"{shown} is in git's own files, where settings and hooks can make git run "
            "programs; only an allow rule naming exactly that path lets one-shot mode write it"
        ))

    def _exact_allow_rule(self, tool_name: str, path: str) -> bool:
        """An allow rule for this tool whose pattern, without wildcards, is this very path."""
        wanted = _spellings(self.root, path)
        return any(
            rule.matches_tool(tool_name) and rule.pattern is not None and not rule.has_wildcard
            and _spellings(self.root, rule.pattern) == wanted
            for rule in self.rules.allow
        )

    def _mentions_secrets(self, text: str) -> bool:
        """Any mention of the state directory, not just of the keys file: `cat ~/.tether/cred*`
        names no file, yet reads it. Inside a working sandbox the directory is hidden anyway."""
        if self.home is None:
            return False
        if self.sandbox is not None and self.sandbox.enabled and self.sandbox.available():
            return False
        return any(spelling in text for spelling in home_spellings(self.root, self.home))

    def sandbox_verdict(self, tool: Tool) -> GateVerdict | None:
        """Ask before a command when the sandbox it should run in cannot start."""
        sandbox = self.sandbox
        if sandbox is None or tool.name not in SANDBOXED_TOOLS or not sandbox.enabled:
            return None
        if sandbox.available():
            return None
        return GateVerdict("ask", (
            f"the {sandbox.mode} sandbox cannot be used ({sandbox.problem}), so the command "
            "would run unconfined; install bubblewrap or choose --sandbox off"
        ))

    def _decide(self, tool: Tool, value: str, is_path: bool) -> Decision:
        return self.rules.decide(
            tool.name, value, runs_commands=tool.runs_commands and not is_path,
            is_path=is_path, root=self.root,
        )

    def unverifiable(self, call: ToolCall, tool: Tool) -> str:
        """Why a command cannot be checked against the deny rules ("" when it can, or none apply)."""
        if not tool.runs_commands or not self._deny_rules_for(tool.name):
            return ""
        args = call.arguments
        if tool.name == SHELL_TOOL:
            if args.get("stdin"):
                return "the command is given input on stdin"
            split = split_command(str(args.get("command", "")))
            if split.opaque:
                return "the command cannot be split into simple parts (" + ", ".join(split.reasons) + ")"
            return ""
        if args.get("text"):
            return "input sent to a running command"
        return ""

    def _deny_rules_for(self, name: str) -> bool:
        return any(r.matches_tool(name) or r.matches_tool(SHELL_TOOL) for r in self.rules.deny)

    def outside_paths(self, call: ToolCall, tool: Tool) -> list[str]:
        return [p for p in tool.path_values(call.arguments).values() if not is_inside(self.root, p)]


def checked_values(call: ToolCall, tool: Tool) -> list[tuple[str, bool]]:
    """(value, is_path) for the main argument and every other path the call names."""
    values = [(tool.main_value(call.arguments), tool.main_arg in tool.path_params)]
    paths = tool.path_values(call.arguments)
    return values + [(value, True) for key, value in paths.items() if key != tool.main_arg]


def is_inside(root: Path, path: str) -> bool:
    """True when `path` (relative to root, or absolute) stays inside root, symlinks resolved."""
    try:
        candidate = root / os.path.expanduser(path)
    except (ValueError, OSError):  # a path the OS cannot even represent
        return False
    return is_inside_root(candidate, root)


def _absolute(root: Path, path: str) -> Path:
    candidate = Path(os.path.expanduser(path))
    return Path(os.path.normpath(candidate if candidate.is_absolute() else root / candidate))


def _spellings(root: Path, path: str) -> tuple[Path, Path]:
    """(normalized, resolved): two paths are the same path only when both agree."""
    absolute = _absolute(root, path)
    return absolute, absolute.resolve()


def _forms(path: Path) -> set[Path]:
    """The path as written (normalised) and with every symlink resolved."""
    return {path, path.resolve()}


def is_secret_path(root: Path, home: Path, path: str) -> bool:
    """True when `path` is a credentials file inside `home`, by name, symlink or hard link."""
    try:
        candidate = _absolute(root, path)
        homes = _forms(Path(os.path.normpath(home.expanduser())))
        for form in _forms(candidate):
            if form.name == CREDENTIALS_FILE and any(is_within(form, h) for h in homes):
                return True
        secrets = home / CREDENTIALS_FILE
        return candidate.is_file() and secrets.is_file() and os.path.samefile(candidate, secrets)
    except (ValueError, OSError, RuntimeError):  # a path the OS cannot represent reads nothing
        return False


def contains_home(root: Path, home: Path, path: str) -> bool:
    """True when the directory `path` is `home` or one of its ancestors."""
    try:
        homes = _forms(Path(os.path.normpath(home.expanduser())))
        return any(is_within(h, form) for form in _forms(_absolute(root, path)) for h in homes)
    except (ValueError, OSError, RuntimeError):
        return False


def home_spellings(root: Path, home: Path) -> set[str]:
    """Ways a command may name the state directory: absolute, ~/..., relative, by variable."""
    spellings = {".tether", "TETHER_HOME", str(home)}
    with contextlib.suppress(OSError, RuntimeError):
        spellings.add(str(home.resolve()))
    with contextlib.suppress(ValueError, RuntimeError):
        spellings.add("~/" + home.relative_to(Path.home()).as_posix())
    relative = os.path.relpath(home, root)
    if not relative.startswith(".."):
        spellings.add(relative)
    return {s for s in spellings if s not in ("", ".", "~/.")}


def describe_effect(tool: Tool) -> str:
    if tool.runs_commands:
        return "it runs a command"
    if tool.writes_files:
        return "it changes files"
    if tool.network:
        return "it uses the network"
    return "it has side effects"
