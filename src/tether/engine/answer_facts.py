"""What a turn really did, gathered for the answer checks (answer_checks.py): the commands
and how they ended, the paths tools changed, everything tools were given and gave back.

Read from the records alone (the evidence and the history's calls and results), never
from what the model says about them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..core.messages import Evidence, Message, ToolCall, ToolResult
from .commands_ran import RanCommand, commands_run

ATTACHED_FILE = re.compile(r'<file path="([^"]+)">')
"""How the app attaches an @mentioned file to the prompt (ui/terminal/prompt.py)."""
SUBAGENT_TOOLS = ("spawn_agent", "spawn_agents")
READ_ONLY_COMMANDS = re.compile(
    r"^\s*(?:(?:python3?|uv run|poetry run)\s+-m\s+)?(?:pytest|ls|cat|grep|rg|head|tail|wc|pwd|cd|find|sed|sort|uniq|cut|jq|"
    r"which|tree|stat|file|du|df|diff|echo|printf|true|mypy|flake8|pylint|tox|nox|"
    r"(?:npm|yarn|pnpm)\s+(?:run\s+)?test|(?:cargo|go)\s+(?:test|check|vet)|make\s+(?:test|check)|"
    r"ruff\s+check(?!.*--fix)|git\s+(?:status|diff|log|show|branch|rev-parse|ls-files|blame))\b"
)
"""Commands that change no file of the project (a test run writes caches, not sources)."""
WRITES = re.compile(r"(?<![0-9&])>(?!\s*/dev/null|&)|\btee\b|\s-i\b|--fix\b|--write\b|-delete\b|-exec\b")


@dataclass
class TurnFacts:
    """The evidence an answer is checked against."""

    commands: list[RanCommand] = field(default_factory=list)
    """This turn's commands, in order, with how each ended."""
    earlier_commands: bool = False
    """Commands ran in an earlier turn of the conversation (their outcome is not known here)."""
    changed: list[str] = field(default_factory=list)
    """Paths file tools changed (this turn and earlier ones)."""
    unknown_changes: bool = False
    """Something ran that may have changed files without saying which (a command that is not
    read-only, a tool with side effects that reports no paths)."""
    touched_text: list[str] = field(default_factory=list)
    """Every call's arguments and every result's text: a file named in them was seen."""
    results: list[str] = field(default_factory=list)
    """Every tool result's text, this turn's and earlier ones."""
    prompt: str = ""
    attached: list[str] = field(default_factory=list)
    delegated: bool = False
    """A sub-agent worked in this turn: what it ran is not in these records."""
    from_files: bool = False
    """The turn answered from reads alone: tools ran, all read-only, none failed them all."""


def gather_facts(
    evidence: Sequence[Evidence], earlier: Sequence[Message], prompt: str,
    read_only: Callable[[str], bool],
) -> TurnFacts:
    """The facts of one turn: its `evidence`, the `earlier` history, the user's `prompt`;
    `read_only(name)` says whether a tool has no side effects (the tool table's flag)."""
    facts = TurnFacts(prompt=prompt, attached=ATTACHED_FILE.findall(prompt))
    facts.commands = commands_run(evidence)
    _add_history(facts, earlier, read_only)
    for record in evidence:
        _add_call(facts, record.call, record.result, record.error, read_only, record.changed_paths)
    facts.delegated = any(r.call.name in SUBAGENT_TOOLS for r in evidence)
    facts.from_files = bool(evidence) and all(read_only(r.call.name) for r in evidence) and not all(
        r.error for r in evidence)
    return facts


def _add_history(facts: TurnFacts, earlier: Sequence[Message], read_only: Callable[[str], bool]) -> None:
    calls: dict[str, ToolCall] = {}
    for message in earlier:
        for part in message.parts:
            if isinstance(part, ToolCall):
                calls[part.id] = part
            elif isinstance(part, ToolResult) and part.call_id in calls:
                call = calls[part.call_id]
                _add_call(facts, call, part.content, part.is_error, read_only, ())
                facts.earlier_commands |= "command" in call.arguments


def _add_call(facts: TurnFacts, call: ToolCall, result: str, error: bool,
              read_only: Callable[[str], bool], changed: Sequence[str]) -> None:
    facts.touched_text.append(_arguments_text(call))
    facts.touched_text.append(result)
    facts.results.append(result)
    if error:
        return
    facts.changed.extend(changed)
    if changed or read_only(call.name):
        return
    command = call.arguments.get("command")
    if isinstance(command, str) and command_is_read_only(command):
        return
    facts.unknown_changes = True


def command_is_read_only(command: str) -> bool:
    """Every part of `command` is a command from READ_ONLY_COMMANDS, with no redirect into a file."""
    parts = [p for p in re.split(r"&&|\|\||;|\||\n", command) if p.strip()]
    return bool(parts) and all(READ_ONLY_COMMANDS.match(p) and not WRITES.search(p) for p in parts)


def _arguments_text(call: ToolCall) -> str:
    return " ".join(str(value) for value in call.arguments.values())
