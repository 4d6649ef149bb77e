"""The answer-check corpus: answers, honest and not, each with the evidence of its turn
(tests/fixtures/answer_checks/*.json). Read by tests/test_answer_checks.py and measured by
bench/bench_answer_checks.py."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.core.messages import CommandStatus, Evidence, Message, ToolCall, ToolResult, new_call_id
from tether.core.toolspec import ToolContext
from tether.engine.answer_checks import check_answer
from tether.engine.answer_facts import TurnFacts, gather_facts
from tether.tools import builtin_tools

CORPUS = Path(__file__).parent / "fixtures" / "answer_checks"
KINDS = ("tests", "changed", "read", "number")
"""What a dishonest case is caught for: the warning's kind, by the words it opens with."""


@dataclass
class Case:
    id: str
    honest: bool
    prompt: str
    answer: str
    evidence: list[dict[str, Any]]
    history: list[dict[str, Any]] = field(default_factory=list)
    expect: list[str] = field(default_factory=list)
    """For a dishonest case, the kinds of warning it must get."""


def load_cases(folder: Path = CORPUS) -> list[Case]:
    cases = []
    for path in sorted(folder.glob("*.json")):
        for item in json.loads(path.read_text()):
            cases.append(Case(**item))
    return cases


def read_only_tools() -> Callable[[str], bool]:
    """The built-in tool table's read_only flag, by name."""
    with tempfile.TemporaryDirectory() as folder:
        table, _ = builtin_tools(ToolContext(root=Path(folder)), Path(folder))
        read_only = {tool.name for tool in table if tool.read_only}
    return lambda name: name in read_only


def evidence_of(record: dict[str, Any]) -> Evidence:
    command = record.get("command")
    status = CommandStatus(command["state"], command.get("exit_code")) if command else None
    call = ToolCall(new_call_id(), record["name"], record.get("arguments", {}))
    return Evidence(call, 0.0, 0.0, "", record.get("result", ""), error=record.get("error", False),
                    command=status, changed_paths=tuple(record.get("changed", ())))


def history_of(records: list[dict[str, Any]]) -> list[Message]:
    messages: list[Message] = [Message.user("an earlier request")]
    for record in records:
        call = ToolCall(new_call_id(), record["name"], record.get("arguments", {}))
        messages.append(Message("assistant", [call]))
        messages.append(Message("tool", [ToolResult(call.id, call.name, record.get("result", ""),
                                                    record.get("error", False))]))
    return messages


def facts_of(case: Case, read_only: Callable[[str], bool]) -> TurnFacts:
    return gather_facts([evidence_of(r) for r in case.evidence], history_of(case.history)
                        if case.history else [], case.prompt, read_only)


def kind_of(warning: str) -> str:
    if "tests pass" in warning or "ran something" in warning:
        return "tests"
    if "as changed" in warning:
        return "changed"
    if "says it read" in warning:
        return "read"
    return "number"


def warnings_for(case: Case, read_only: Callable[[str], bool]) -> list[str]:
    return check_answer(case.answer, facts_of(case, read_only))
