"""The skills of one run: what was found, what is loaded, and the use_skill tool."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from ..core.tool_params import Params
from ..core.toolspec import Tool, ToolContext, ToolError, ToolTable
from ..safety.shell_session import Launcher
from .catalog import Skill, SkillCatalog, prompt_index
from .scripts import RunCommand, is_script, may_replace, script_tool

USE_SKILL = "use_skill"

OnLoad = Callable[[list[Tool]], list[Tool]]
"""Puts a skill's tools in the table; returns those it took (a name may be another tool's)."""


class UseSkillParams(Params):
    name: str = Field(description="The skill's name, as the Skills list in the prompt gives it.")


@dataclass
class SkillBook:
    catalog: SkillCatalog
    root: Path
    run_command: RunCommand | None = None
    """run_cmd's handler: the one way a script runs."""
    on_load: OnLoad = lambda tools: tools
    launcher: Launcher | None = None
    """The sandbox a Python script's --help runs in when a skill is loaded."""
    confined: Callable[[], bool] = lambda: False
    """True when `launcher` really confines commands; without that no --help runs at load
    and the script takes an argument list (see scripts)."""
    loaded: list[str] = field(default_factory=list)
    tools_of: dict[str, list[str]] = field(default_factory=dict)
    """The script tool names each loaded skill brought."""

    def load(self, name: str) -> str:
        """The text use_skill returns; its scripts become tools. ToolError for an unknown name."""
        skill = self.catalog.get(name.strip())
        if skill is None:
            known = ", ".join(self.catalog.names()) or "none"
            raise ToolError(f"No skill named {name!r}. Skills: {known}.")
        try:
            body = skill.body()
        except (OSError, ValueError) as exc:  # changed since it was found
            raise ToolError(f"Skill {skill.name} cannot be read now ({skill.file}): {exc}") from None
        tools, problems = self.script_tools(skill)
        added = self.on_load(tools)
        taken = {id(t) for t in added}
        problems += [f"{t.name}: the name belongs to another tool" for t in tools
                     if id(t) not in taken]
        tools = added
        self.tools_of[skill.name] = [t.name for t in added]
        if skill.name not in self.loaded:
            self.loaded.append(skill.name)
        return loaded_text(skill, body, tools, problems)

    def reload(self, names: list[str]) -> None:
        """Load again the skills another runtime had loaded (those still found)."""
        for name in names:
            if self.catalog.get(name) is not None:
                with contextlib.suppress(ToolError):
                    self.load(name)

    def script_tools(self, skill: Skill) -> tuple[list[Tool], list[str]]:
        if skill.folder is None or self.run_command is None:
            return [], []
        tools, problems = [], []
        help_launcher = self.launcher if self.launcher is not None and self.confined() else None
        for script in sorted((skill.folder / "scripts").glob("*")):
            if not is_script(script):
                continue
            refused = skill.gate.refusal(script)
            if refused:  # a link out of the project would run what the project does not hold
                problems.append(refused)
                continue
            try:
                tools.append(script_tool(skill.name, script, self.root, self.run_command,
                                         help_launcher))
            except ToolError as exc:
                problems.append(str(exc))
        return tools, problems

    def index_for(self, table: ToolTable) -> str:
        """The skill index for a prompt whose tools are `table` ("" without use_skill)."""
        return prompt_index(self.catalog.skills) if USE_SKILL in table else ""

    def give_agent(self, table: ToolTable) -> None:
        """A sub-agent's table gets a use_skill of its own: the scripts of a skill it loads
        join that table, where the agent can call them, and the parent's stays as it was."""
        if USE_SKILL not in table:
            return
        book = dataclasses.replace(self, on_load=lambda tools: add_to_table(table, tools),
                                   loaded=[], tools_of={})
        table.replace(book.tool())

    def tool(self) -> Tool:
        def use_skill(args: UseSkillParams, ctx: ToolContext) -> str:
            return self.load(args.name)

        return Tool(
            name=USE_SKILL,
            description="Load a skill from the Skills list: returns its instructions and its "
            "bundled files (read them with read_file); its scripts become tools.",
            params=UseSkillParams, handler=use_skill, reads=True, main_arg="name",
        )


def add_to_table(table: ToolTable, tools: list[Tool]) -> list[Tool]:
    """Script tools into `table`; a name another tool holds (another kind of tool, another
    skill's script) stays that tool's. The ones added are returned."""
    added = []
    for tool in tools:  # one at a time: two scripts of one skill may share a name (x.py, x)
        if may_replace(table.get(tool.name), tool):
            table.replace(tool)
            added.append(tool)
    return added


def loaded_text(skill: Skill, body: str, tools: list[Tool], problems: list[str]) -> str:
    lines = [f"Skill {skill.name} loaded ({skill.file}).", "", body]
    files, more = skill.bundled_files()
    if files:
        lines += ["", f"Bundled files (in {skill.folder}):", *[f"- {p}" for p in files]]
    if more:
        lines.append(f"... and {more} more files")
    if tools:
        lines += ["", "Tools now available: " + ", ".join(t.name for t in tools)]
    if skill.meta.allowed_tools:
        lines += ["", "The skill suggests these tools (advice only; approvals still apply): "
                  + " ".join(skill.meta.allowed_tools)]
    lines += [f"Not a tool: {p}" for p in problems]
    return "\n".join(lines)
