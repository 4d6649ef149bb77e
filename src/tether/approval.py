"""The approval policy dispatch consults: permission rules, path checks, then the default.

Reads run; anything with side effects asks; deny rules always win; `--auto`
allows everything a deny rule does not forbid. A path outside the project root
asks even when a rule would allow it (except under --auto).

Every path a call names is checked, not only its main argument: copy_file's
destination and search_in_file's path meet the same deny rules as any other
path, and an allow rule must cover all of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .dispatch import GateVerdict
from .messages import ToolCall
from .permissions import Decision, RuleSet
from .shell_parse import split_command
from .toolspec import Tool

PATH_PARAMS = ("filepath", "path", "source", "destination")
"""Parameter names that hold file-system paths, by the tool table's naming convention."""
SHELL_TOOL = "run_cmd"


@dataclass
class ApprovalPolicy:
    root: Path
    rules: RuleSet
    auto: bool = False

    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        decisions = [self._decide(tool, value, is_path) for value, is_path in checked_values(call, tool)]
        denied = next((d for d in decisions if d.verdict == "deny"), None)
        if denied is not None:
            return GateVerdict("deny", denied.reason)
        unverifiable = self.unverifiable(call, tool)
        if self.auto:
            if unverifiable:  # --auto turns "ask" into "run": deny rules must still be able to see it
                return GateVerdict("deny", f"{unverifiable}, so deny rules cannot check it")
            return GateVerdict("allow")
        outside = self.outside_paths(call.arguments)
        if outside:
            return GateVerdict("ask", f"path outside the project: {', '.join(outside)}")
        if unverifiable:
            return GateVerdict("ask", unverifiable)
        if all(d.verdict == "allow" for d in decisions):
            return GateVerdict("allow")
        if tool.read_only or tool.needs_approval is False:
            return GateVerdict("allow")
        return GateVerdict("ask", describe_effect(tool))

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

    def outside_paths(self, arguments: dict[str, Any]) -> list[str]:
        found = []
        for key in PATH_PARAMS:
            value = arguments.get(key)
            if isinstance(value, str) and value and not is_inside(self.root, value):
                found.append(value)
        return found


def checked_values(call: ToolCall, tool: Tool) -> list[tuple[str, bool]]:
    """(value, is_path) for the main argument and every other path the call names."""
    values = [(tool.main_value(call.arguments), tool.main_arg in PATH_PARAMS)]
    for key in PATH_PARAMS:
        value = call.arguments.get(key)
        if key != tool.main_arg and isinstance(value, str) and value:
            values.append((value, True))
    return values


def is_inside(root: Path, path: str) -> bool:
    """True when `path` (relative to root, or absolute) stays inside root, symlinks resolved."""
    try:
        candidate = Path(os.path.expanduser(path))
        if not candidate.is_absolute():
            candidate = root / candidate
        candidate.resolve().relative_to(root.resolve())
    except (ValueError, OSError):  # outside, or a path the OS cannot even represent
        return False
    return True


def describe_effect(tool: Tool) -> str:
    if tool.runs_commands:
        return "it runs a command"
    if tool.writes_files:
        return "it changes files"
    if tool.network:
        return "it uses the network"
    return "it has side effects"
