"""SeenPrefix: what was worked out for the messages sent last is kept exactly while a new
history starts with them, and the token estimate and wire encoding built on it give what
working everything out afresh gives, as a history grows, is trimmed or is replaced."""

from __future__ import annotations

import json

from tether.core.history_prefix import SeenPrefix
from tether.core.messages import Message, Text, ToolCall, ToolResult
from tether.engine.context import TokenEstimator
from tether.providers import openai
from tether.providers.wire import WireCache


def session(turns: int) -> list[Message]:
    messages = [Message.user("read them")]
    for n in range(turns):
        call = ToolCall(f"c{n}", "read_file", {"filepath": f"f{n}.txt"})
        messages += [Message("assistant", [call]),
                     Message("tool", [ToolResult(call.id, call.name, f"body {n}\n" * (n + 1))])]
    return messages


def seen(messages: list[Message]) -> SeenPrefix[str]:
    prefix: SeenPrefix[str] = SeenPrefix()
    for message in messages:
        prefix.add(message, message.role)
    return prefix


def test_a_history_that_grew_keeps_everything_seen() -> None:
    messages = session(3)
    prefix = seen(messages)
    assert prefix.follow([*messages, Message.user("more")]) == len(messages)
    assert prefix.values == [m.role for m in messages]


def test_a_replaced_message_ends_what_is_kept_there() -> None:
    messages = session(3)
    prefix = seen(messages)
    changed = [*messages[:2], Message("tool", list(messages[2].parts)), *messages[3:]]
    assert prefix.follow(changed) == 2
    assert len(prefix) == 2 and prefix.values == ["user", "assistant"]


def test_a_message_whose_parts_changed_ends_what_is_kept_there() -> None:
    messages = session(3)
    prefix = seen(messages)
    messages[3].parts.append(Text("and more"))  # gained a part
    assert prefix.follow(messages) == 3
    prefix = seen(messages)
    messages[1].parts = list(messages[1].parts)  # the same parts in another list
    assert prefix.follow(messages) == 1


def test_a_shorter_or_other_history_keeps_only_what_it_starts_with() -> None:
    messages = session(3)
    prefix = seen(messages)
    assert prefix.follow(messages[:4]) == 4
    assert prefix.follow(session(3)) == 0
    assert prefix.first is None and prefix.follow([]) == 0


def fresh_cost(messages: list[Message]) -> float:
    fresh = TokenEstimator()
    return sum(fresh.message_cost(m) for m in messages)


def test_the_running_estimate_is_the_fresh_estimate_request_after_request() -> None:
    estimator = TokenEstimator()
    whole = session(8)
    system = Message.system("you are tether")
    for turns in range(1, 9):  # the history and the request sent, alternately, as a turn does
        history = whole[:1 + 2 * turns]
        request = [system, *history]
        assert estimator.messages_cost(history) == fresh_cost(history)
        assert estimator.messages_cost(request) == fresh_cost(request)
    trimmed = [whole[0], Message("assistant", [Text("summary")]), *whole[9:]]
    assert estimator.messages_cost(trimmed) == fresh_cost(trimmed)
    whole[5].parts.append(Text("a late part"))
    assert estimator.messages_cost(whole) == fresh_cost(whole)


def test_the_cached_wire_json_follows_a_trimmed_history() -> None:
    wire = WireCache(openai.encode_message)
    whole = session(6)
    wire.messages(whole)
    trimmed = [whole[0], *whole[5:]]
    fresh = [entry for m in trimmed for entry in openai.encode_message(m)]
    assert json.loads(wire.messages(trimmed)) == fresh
    regrown = [*trimmed, Message.user("again")]
    fresh.append({"role": "user", "content": "again"})
    assert json.loads(wire.messages(regrown)) == fresh
