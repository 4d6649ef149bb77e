"""The approval policy dispatch consults: permission rules, path checks, then the default.

Reads run; anything with side effects asks; deny rules always win; `--auto`
allows everything a deny rule does not forbid. A path outside the project root
asks even when a rule would allow it (except under --auto).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .dispatch import GateVerdict
from .messages import ToolCall
from .permissions import RuleSet
from .toolspec import Tool

PATH_PARAMS = ("filepath", "path", "source", "destination")
"""Parameter names that hold file-system paths, by the tool table's naming convention."""


@dataclass
class ApprovalPolicy:
    root: Path
    rules: RuleSet
    auto: bool = False

    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        value = tool.main_value(call.arguments)
        is_path = tool.main_arg in PATH_PARAMS
        decision = self.rules.decide(
            tool.name, value, runs_commands=tool.runs_commands, is_path=is_path, root=self.root
        )
        if decision.verdict == "deny":
            return GateVerdict("deny", decision.reason)
        if self.auto:
            return GateVerdict("allow")
        outside = self.outside_paths(call.arguments)
        if outside:
            return GateVerdict("ask", f"path outside the project: {', '.join(outside)}")
        if decision.verdict == "allow" or tool.read_only or tool.needs_approval is False:
            return GateVerdict("allow")
        return GateVerdict("ask", describe_effect(tool))

    def outside_paths(self, arguments: dict[str, Any]) -> list[str]:
        found = []
        for key in PATH_PARAMS:
            value = arguments.get(key)
            if isinstance(value, str) and value and not is_inside(self.root, value):
                found.append(value)
        return found


def is_inside(root: Path, path: str) -> bool:
    """True when `path` (relative to root, or absolute) stays inside root, symlinks resolved."""
    candidate = Path(os.path.expanduser(path))
    if not candidate.is_absolute():
        candidate = root / candidate
    real_root = root.resolve()
    try:
        candidate.resolve().relative_to(real_root)
    except ValueError:
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
