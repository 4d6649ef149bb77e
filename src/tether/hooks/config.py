"""Reading the `hooks` table: TETHER_HOME's config.toml (and settings.json, the file Claude
Code users already have), then the project's `.tether/settings.json` in a trusted folder.

The table maps an event to matcher groups, each with a list of command hooks:

    {"PreToolUse": [{"matcher": "run_cmd|write_file",
                     "hooks": [{"type": "command", "command": "./check.sh", "timeout": 10}]}]}

A bad entry is a warning naming where it is and why, and only that entry is skipped.
The order the files give is the order hooks run in: the user's first, then the project's.
Both files are read through a `LoaderGate`: the project's only when it resolves inside the
project, neither when it is tether's saved keys or not a regular file (a FIFO is a warning,
not a wait).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..host import read_json_file
from ..safety.project_config import HOOKS_FILE
from ..store.loader_gate import LoaderGate

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart", "PreCompact")
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
"""The events whose matcher is a tool name; the others run for every occurrence."""
PROJECT_HOOKS_FILE = HOOKS_FILE
USER_HOOKS_JSON = "settings.json"
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 3600.0


@dataclass(frozen=True)
class HookSpec:
    """One command hook as configured, with the file it came from."""

    event: str
    matcher: str
    command: str
    timeout: float
    strict: bool
    source: str
    """Where it was read: the file's path."""
    pattern: re.Pattern[str] | None = field(default=None, compare=False)
    """The matcher as a regular expression (None: every tool)."""

    def matches(self, tool_name: str) -> bool:
        if self.event not in TOOL_EVENTS or self.pattern is None:
            return True
        return self.pattern.fullmatch(tool_name) is not None


@dataclass
class HookSet:
    """Every configured hook in the order it runs, and the problems reading them."""

    hooks: list[HookSpec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def for_event(self, event: str, tool_name: str = "") -> list[HookSpec]:
        return [h for h in self.hooks if h.event == event and h.matches(tool_name)]

    def add_table(self, table: object, source: str) -> None:
        """The hooks of one `hooks` table; problems become warnings."""
        if not isinstance(table, Mapping):
            self.warnings.append(f"{source}: 'hooks' must be a table of events; ignored")
            return
        for event, groups in table.items():
            if event not in EVENTS:
                self.warnings.append(f"{source}: unknown hook event '{event}' ignored "
                                     f"(known: {', '.join(EVENTS)})")
                continue
            if not isinstance(groups, list):
                self.warnings.append(f"{source}: hooks.{event} must be a list; ignored")
                continue
            for index, group in enumerate(groups):
                self.hooks.extend(self._group(event, group, f"{source}: hooks.{event}[{index}]"))

    def _group(self, event: str, group: object, where: str) -> Iterable[HookSpec]:
        if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
            self.warnings.append(f"{where}: expected {{\"matcher\": ..., \"hooks\": [...]}}; skipped")
            return []
        matcher = group.get("matcher", "")
        if not isinstance(matcher, str):
            self.warnings.append(f"{where}: the matcher must be a string; skipped")
            return []
        try:
            pattern = matcher_pattern(matcher)
        except re.error as exc:
            self.warnings.append(f"{where}: the matcher {matcher!r} is not a valid pattern ({exc}); "
                                 "skipped")
            return []
        specs = []
        for number, entry in enumerate(group["hooks"]):
            spec = self._entry(event, matcher, pattern, entry, f"{where}.hooks[{number}]")
            if spec is not None:
                specs.append(spec)
        return specs

    def _entry(self, event: str, matcher: str, pattern: re.Pattern[str] | None, entry: object,
               where: str) -> HookSpec | None:
        source = where.split(": ", 1)[0]
        problem = entry_problem(entry)
        if problem:
            self.warnings.append(f"{where}: {problem}; skipped")
            return None
        assert isinstance(entry, Mapping)
        timeout = float(entry.get("timeout", DEFAULT_TIMEOUT))
        return HookSpec(event, matcher, entry["command"], timeout, entry.get("strict") is True,
                        source, pattern)


def entry_problem(entry: object) -> str:
    """Why one hook entry cannot be used; "" when it can."""
    if not isinstance(entry, Mapping):
        return "a hook must be a table"
    if entry.get("type", "command") != "command":
        return f"hook type {entry.get('type')!r} is not supported (only \"command\")"
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return "a hook needs a non-empty 'command'"
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (
            0 < timeout <= MAX_TIMEOUT):
        return f"'timeout' must be a number of seconds between 0 and {MAX_TIMEOUT:g}"
    if not isinstance(entry.get("strict", False), bool):
        return "'strict' must be true or false"
    return ""


def matcher_pattern(matcher: str) -> re.Pattern[str] | None:
    """Claude Code's matchers: empty or `*` for every tool, else a name or a regular
    expression (`Edit|Write`, `mcp__.*`) that must match the whole tool name."""
    if matcher in ("", "*"):
        return None
    return re.compile(matcher)


def load_hooks(user_table: object, home: Path, root: Path, *, trusted: bool) -> HookSet:
    """The user's hooks (the config.toml table, then TETHER_HOME/settings.json), then the
    project's, which count only in a trusted folder (a cloned repository must not run
    commands of its choosing)."""
    found = HookSet()
    if user_table:
        found.add_table(user_table, str(home / "config.toml"))
    _add_json_file(found, home / USER_HOOKS_JSON, LoaderGate(home))
    project = root / PROJECT_HOOKS_FILE
    if trusted:
        _add_json_file(found, project, LoaderGate(home, project=root))
    elif project_declares_hooks(root):
        found.warnings.append(f"{project}: this folder is not trusted, so its hooks do not run")
    return found


def _add_json_file(found: HookSet, path: Path, gate: LoaderGate) -> None:
    loaded = read_json_file(path, reader=gate.read)
    if loaded.broken:
        found.warnings.append(f"{loaded.problem}; its hooks are ignored")
        return
    data = loaded.data
    if data is None:
        return
    if not isinstance(data, dict):
        found.warnings.append(f"{path}: expected a JSON object; its hooks are ignored")
        return
    if "hooks" in data:
        found.add_table(data["hooks"], str(path))


def project_declares_hooks(root: Path) -> bool:
    """Whether the project's hooks file holds any hooks (trusting the folder would run them)."""
    loaded = read_json_file(root / PROJECT_HOOKS_FILE)
    return isinstance(loaded.data, dict) and bool(loaded.data.get("hooks"))


def describe(spec: HookSpec) -> dict[str, Any]:
    """One hook for a listing: what runs, on what, from where."""
    return {"event": spec.event, "matcher": spec.matcher or "*", "command": spec.command,
            "timeout": spec.timeout, "strict": spec.strict, "source": spec.source}
