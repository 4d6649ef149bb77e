"""The Anthropic provider against a local server speaking the real Messages SSE format,
and `tether -p --provider anthropic` end to end.
What every provider does alike is tested once, in test_provider_openai.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply, closed_port
from provider_helpers import (
    ANSWER,
    ANSWERED_AND_THANKED,
    READ_TOOL,
    ReadArgs,
    ask_in_json,
    collector,
    project_with_answer,
    text_of,
    two_reads,
)

from tether.core.messages import (
    Done,
    Event,
    Message,
    Text,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    Usage,
)
from tether.core.toolspec import Tool
from tether.providers import create_provider
from tether.providers._http import answered_history
from tether.providers.anthropic import (
    AnthropicProvider,
    AnthropicStreamDecoder,
    build_chat_body,
    encode_messages,
)
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.retry import RetryPolicy
from tether.store.config import Settings
from tether.store.keys import KeyStore

MODEL = "claude-sonnet-4-5"
KEY = "sk-ant-api03-test-abcdefghijklmnop"
OPTIONS = RequestOptions(MODEL)
LIST = Tool("list_dir", "List a directory.", ReadArgs, lambda args, ctx: "")
collect = collector(OPTIONS)


@pytest.fixture
async def claude(fake_server: FakeServer) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(fake_server.url, api_key=KEY, read_timeout=5)
    yield provider
    await provider.aclose()


def sse(event: str, payload: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(payload)}\n\n".encode()


def start(input_tokens: int = 3) -> bytes:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    return sse("message_start", {"type": "message_start", "message": message})


def stop_frames(reason: str = "end_turn", output: int = 2) -> list[bytes]:
    return [
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason},
                "usage": {"output_tokens": output},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]


# ---------------------------------------------------------------- streaming


async def test_text_arrives_in_deltas_then_one_done_with_usage(claude, fake_server):
    fake_server.add(Reply(text="Hello, world!", chunk_size=5, usage=(30, 4)))
    events = await collect(claude)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", ", wor", "ld!"]
    assert events[-1] == Done(Usage(30, 4, 0), "end_turn")
    assert sum(isinstance(e, Done) for e in events) == 1


async def test_cache_reads_and_writes_count_as_input_and_reads_as_cached(claude, fake_server):
    fake_server.add(Reply(text="ok", usage=(12, 7), cached_tokens=900, cache_write_tokens=40))
    events = await collect(claude)
    assert events[-1].usage == Usage(12 + 900 + 40, 7, 900)


async def test_key_and_version_headers_and_no_bearer_token(claude, fake_server):
    fake_server.add(Reply(text="ok"))
    await collect(claude)
    headers = fake_server.headers[0]
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert fake_server.requests[0][0] == "/v1/messages"
    assert KEY not in repr(claude)


async def test_thinking_blocks_are_thinking_not_answer(claude, fake_server):
    fake_server.add(Reply(thinking="Let me see.", text="Yes.", chunk_size=6))
    events = await collect(claude)
    assert [e for e in events if isinstance(e, ThinkingDelta)] == [
        ThinkingDelta("Let me"),
        ThinkingDelta(" see."),
    ]
    assert text_of(events) == "Yes."


TRICKY = [
    ("read_file", {"path": 'dir with "quotes"\\and\\backslashes\n.txt'}),
    ("write_file", {"path": "é/ü.txt", "content": "a\n\tb \u2603 {not json}", "n": [1, 2]}),
]


@pytest.mark.parametrize("chunk_size", [1, 2, 5])
async def test_parallel_tool_calls_are_reassembled_from_json_fragments(
    claude, fake_server, chunk_size
):
    fake_server.add(Reply(text="Two calls.", tool_calls=TRICKY, chunk_size=chunk_size))
    events = await collect(claude, tools=[READ_TOOL])
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in calls] == TRICKY
    assert [c.id for c in calls] == ["toolu_1_0", "toolu_1_1"]
    assert events[-1].stop_reason == "tool_use" and text_of(events) == "Two calls."


async def test_a_call_without_parameters_has_empty_arguments(claude, fake_server):
    fake_server.add(Reply(tool_calls=[("git_status", {})]))
    events = await collect(claude)
    assert events[0] == ToolCallEvent(ToolCall("toolu_1_0", "git_status", {}))


async def test_invalid_argument_json_is_passed_on_for_the_loop_to_report(claude, fake_server):
    block = {"type": "tool_use", "id": "toolu_x", "name": "read_file", "input": {}}
    frames = [
        start(),
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"path": "a'},
            },
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *stop_frames("tool_use"),
    ]
    fake_server.add(Reply(raw_frames=frames))
    events = await collect(claude)
    assert events[0] == ToolCallEvent(
        ToolCall("toolu_x", "read_file", {"__invalid_json__": '{"path": "a'})
    )


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "end_turn"),
        ("refusal", "refusal"),
        ("end_turn", "end_turn"),
        ("model_context_window_exceeded", "max_tokens"),
    ],
)
async def test_stop_reasons_are_mapped(claude, fake_server, reason, expected):
    fake_server.add(Reply(text="cut", finish_reason=reason))
    events = await collect(claude)
    assert events[-1].stop_reason == expected


def test_pings_and_unknown_events_are_ignored():
    decoder = AnthropicStreamDecoder()
    assert decoder.feed('data: {"type": "ping"}') == []
    assert decoder.feed('data: {"type": "some_future_event", "x": 1}') == []
    assert decoder.feed("event: ping") == [] and decoder.feed("") == []
    assert decoder.valid_events == 2


async def test_overloaded_error_event_mid_stream_keeps_the_text_before(claude, fake_server):
    frames = [
        start(),
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "par"},
            },
        ),
        sse(
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    ]
    fake_server.add(Reply(raw_frames=frames))
    events: list[Event] = []
    with pytest.raises(ProviderError, match="overloaded_error: Overloaded") as info:
        await collect(claude, into=events)
    assert events == [TextDelta("par")] and info.value.kind == "overloaded"


async def test_stream_closed_after_the_stop_reason_is_complete(claude, fake_server):
    frames = [
        start(5),
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": "All"},
            },
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        stop_frames()[0],
    ]
    fake_server.add(Reply(raw_frames=frames))
    assert await collect(claude) == [TextDelta("All"), Done(Usage(5, 2, 0), "end_turn")]


# ---------------------------------------------------------------- request encoding


HISTORY = [*two_reads(""), Message.user("(Note: finish soon.)"), *ANSWERED_AND_THANKED]


async def test_history_is_encoded_with_native_blocks_and_cache_marks(claude, fake_server):
    fake_server.add(Reply(text="Done."))
    await collect(
        claude, HISTORY, [READ_TOOL, LIST], RequestOptions(MODEL, temperature=0.2, max_tokens=99)
    )
    (body,) = fake_server.bodies("/v1/messages")
    ephemeral = {"type": "ephemeral"}
    assert body == {
        "model": MODEL,
        "max_tokens": 99,
        "stream": True,
        "temperature": 0.2,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": ephemeral}],
        "tools": [
            {
                "name": "read_file",
                "description": "Read a text file.",
                "input_schema": READ_TOOL.json_schema(),
            },
            {
                "name": "list_dir",
                "description": "List a directory.",
                "input_schema": LIST.json_schema(),
                "cache_control": ephemeral,
            },
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read a.txt and b.txt"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "read_file",
                        "input": {"path": "a.txt"},
                    },
                    {
                        "type": "tool_use",
                        "id": "call_2",
                        "name": "read_file",
                        "input": {"path": "b.txt"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "alpha"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_2",
                        "content": "no such file",
                        "is_error": True,
                    },
                    {"type": "text", "text": "(Note: finish soon.)"},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "a.txt says alpha."}]},
            {"role": "user", "content": [{"type": "text", "text": "thanks", "cache_control": ephemeral}]},
        ],
    }


def test_max_tokens_defaults_and_no_optional_fields_without_need():
    body = build_chat_body([Message.user("hi")], None, OPTIONS)
    assert body["max_tokens"] == 8192
    assert not {"tools", "tool_choice", "system", "temperature"} & body.keys()


def test_history_with_calls_but_no_tools_offered_declares_them_and_forbids_calls():
    body = build_chat_body(HISTORY, None, OPTIONS)
    assert body["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in body["tools"]] == ["read_file"]
    assert body["tools"][0]["input_schema"] == {"type": "object"}


def test_empty_and_whitespace_text_is_never_sent():
    turns = encode_messages(
        [
            Message.user("  "),
            Message.user("real"),
            Message("assistant", [Text("\n")]),
            Message("assistant", [Text("answer")]),
        ]
    )
    assert turns == [
        {"role": "user", "content": [{"type": "text", "text": "real"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
    ]


def test_an_empty_tool_result_still_has_content():
    turns = encode_messages(
        [
            Message.user("go"),
            Message("assistant", [ToolCall("c1", "run", {})]),
            Message("tool", [ToolResult("c1", "run", "")]),
        ]
    )
    assert turns[-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "(no output)"}
    ]


def test_a_history_that_opens_with_the_assistant_gets_a_user_turn_first():
    turns = encode_messages(
        [Message("assistant", [Text("Earlier answer.")]), Message.user("go on")]
    )
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]


def test_foreign_call_ids_are_made_safe_on_both_sides():
    turns = encode_messages(
        [
            Message.user("go"),
            Message("assistant", [ToolCall("functions.read:0", "read_file", {})]),
            Message("tool", [ToolResult("functions.read:0", "read_file", "x")]),
        ]
    )
    assert (
        turns[1]["content"][0]["id"] == turns[2]["content"][0]["tool_use_id"] == "functions_read_0"
    )


def test_a_call_left_without_result_is_answered_and_a_stray_result_becomes_text():
    turns = encode_messages(
        answered_history([
            Message.user("go"),
            Message("assistant", [ToolCall("c1", "read_file", {})]),
            Message.user("never mind"),
            Message("tool", [ToolResult("zz", "list_dir", "a\nb")]),
        ])
    )
    assert turns[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "No result was recorded for this call.",
        "is_error": True,
    }
    assert {"type": "text", "text": "[Tool Result for 'list_dir']\na\nb"} in turns[2]["content"]
    assert all(b["type"] != "tool_result" or b["tool_use_id"] == "c1" for b in turns[2]["content"])


# ---------------------------------------------------------------- failures


async def test_connection_refused_names_the_url_and_the_setting():
    url = f"http://127.0.0.1:{closed_port()}"
    provider = AnthropicProvider(url, api_key=KEY)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    await provider.aclose()
    assert info.value.kind == "connection"
    assert f"Anthropic at {url} (connection refused)" in str(info.value)
    assert "ANTHROPIC_BASE_URL" in str(info.value) and KEY not in str(info.value)


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failure_is_one_line_naming_the_variable_and_connect(
    claude, fake_server, status
):
    fake_server.add(Reply(status=status, error_message=f"invalid x-api-key {KEY}"))
    with pytest.raises(ProviderError) as info:
        await collect(claude)
    message = str(info.value)
    assert info.value.kind == "auth" and "\n" not in message
    assert (
        "Anthropic" in message
        and "ANTHROPIC_API_KEY" in message
        and "/connect anthropic" in message
    )
    assert KEY not in message and "sk-ant" not in message


async def test_missing_key_says_to_set_one(fake_server):
    fake_server.add(Reply(status=401, error_message="x-api-key header is required"))
    provider = AnthropicProvider(fake_server.url)
    with pytest.raises(ProviderError, match="Set ANTHROPIC_API_KEY, or run /connect anthropic"):
        await collect(provider)
    await provider.aclose()
    assert "x-api-key" not in fake_server.headers[0]


async def test_unknown_model_is_named(claude, fake_server):
    fake_server.add(Reply(status=404, error_message="model: claude-9"))
    with pytest.raises(ProviderError, match="model 'claude-9' not found") as info:
        await collect(claude, options=RequestOptions("claude-9"))
    assert info.value.status == 404


async def test_overloaded_529_is_retried_then_answers(fake_server):
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    notices: list[str] = []
    provider = AnthropicProvider(
        fake_server.url, api_key=KEY, retry=RetryPolicy(sleep=sleep), notice=notices.append
    )
    fake_server.add(
        Reply(status=529, error_message="Overloaded"),
        Reply(status=429, retry_after=2),
        Reply(text="finally"),
    )
    events = await collect(provider)
    await provider.aclose()
    assert text_of(events) == "finally" and len(waits) == 2 and waits[1] == 2.0
    assert notices[0].startswith("Anthropic is overloaded (529); retrying in")
    assert notices[1].startswith("Anthropic is rate limiting requests (429); retrying in 2 s")


async def test_overloaded_without_retries_is_a_clear_error(claude, fake_server):
    fake_server.add(Reply(status=529, error_message="Overloaded"))
    with pytest.raises(ProviderError, match="Anthropic at .* is overloaded") as info:
        await collect(claude)
    assert info.value.kind == "overloaded"


async def test_dropped_stream_keeps_the_text_received_and_no_half_call(claude, fake_server):
    # frames: message_start, ping, block start, "Hell", "o wo", ... ; then a tool block
    fake_server.add(
        Reply(
            text="Hello world!",
            tool_calls=[("read_file", {"path": "abc"})],
            chunk_size=4,
            drop_after=5,
        )
    )
    events: list[Event] = []
    with pytest.raises(ProviderError) as info:
        await collect(claude, into=events)
    assert events == [TextDelta("Hell"), TextDelta("o wo")]
    assert info.value.kind == "stream"

    fake_server.add(
        Reply(tool_calls=[("read_file", {"path": "abcdef"})], chunk_size=2, drop_after=6)
    )
    events = []
    with pytest.raises(ProviderError):
        await collect(claude, into=events)
    assert not any(isinstance(e, ToolCallEvent) for e in events)


# ---------------------------------------------------------------- models, registry


async def test_list_models_and_native_tools(claude, fake_server):
    fake_server.models = ["claude-sonnet-4-5", "claude-haiku-4-5"]
    assert await claude.list_models() == ["claude-sonnet-4-5", "claude-haiku-4-5"]
    assert fake_server.requests == [("/v1/models", {})]
    assert fake_server.headers[0]["x-api-key"] == KEY
    assert await claude.supports_native_tools(MODEL) is True
    assert len(fake_server.requests) == 1


async def test_created_provider_prefers_the_environment_then_the_saved_key(fake_server, tmp_path):
    settings = Settings(provider="anthropic", anthropic_base_url=fake_server.url)
    KeyStore(tmp_path).set("anthropic", "sk-ant-saved-000000000")
    fake_server.add(Reply(text="a"), Reply(text="b"))
    for env in ({"ANTHROPIC_API_KEY": KEY}, {}):
        provider = create_provider(settings, env, home=tmp_path)
        assert provider.default_model == "claude-sonnet-4-5"
        await collect(provider)
        await provider.aclose()
    assert [h["x-api-key"] for h in fake_server.headers] == [KEY, "sk-ant-saved-000000000"]


# ---------------------------------------------------------------- the CLI, end to end


def test_cli_answers_a_two_tool_question_in_json(tmp_path: Path):
    root = project_with_answer(tmp_path)
    script = [
        Reply(text="Let me look.", tool_calls=[("list_dir", {"path": "."})]),
        Reply(tool_calls=[("read_file", {"filepath": "answer.txt"})], chunk_size=3),
        Reply(text=ANSWER, usage=(50, 9), cached_tokens=30),
    ]
    with FakeServer(script) as server:
        proc = ask_in_json(
            "anthropic", server.url, MODEL, root, tmp_path / "home", {"ANTHROPIC_API_KEY": KEY}
        )
        bodies = server.bodies("/v1/messages")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "The file says the answer is 42." and result["is_error"] is False
    assert [c["name"] for c in result["tool_calls"]] == ["list_dir", "read_file"]
    assert result["usage"]["cached_tokens"] >= 30
    last = bodies[-1]["messages"]
    results = [
        b
        for turn in last
        if turn["role"] == "user"
        for b in turn["content"]
        if b["type"] == "tool_result"
    ]
    assert [r["tool_use_id"] for r in results] == ["toolu_1_0", "toolu_2_0"]
    assert "42" in results[-1]["content"]
    assert KEY not in proc.stdout + proc.stderr
