"""One history, four renderings: a recorded session replays under every provider as a
request that provider's API accepts; and through the real loop, with each provider
on the local fake server, reasoning stays out of the answer and a broken stream
leaves a history the next request can still send."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Reply
from pydantic import BaseModel

from tether.core.dispatch import Dispatcher
from tether.core.loop import Conversation, TurnLoop, TurnSettings
from tether.core.messages import Message, Text, Thinking, ToolCall, ToolResult
from tether.core.toolspec import Tool, ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.providers import anthropic, gemini, ollama, openai
from tether.providers.base import RequestOptions

MODEL = "m"


class PathArgs(BaseModel):
    filepath: str


def read_file(args: PathArgs, ctx: ToolContext) -> str:
    if args.filepath == "missing.txt":
        from tether.core.toolspec import ToolError

        raise ToolError("no such file: missing.txt")
    return f"contents of {args.filepath}"


READ = Tool("read_file", "Read a file.", PathArgs, read_file, reads=True, main_arg="filepath")


# ---------------------------------------------------------------- the recorded session


def recorded_session() -> list[Message]:
    """Saved as JSON (as a session file holds it) and read back."""
    messages = [
        Message.user("What do a.txt and missing.txt say?"),
        Message(
            "assistant",
            [
                Text("Reading both."),
                ToolCall("call_a", "read_file", {"filepath": "a.txt"}),
                ToolCall("call_b", "read_file", {"filepath": "missing.txt"}),
            ],
        ),
        Message(
            "tool",
            [
                ToolResult("call_a", "read_file", "contents of a.txt"),
                ToolResult("call_b", "read_file", "no such file: missing.txt", is_error=True),
            ],
        ),
        Message("assistant", [Text("a.txt has contents; missing.txt does not exist.")]),
        Message.user("Thanks. Anything else?"),
    ]
    saved = json.dumps([m.to_dict() for m in messages])
    return [Message.from_dict(d) for d in json.loads(saved)]


def validate_anthropic(body: dict[str, Any]) -> None:
    turns = body["messages"]
    assert turns and turns[0]["role"] == "user"
    for earlier, later in zip(turns, turns[1:], strict=False):
        assert earlier["role"] != later["role"], "roles must alternate"
    for i, turn in enumerate(turns):
        assert turn["content"], "no empty turns"
        for block in turn["content"]:
            if block["type"] == "text":
                assert block["text"].strip(), "no empty text blocks"
        uses = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
        if turn["role"] == "assistant" and uses:
            answer = turns[i + 1]
            assert answer["role"] == "user"
            kinds = [b["type"] for b in answer["content"]]
            results = [b["tool_use_id"] for b in answer["content"] if b["type"] == "tool_result"]
            assert results == uses, "each tool_use answered in the next message, in order"
            assert kinds[: len(results)] == ["tool_result"] * len(results), "results come first"
        if turn["role"] == "user":
            previous = turns[i - 1]["content"] if i else []
            called = {b["id"] for b in previous if b["type"] == "tool_use"}
            for block in turn["content"]:
                if block["type"] == "tool_result":
                    assert block["tool_use_id"] in called, "no result without its call"
    assert isinstance(body["max_tokens"], int)


def validate_gemini(body: dict[str, Any]) -> None:
    contents = body["contents"]
    assert contents and contents[0]["role"] == "user"
    for earlier, later in zip(contents, contents[1:], strict=False):
        assert earlier["role"] != later["role"], "roles must alternate"
    for i, content in enumerate(contents):
        assert content["role"] in ("user", "model") and content["parts"]
        for part in content["parts"]:
            assert part.get("text", "x").strip(), "no empty text parts"
        calls = [p["functionCall"]["name"] for p in content["parts"] if "functionCall" in p]
        responses = (
            [
                p["functionResponse"]["name"]
                for p in contents[i + 1]["parts"]
                if "functionResponse" in p
            ]
            if calls
            else []
        )
        assert responses == calls, "one functionResponse per functionCall, in order"
        if content["role"] == "user" and i:
            answered = [p for p in content["parts"] if "functionResponse" in p]
            asked = [p for p in contents[i - 1]["parts"] if "functionCall" in p]
            assert len(answered) in (0, len(asked))


def validate_openai(body: dict[str, Any]) -> None:
    messages = body["messages"]
    for i, message in enumerate(messages):
        ids = [c["id"] for c in message.get("tool_calls") or []]
        if ids:
            following = messages[i + 1 : i + 1 + len(ids)]
            assert [m["role"] for m in following] == ["tool"] * len(ids)
            assert [m["tool_call_id"] for m in following] == ids, "every call id answered"
        if message["role"] == "tool":
            earlier = [c["id"] for m in messages[:i] for c in m.get("tool_calls") or []]
            assert message["tool_call_id"] in earlier


def validate_ollama(body: dict[str, Any]) -> None:
    messages = body["messages"]
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if calls:
            following = messages[i + 1 : i + 1 + len(calls)]
            assert [m["role"] for m in following] == ["tool"] * len(calls)
            assert [m["tool_name"] for m in following] == [c["function"]["name"] for c in calls]
        if message["role"] == "tool":
            assert messages[i - 1]["role"] in ("assistant", "tool")


@dataclass(frozen=True)
class Wire:
    name: str
    encode: Callable[..., dict[str, Any]]
    validate: Callable[[dict[str, Any]], None]
    path: str
    make: Callable[[str], Any]
    drop_after: int
    """Frames to send before breaking a streamed "Partial answer..." (some text, not all)."""


WIRES = [
    Wire(
        "ollama",
        ollama.build_chat_body,
        validate_ollama,
        "/api/chat",
        lambda url: ollama.OllamaProvider(url),
        3,
    ),
    Wire(
        "openai",
        openai.build_chat_body,
        validate_openai,
        "/v1/chat/completions",
        lambda url: openai.OpenAIProvider(url + "/v1"),
        3,
    ),
    Wire(
        "anthropic",
        anthropic.build_chat_body,
        validate_anthropic,
        "/v1/messages",
        lambda url: anthropic.AnthropicProvider(url, api_key="sk-ant-test"),
        5,
    ),
    Wire(
        "gemini",
        gemini.build_chat_body,
        validate_gemini,
        f"/v1beta/models/{MODEL}:streamGenerateContent",
        lambda url: gemini.GeminiProvider(url, api_key="AIza-test"),
        3,
    ),
]
IDS = [w.name for w in WIRES]


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
def test_the_recorded_session_encodes_validly_for_every_provider(wire: Wire):
    history = [Message.system("Be brief."), *recorded_session()]
    body = wire.encode(history, [READ], RequestOptions(MODEL))
    wire.validate(body)
    text = json.dumps(body)
    assert "contents of a.txt" in text and "no such file: missing.txt" in text


def test_the_error_result_stays_an_error_in_every_rendering():
    history = recorded_session()
    anthropic_body = anthropic.build_chat_body(history, [READ], RequestOptions(MODEL))
    results = anthropic_body["messages"][2]["content"]
    assert [r.get("is_error", False) for r in results] == [False, True]
    gemini_body = gemini.build_chat_body(history, [READ], RequestOptions(MODEL))
    responses = [p["functionResponse"]["response"] for p in gemini_body["contents"][2]["parts"]]
    assert list(responses[1]) == ["error"] and list(responses[0]) == ["output"]
    openai_body = openai.build_chat_body(history, [READ], RequestOptions(MODEL))
    assert openai_body["messages"][3]["content"].startswith("Error: ")


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
def test_a_trimmed_or_foreign_history_is_repaired_into_a_valid_request(wire: Wire):
    if wire.name in ("ollama", "openai"):
        pytest.skip("chat-completions formats are encoded as recorded")
    history = [
        Message("tool", [ToolResult("call_gone", "read_file", "orphaned")]),  # its call was trimmed
        Message("assistant", [Thinking("hmm"), ToolCall("call_x", "read_file", {"filepath": "x"})]),
        Message.user("Stop, answer now."),  # the call never got its result
    ]
    wire.validate(wire.encode(history, None, RequestOptions(MODEL)))


# ---------------------------------------------------------------- through the loop


class ThinkingUI(SilentUI):
    def __init__(self) -> None:
        super().__init__()
        self.shown = ""
        self.thought = ""

    def text(self, delta: str) -> None:
        self.shown += delta

    def thinking(self, delta: str) -> None:
        self.thought += delta


def build_loop(provider: Any, tmp_path: Path, **settings: Any) -> tuple[TurnLoop, ThinkingUI]:
    ui = ThinkingUI()
    table = ToolTable([READ])
    dispatcher = Dispatcher(table, ToolContext(root=tmp_path), ui, default_timeout=5.0)
    loop = TurnLoop(
        provider,
        table,
        dispatcher,
        ui,
        TurnSettings(model=MODEL, **settings),
        system_prompt=lambda mode: "Be brief.",
    )
    return loop, ui


def assert_history_valid(messages: list[Message]) -> None:
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            answer = messages[i + 1]
            assert answer.role == "tool"
            assert [r.call_id for r in answer.tool_results] == [c.id for c in message.tool_calls]


def stored_text(conv: Conversation) -> str:
    return json.dumps([m.to_dict() for m in conv.messages])


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
async def test_think_tags_in_the_content_never_reach_the_answer_or_history(wire, tmp_path):
    reply = Reply(text="<think>secret plan: read nothing</think>The answer is 42.", chunk_size=3)
    with FakeServer([reply]) as server:
        provider = wire.make(server.url)
        loop, ui = build_loop(provider, tmp_path)
        conv = Conversation()
        result = await loop.run_turn(conv, "What is the answer?")
        await provider.aclose()
    assert result.text == "The answer is 42." and ui.shown == "The answer is 42."
    assert "secret plan" in ui.thought
    assert "secret plan" not in stored_text(conv) and "<think>" not in stored_text(conv)


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
@pytest.mark.parametrize("keep", [False, True])
async def test_native_reasoning_is_kept_only_when_asked_and_replays_fine(wire, keep, tmp_path):
    script = [
        Reply(thinking="I will read a.txt.", tool_calls=[("read_file", {"filepath": "a.txt"})]),
        Reply(thinking="Now I know.", text="It has contents."),
        Reply(text="Bye."),
    ]
    with FakeServer(script) as server:
        provider = wire.make(server.url)
        loop, ui = build_loop(provider, tmp_path, keep_thinking=keep)
        conv = Conversation()
        result = await loop.run_turn(conv, "Read a.txt")
        await loop.run_turn(conv, "Thanks")
        await provider.aclose()
        bodies = server.bodies(wire.path)
    assert result.text == "It has contents." and "Now I know." in ui.thought
    assert ("Now I know." in stored_text(conv)) is keep
    assert any(isinstance(p, Thinking) for m in conv.messages for p in m.parts) is keep
    for body in bodies:
        wire.validate(body)
        assert "Now I know." not in json.dumps(body)  # reasoning is never sent back


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
async def test_a_stream_that_drops_mid_answer_leaves_a_history_that_still_sends(wire, tmp_path):
    script = [
        Reply(
            tool_calls=[
                ("read_file", {"filepath": "a.txt"}),
                ("read_file", {"filepath": "missing.txt"}),
            ]
        ),
        Reply(text="Partial answer that breaks off here", chunk_size=4, drop_after=wire.drop_after),
        Reply(text="Recovered."),
    ]
    with FakeServer(script) as server:
        provider = wire.make(server.url)
        loop, ui = build_loop(provider, tmp_path)
        conv = Conversation()
        broken = await loop.run_turn(conv, "Read both files")
        assert broken.stop_reason == "error" and broken.text.startswith("Part")
        assert_history_valid(conv.messages)
        assert conv.messages[-1].role == "assistant" and conv.messages[-1].text.startswith("Part")
        results = conv.messages[2].tool_results
        assert [r.is_error for r in results] == [False, True]

        again = await loop.run_turn(conv, "Try again")
        await provider.aclose()
        bodies = server.bodies(wire.path)
    assert again.text == "Recovered." and again.stop_reason == "end_turn"
    assert_history_valid(conv.messages)
    wire.validate(bodies[-1])
    assert "Partial" in json.dumps(bodies[-1])


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
async def test_a_stream_that_drops_inside_a_tool_call_records_no_call(wire, tmp_path):
    if wire.name in ("ollama", "gemini"):
        pytest.skip("these formats send each call whole, never in pieces")
    script = [
        Reply(
            text="Let me read.",
            tool_calls=[("read_file", {"filepath": "a-long-name.txt"})],
            chunk_size=2,
            drop_after=wire.drop_after + 6,
        ),
        Reply(text="Fine."),
    ]
    with FakeServer(script) as server:
        provider = wire.make(server.url)
        loop, ui = build_loop(provider, tmp_path)
        conv = Conversation()
        broken = await loop.run_turn(conv, "Read it")
        await loop.run_turn(conv, "Go on")
        await provider.aclose()
        bodies = server.bodies(wire.path)
    assert broken.stop_reason == "error" and broken.evidence == []
    assert not any(m.tool_calls for m in conv.messages)
    wire.validate(bodies[-1])
