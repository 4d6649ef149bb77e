"""Request bodies encoded once: the cached encoding sends exactly what encoding afresh sends."""

from __future__ import annotations

import json
from pathlib import Path

from tether.core.messages import Message, Text, ToolCall, ToolResult
from tether.core.toolspec import ToolContext
from tether.providers import ollama, openai
from tether.providers.base import RequestOptions
from tether.providers.wire import RawJson, WireCache, encode_body
from tether.tools import builtin_tools

OPTIONS = RequestOptions(model="m")


def history(turns: int) -> list[Message]:
    messages = [Message.user("read it")]
    for i in range(turns):
        call = ToolCall(f"c{i}", "read_file", {"filepath": f"f{i}.txt"})
        messages += [Message("assistant", [Text("looking"), call]),
                     Message("tool", [ToolResult(call.id, call.name, f"line {i}\n", i % 2 == 1)])]
    return messages


def test_the_cached_body_is_the_fresh_body_request_after_request(tmp_path: Path) -> None:
    tools = list(builtin_tools(ToolContext(root=tmp_path))[0])
    whole = history(5)
    for module in (openai, ollama):
        wire = WireCache(module.encode_message)
        for turns in (1, 2, 5):  # the history grows as a session's does
            messages = whole[:1 + 2 * turns]
            fresh = json.loads(encode_body(module.build_chat_body(messages, tools, OPTIONS)))
            cached_body = module.build_chat_body(messages, tools, OPTIONS, wire=wire)
            assert isinstance(cached_body["messages"], RawJson)
            assert json.loads(encode_body(cached_body)) == fresh


def test_an_old_message_is_encoded_once_and_a_changed_one_again() -> None:
    encoded: list[Message] = []

    def counting(message: Message) -> list[dict]:
        encoded.append(message)
        return openai.encode_message(message)

    wire = WireCache(counting)
    messages = history(3)
    wire.messages(messages)
    assert len(encoded) == len(messages)
    encoded.clear()
    grown = [*messages, Message.user("and now?")]
    wire.messages(grown)
    assert encoded == [grown[-1]]
    grown[-1].parts.append(Text(" really"))  # a message that gained a part is encoded again
    encoded.clear()
    assert "and now? really" in json.loads(wire.messages(grown))[-1]["content"]
    assert encoded == [grown[-1]]


def test_a_lone_surrogate_is_cleaned_in_a_cached_message_and_in_the_rest() -> None:
    wire = WireCache(openai.encode_message)
    body = {"model": "m\udcff", "messages": wire.messages([Message.user("bad \udcff byte")])}
    sent = json.loads(encode_body(body).decode("utf-8"))
    assert sent == {"model": "m\\xff", "messages": [{"role": "user", "content": "bad \\xff byte"}]}
