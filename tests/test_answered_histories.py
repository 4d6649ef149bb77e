"""AnsweredHistories: the cached walk gives what answered_history gives, as a history grows,
is repaired, or is replaced by another."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tether.core.messages import Message, Text, ToolCall, ToolResult
from tether.providers import _http
from tether.providers._http import AnsweredHistories, answered_history


def call(n: int) -> ToolCall:
    return ToolCall(id=f"c{n}", name="read_file", arguments={"filepath": f"f{n}.txt"})


def result(n: int) -> ToolResult:
    return ToolResult(call_id=f"c{n}", name="read_file", content=f"body {n}")


def dicts(messages: list[Message]) -> list[dict]:
    return [m.to_dict() for m in messages]


def test_a_growing_history_is_answered_as_the_full_walk_answers_it() -> None:
    answered = AnsweredHistories()
    history = [Message.user("read them")]
    for n in range(5):
        history += [Message("assistant", [call(n)]), Message("tool", [result(n)])]
        assert dicts(answered(history)) == dicts(answered_history(history))
    history.append(Message("assistant", [Text("done")]))
    assert dicts(answered(history)) == dicts(answered_history(history))


def test_a_history_that_needs_a_repair_is_repaired() -> None:
    answered = AnsweredHistories()
    history = [Message.user("go"), Message("assistant", [call(1)]), Message("tool", [result(1)])]
    answered(history)
    dangling = [*history, Message("assistant", [call(2)])]  # a cancelled turn's last call
    assert dicts(answered(dangling)) == dicts(answered_history(dangling))
    assert dangling[-1].tool_calls and answered(dangling)[-1].role == "tool"
    stray = [*history, Message("tool", [result(7)])]  # a result whose call is gone
    assert dicts(answered(stray)) == dicts(answered_history(stray))
    assert answered(stray)[-1].role == "user"
    swapped = [history[0], Message("assistant", [call(1), call(2)]), Message("tool", [result(2), result(1)])]
    assert dicts(answered(swapped)) == dicts(answered_history(swapped))


def test_a_changed_history_is_walked_again() -> None:
    answered = AnsweredHistories()
    history = [Message.user("go"), Message("assistant", [call(1)]), Message("tool", [result(1)])]
    answered(history)
    history[1] = Message("assistant", [call(1), call(2)])  # condensed or replaced: not seen before
    assert dicts(answered(history)) == dicts(answered_history(history))
    history[2].parts.append(result(3))  # the same message with another part
    assert dicts(answered(history)) == dicts(answered_history(history))


def test_a_request_note_that_is_gone_next_time_keeps_the_rest_seen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[int] = []
    walk = _http._answered_until

    def recorded(messages: Sequence[Message], start: int) -> int:
        walks.append(start)
        return walk(messages, start)

    monkeypatch.setattr(_http, "_answered_until", recorded)
    answered = AnsweredHistories()
    history = [Message.user("go"), Message("assistant", [call(1)]), Message("tool", [result(1)])]
    noted = [*history, Message.user("finish soon")]
    assert dicts(answered(noted)) == dicts(noted)
    grown = [*history, Message("assistant", [call(2)]), Message("tool", [result(2)]),
             Message.user("finish soon")]
    assert dicts(answered(grown)) == dicts(answered_history(grown))
    assert walks == [0, 3]  # the note is gone; the three before it are not walked again


def test_a_call_whose_result_is_gone_is_repaired_after_a_longer_history() -> None:
    answered = AnsweredHistories()
    history = [Message.user("go"), Message("assistant", [call(1)]), Message("tool", [result(1)])]
    answered(history)
    cut = history[:2]  # the same messages, the result gone
    assert dicts(answered(cut)) == dicts(answered_history(cut))
    assert answered(cut)[-1].role == "tool" and answered(cut)[-1].tool_results[0].is_error
    replaced = [*history[:2], Message("tool", [result(1)])]  # the result in a new message
    assert dicts(answered(replaced)) == dicts(answered_history(replaced))
