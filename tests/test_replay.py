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
from fakeserver import (
    FakeServer,
    Reply,
    anthropic_history_problem,
    gemini_history_problem,
    ollama_history_problem,
    openai_history_problem,
)
from pydantic import BaseModel

from tether.core.messages import Message, Text, TextDelta, Thinking, ToolCall, ToolResult
from tether.core.toolspec import Tool, ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import Dispatcher
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.providers import anthropic, gemini, ollama, openai
from tether.providers._http import MISSING_RESULT, answered_history
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
    assert not anthropic_history_problem(body)
    assert isinstance(body["max_tokens"], int)


def validate_gemini(body: dict[str, Any]) -> None:
    assert not gemini_history_problem(body)


def validate_openai(body: dict[str, Any]) -> None:
    assert not openai_history_problem(body)


def validate_ollama(body: dict[str, Any]) -> None:
    assert not ollama_history_problem(body)


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


def broken_history() -> list[Message]:
    return [
        Message("tool", [ToolResult("call_gone", "read_file", "orphaned")]),  # its call was trimmed
        Message("assistant", [Thinking("hmm"), ToolCall("call_x", "read_file", {"filepath": "x"})]),
        Message.user("Stop, answer now."),  # the call never got its result
    ]


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
def test_a_trimmed_or_foreign_history_is_repaired_into_a_valid_request(wire: Wire):
    with pytest.raises(AssertionError):  # as recorded, every API would refuse it
        wire.validate(wire.encode(broken_history(), None, RequestOptions(MODEL)))
    wire.validate(wire.encode(answered_history(broken_history()), None, RequestOptions(MODEL)))


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
async def test_every_provider_repairs_the_history_it_sends(wire: Wire):
    """Not only the encoders of alternating turns: each provider's stream repairs first."""
    with FakeServer([Reply(text="Answered.")]) as server:
        provider = wire.make(server.url)
        events = [e async for e in provider.stream(broken_history(), None, RequestOptions(MODEL))]
        await provider.aclose()
        (body,) = server.bodies(wire.path)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Answered."
    wire.validate(body)
    assert MISSING_RESULT in json.dumps(body) and "orphaned" in json.dumps(body)


def cancelled_session() -> list[Message]:
    """A session saved while a call was still running (an older tether, a killed process):
    the call is stored, its result never was."""
    messages = [
        Message.user("Run the tests."),
        Message("assistant", [ToolCall("call_run", "read_file", {"filepath": "a.txt"})]),
    ]
    saved = json.dumps([m.to_dict() for m in messages])
    return [Message.from_dict(d) for d in json.loads(saved)]


@pytest.mark.parametrize("wire", WIRES, ids=IDS)
async def test_a_cancelled_calls_history_is_accepted_by_every_provider(wire: Wire, tmp_path):
    """Regression: the OpenAI and Ollama encoders sent a dangling call as it was, and a real
    OpenAI-compatible API refuses the next request (so does the fake server, in each format)."""
    with FakeServer([Reply(text="Picking up again.")]) as server:
        provider = wire.make(server.url)
        loop, _ = build_loop(provider, tmp_path)
        conv = Conversation(messages=cancelled_session())
        result = await loop.run_turn(conv, "Go on.")
        await provider.aclose()
        (body,) = server.bodies(wire.path)
    assert result.stop_reason == "end_turn" and result.text == "Picking up again.", result.error
    wire.validate(body)
    assert MISSING_RESULT in json.dumps(body)


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
