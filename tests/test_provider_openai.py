"""The OpenAI-compatible provider against a local server speaking the real SSE
wire format, plus the shared wire helpers and what every provider does alike."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator

import httpx
import pytest
from fakeserver import FakeServer, Reply, closed_port
from provider_helpers import (
    ANSWERED_AND_THANKED,
    READ_TOOL,
    collector,
    opened,
    text_of,
    two_reads,
)

from tether.core.messages import (
    Done,
    Event,
    Message,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
)
from tether.providers import create_provider
from tether.providers._common import read_past_the_end
from tether.providers._http import (
    certificates_for,
    connect_failure_reason,
    parse_tool_arguments,
    redact,
)
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.openai import OpenAIProvider, OpenAIStreamDecoder, ToolCallAssembler
from tether.store.config import Settings

MODEL = "gpt-4o-mini"
KEY = "sk-test-abcdefghijklmnop"
OPTIONS = RequestOptions(MODEL)
collect = collector(OPTIONS)


@pytest.fixture
async def openai(fake_server: FakeServer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(fake_server.url + "/v1", api_key=KEY, read_timeout=5)
    yield provider
    await provider.aclose()


def sse(payload: dict | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


# ---------------------------------------------------------------- streaming


async def test_text_arrives_in_several_deltas_then_one_done(openai, fake_server):
    fake_server.add(Reply(text="Hello, world!", chunk_size=5, usage=(30, 4), cached_tokens=12))
    events = await collect(openai)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", ", wor", "ld!"]
    assert events[-1] == Done(Usage(30, 4, 12), "end_turn")
    assert sum(isinstance(e, Done) for e in events) == 1


async def test_key_is_sent_as_a_bearer_token(openai, fake_server):
    fake_server.add(Reply(text="ok"))
    await collect(openai)
    assert fake_server.headers[0]["authorization"] == f"Bearer {KEY}"


async def test_no_key_sends_no_authorization_header(fake_server):
    fake_server.add(Reply(text="ok"))
    provider = OpenAIProvider(fake_server.url + "/v1/")
    await collect(provider)
    await provider.aclose()
    assert "authorization" not in fake_server.headers[0]
    assert fake_server.requests[0][0] == "/v1/chat/completions"


async def test_reasoning_content_becomes_thinking(openai, fake_server):
    fake_server.add(Reply(thinking="Consider it.", text="Yes.", chunk_size=6))
    events = await collect(openai)
    assert events[:2] == [ThinkingDelta("Consid"), ThinkingDelta("er it.")]
    assert text_of(events) == "Yes."


def test_reasoning_field_also_becomes_thinking():
    decoder = OpenAIStreamDecoder()
    line = sse({"choices": [{"index": 0, "delta": {"reasoning": "hmm"}}]}).decode().strip()
    assert decoder.feed(line) == [ThinkingDelta("hmm")]


TRICKY_ARGUMENTS = [
    ("read_file", {"path": 'dir with "quotes"\\and\\backslashes\n.txt'}),
    ("write_file", {"path": "é/ü.txt", "content": "line1\n\tline2 \u2603 {not json}", "n": [1, 2]}),
]


@pytest.mark.parametrize("chunk_size", [1, 2, 3])
@pytest.mark.parametrize("interleave", [False, True])
async def test_parallel_tool_calls_are_reassembled_from_fragments(
    openai, fake_server, chunk_size, interleave
):
    fake_server.add(
        Reply(
            text="Two calls.",
            tool_calls=TRICKY_ARGUMENTS,
            chunk_size=chunk_size,
            interleave_tool_calls=interleave,
        )
    )
    events = await collect(openai, tools=[READ_TOOL])
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in calls] == TRICKY_ARGUMENTS
    assert [c.id for c in calls] == ["call_1_0", "call_1_1"]  # the server's ids are kept
    assert events[-1].stop_reason == "tool_use"
    # calls are complete before Done and after all the text
    assert isinstance(events[-2], ToolCallEvent) and text_of(events) == "Two calls."


async def test_invalid_argument_json_is_passed_on_for_the_loop_to_report(openai, fake_server):
    frames = [
        sse(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_a",
                                    "type": "function",
                                    "function": {"name": "read_file", "arguments": '{"path": "a'},
                                }
                            ]
                        },
                    }
                ]
            }
        ),
        sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        sse("[DONE]"),
    ]
    fake_server.add(Reply(raw_frames=frames))
    events = await collect(openai)
    assert events[0] == ToolCallEvent(
        ToolCall("call_a", "read_file", {"__invalid_json__": '{"path": "a'})
    )


async def test_stream_closed_without_done_marker_after_finish_is_complete(openai, fake_server):
    frames = [
        sse({"choices": [{"index": 0, "delta": {"content": "All"}}]}),
        sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]
    fake_server.add(Reply(raw_frames=frames))
    events = await collect(openai)
    assert events == [TextDelta("All"), Done(Usage(), "end_turn")]


# ---------------------------------------------------------------- assembling fragments


def test_assembler_without_index_or_id_uses_fresh_ids():
    assembler = ToolCallAssembler()
    assembler.add({"function": {"name": "a", "arguments": '{"x"'}})
    assembler.add({"function": {"arguments": ": 1}"}})
    assembler.add({"id": "call_b", "function": {"name": "b", "arguments": ""}})
    first, second = assembler.complete_calls()
    assert (first.name, first.arguments) == ("a", {"x": 1})
    assert first.id.startswith("call_") and len(first.id) > 10
    assert second == ToolCall("call_b", "b", {})


def test_assembler_keeps_first_id_and_name_when_servers_repeat_them():
    assembler = ToolCallAssembler()
    assembler.add({"index": 0, "id": "call_1", "function": {"name": "grep", "arguments": "{"}})
    assembler.add({"index": 0, "id": "call_1", "function": {"name": "grep", "arguments": "}"}})
    assert assembler.complete_calls() == [ToolCall("call_1", "grep", {})]


# ---------------------------------------------------------------- request encoding


async def test_history_with_tool_calls_and_results_is_encoded_natively(openai, fake_server):
    history = [*two_reads(None), *ANSWERED_AND_THANKED]
    fake_server.add(Reply(text="Done."))
    await collect(
        openai, history, [READ_TOOL], RequestOptions(MODEL, temperature=0.0, max_tokens=99)
    )
    (body,) = fake_server.bodies("/v1/chat/completions")
    assert body == {
        "model": MODEL,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Read a.txt and b.txt"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "b.txt"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "alpha"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
            {"role": "assistant", "content": "a.txt says alpha."},
            {"role": "user", "content": "thanks"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a text file.",
                    "parameters": READ_TOOL.json_schema(),
                },
            }
        ],
        "temperature": 0.0,
        "max_tokens": 99,
    }


async def test_no_tools_or_sampling_fields_when_not_given(openai, fake_server):
    fake_server.add(Reply(text="ok"))
    await collect(openai)
    body = fake_server.bodies("/v1/chat/completions")[0]
    assert not {"tools", "temperature", "max_tokens"} & body.keys()


# ---------------------------------------------------------------- failures


async def test_connection_refused_names_the_url_and_the_setting():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    provider = OpenAIProvider(url, api_key=KEY)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    await provider.aclose()
    message = str(info.value)
    assert info.value.kind == "connection"
    assert f"at {url} (connection refused)" in message
    assert "OPENAI_BASE_URL" in message and "--base-url" in message
    assert KEY not in message


async def test_url_without_scheme_is_a_clear_connection_error():
    provider = OpenAIProvider("localhost:8000/v1")
    with pytest.raises(ProviderError, match="must start with http") as info:
        await collect(provider)
    await provider.aclose()
    assert info.value.kind == "connection"


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failure_names_the_variable_and_never_the_key(openai, fake_server, status):
    fake_server.add(Reply(status=status, error_message=f"Incorrect API key provided: {KEY}."))
    with pytest.raises(ProviderError) as info:
        await collect(openai)
    message = str(info.value)
    assert info.value.kind == "auth" and info.value.status == status
    assert "OPENAI_API_KEY" in message
    assert KEY not in message and "sk-test" not in message


async def test_auth_failure_without_a_key_says_to_set_one(fake_server):
    fake_server.add(Reply(status=401, error_message="You didn't provide an API key."))
    provider = OpenAIProvider(fake_server.url + "/v1")
    with pytest.raises(ProviderError, match="Set OPENAI_API_KEY"):
        await collect(provider)
    await provider.aclose()


async def test_unknown_model_is_named(openai, fake_server):
    fake_server.add(Reply(status=404, error_message="The model `gpt-9` does not exist"))
    with pytest.raises(ProviderError) as info:
        await collect(openai, options=RequestOptions("gpt-9"))
    assert info.value.status == 404
    assert "model 'gpt-9' not found" in str(info.value)


async def test_wrong_base_url_404_points_at_the_setting(fake_server):
    provider = OpenAIProvider(fake_server.url)  # missing /v1
    with pytest.raises(ProviderError, match="OPENAI_BASE_URL") as info:
        await collect(provider)
    await provider.aclose()
    assert info.value.status == 404


@pytest.mark.parametrize(
    ("status", "kind"),
    [(429, "rate_limit"), (503, "overloaded"), (529, "overloaded"), (500, "api"), (400, "api")],
)
async def test_error_statuses_map_to_kinds(openai, fake_server, status, kind):
    fake_server.add(Reply(status=status, error_message=f"server says {status}", retry_after=3))
    with pytest.raises(ProviderError) as info:
        await collect(openai)
    assert (info.value.kind, info.value.status) == (kind, status)
    assert f"server says {status}" in str(info.value)
    assert ("Retry after 3 s" in str(info.value)) == (status == 429)


async def test_long_server_message_is_truncated(openai, fake_server):
    fake_server.add(Reply(status=500, error_message="y" * 5000))
    with pytest.raises(ProviderError) as info:
        await collect(openai)
    assert len(str(info.value)) < 420 and "…" in str(info.value)


async def test_dropped_stream_never_emits_half_a_tool_call(openai, fake_server):
    fake_server.add(Reply(tool_calls=[("read_file", {"path": "abc"})], chunk_size=2, drop_after=4))
    events: list[Event] = []
    with pytest.raises(ProviderError):
        await collect(openai, into=events)
    assert not any(isinstance(e, ToolCallEvent) for e in events)


async def test_error_event_mid_stream_is_reported(openai, fake_server):
    frames = [
        sse({"choices": [{"index": 0, "delta": {"content": "par"}}]}),
        sse({"error": {"message": "context length exceeded", "type": "invalid_request_error"}}),
    ]
    fake_server.add(Reply(raw_frames=frames))
    events: list[Event] = []
    with pytest.raises(ProviderError, match="context length exceeded"):
        await collect(openai, into=events)
    assert events == [TextDelta("par")]


# ---------------------------------------------------------------- models, capabilities, registry


async def test_list_models_returns_ids():
    with FakeServer(models=["gpt-4o-mini", "o3"]) as server:
        provider = OpenAIProvider(server.url + "/v1")
        assert await provider.list_models() == ["gpt-4o-mini", "o3"]
        assert server.requests == [("/v1/models", {})]
        await provider.aclose()


async def test_native_tools_are_always_supported(openai, fake_server):
    assert await openai.supports_native_tools("anything") is True
    assert fake_server.requests == []


async def test_created_provider_sends_the_key_from_the_environment(fake_server):
    fake_server.add(Reply(text="ok"))
    settings = Settings(provider="openai", openai_base_url=fake_server.url + "/v1")
    provider = create_provider(settings, {"OPENAI_API_KEY": KEY})
    await collect(provider)
    await provider.aclose()
    assert fake_server.headers[0]["authorization"] == f"Bearer {KEY}"


# ---------------------------------------------------------------- every provider alike


EVERY_PROVIDER = ["anthropic", "gemini", "ollama", "openai"]
collect_default = collector()  # each provider's own default model


@pytest.mark.parametrize("name", EVERY_PROVIDER)
async def test_closing_the_stream_early_leaves_the_provider_usable(name, fake_server):
    fake_server.add(Reply(text="a long answer", chunk_size=1), Reply(text="next"))
    async with opened(name, fake_server.url) as provider:
        stream = provider.stream([Message.user("hi")], None, RequestOptions(provider.default_model))
        assert await stream.__anext__() == TextDelta("a")
        await stream.aclose()
        assert text_of(await collect_default(provider)) == "next"


@pytest.mark.parametrize("name", EVERY_PROVIDER)
async def test_answers_in_a_row_share_one_connection(name, fake_server):
    # A response closed before its body's last chunk takes its connection with it:
    # each step of a turn would open a new one (a new TLS handshake to a hosted API).
    fake_server.add(Reply(text="first"), Reply(text="second"), Reply(text="third"))
    async with opened(name, fake_server.url) as provider:
        answers = [text_of(await collect_default(provider)) for _ in range(3)]
    assert answers == ["first", "second", "third"]
    assert fake_server.connections == 1


async def test_reading_past_the_end_stops_for_a_server_that_keeps_talking():
    async def endless() -> AsyncIterator[str]:
        while True:
            yield ""

    lines = endless()
    await read_past_the_end(lines)
    assert await anext(lines) == ""  # it stopped reading, and the stream is still open


async def test_reading_past_the_end_gives_up_on_a_stream_held_open():
    read: list[str] = []

    async def held_open() -> AsyncIterator[str]:
        yield ""
        read.append("blank")
        await asyncio.Event().wait()  # never set: the server neither ends nor sends
        yield "never"

    await read_past_the_end(held_open())
    assert read == ["blank"]


@pytest.mark.parametrize("name", EVERY_PROVIDER)
async def test_a_malformed_chunk_in_a_good_stream_is_a_stream_error(name, fake_server):
    # The lost piece may have been part of the text or of a call: the answer is not whole,
    # and handing it on as complete would report success for half an answer.
    fake_server.add(Reply(text="Hello there, friend", chunk_size=3, malformed_chunk=True))
    events: list[Event] = []
    async with opened(name, fake_server.url, api_key="sk-secret-key-123") as provider:
        with pytest.raises(ProviderError, match="not valid JSON") as info:
            await collect_default(provider, into=events)
    assert info.value.kind == "stream" and "the answer is incomplete" in str(info.value)
    assert "sk-secret" not in str(info.value)
    assert "\n" not in str(info.value) and not any(isinstance(e, Done) for e in events)
    assert text_of(events) and text_of(events) != "Hello there, friend"


DONE_ONLY = {
    "anthropic": [b'event: message_stop\ndata: {"type": "message_stop"}\n\n'],
    "openai": [b"data: [DONE]\n\n"],
}


@pytest.mark.parametrize(
    ("name", "frames"),
    [
        *[(name, [*garbage, *DONE_ONLY[name]]) for name, garbage in [
            ("anthropic", [b"data: {not json}\n\n"]),
            ("openai", [b"data: {not json}\n\n"]),
        ]],
        ("anthropic", DONE_ONLY["anthropic"]),
        ("openai", DONE_ONLY["openai"]),
        ("gemini", [b"data: {not json}\n\n"]),
        ("ollama", [b"{not json}\n", b'{"done": true, "done_reason": "stop"}\n']),
        ("openai", [b"data: 42\n\n", *DONE_ONLY["openai"]]),
        ("ollama", [b"[1, 2]\n", b'{"done": true}\n']),
    ],
)
async def test_an_end_marker_after_nothing_readable_is_no_answer(name, frames, fake_server):
    # `data: {not json}` then `data: [DONE]` was an empty answer, reported as a success.
    fake_server.add(Reply(raw_frames=frames))
    async with opened(name, fake_server.url) as provider:
        with pytest.raises(ProviderError, match="no readable answer") as info:
            await collect_default(provider)
    assert info.value.kind == "stream"


@pytest.mark.parametrize("name", EVERY_PROVIDER)
async def test_an_empty_body_is_no_answer(name, fake_server):
    fake_server.add(Reply(raw_frames=[]))
    async with opened(name, fake_server.url) as provider:
        with pytest.raises(ProviderError, match="no readable answer") as info:
            await collect_default(provider)
    assert info.value.kind == "stream"


@pytest.mark.parametrize("name", ["anthropic", "gemini", "openai"])
async def test_empty_events_and_comments_are_not_pieces_of_the_answer(name, fake_server):
    fake_server.add(Reply(text="Hello", chunk_size=2))
    async with opened(name, fake_server.url) as provider:
        decoder = provider._decoder()
        assert decoder.feed("data:") == [] and decoder.feed(": keep-alive") == []
        assert decoder.valid_events == 0
        assert text_of(await collect_default(provider)) == "Hello"


@pytest.mark.parametrize(
    ("name", "garbage"),
    [
        ("anthropic", [b"<html>\n", b"data: {broken\n\n"]),
        ("gemini", [b"<html>\n", b"data: {broken\n\n"]),
        ("ollama", [b"<html>\n", b"not ollama\n"]),
        ("openai", [b"<html>\n", b"data: {broken\n\n"]),
    ],
)
async def test_a_stream_of_garbage_is_a_stream_error(name, garbage, fake_server):
    fake_server.add(Reply(raw_frames=garbage))
    async with opened(name, fake_server.url) as provider:
        with pytest.raises(ProviderError, match="no readable answer") as info:
            await collect_default(provider)
    assert info.value.kind == "stream"


@pytest.mark.parametrize(
    ("name", "drop_after"),
    [
        ("gemini", 2),
        ("ollama", 2),
        ("openai", 3),  # frames: role, "Hell", "o wo", "rld!" ...
    ],
)
async def test_dropped_stream_raises_after_the_text_received(name, drop_after, fake_server):
    # drop_after: how many frames are sent before the break, the last the second text frame
    fake_server.add(Reply(text="Hello world!", chunk_size=4, drop_after=drop_after))
    events: list[Event] = []
    async with opened(name, fake_server.url) as provider:
        with pytest.raises(ProviderError) as info:
            await collect_default(provider, into=events)
    assert events == [TextDelta("Hell"), TextDelta("o wo")]
    assert info.value.kind == "stream"
    assert "closed the connection in the middle of the answer" in str(info.value)


@pytest.mark.parametrize("name", ["ollama", "openai"])
async def test_length_stop_maps_to_max_tokens(name, fake_server):
    fake_server.add(Reply(text="cut sho", finish_reason="length"))
    async with opened(name, fake_server.url) as provider:
        events = await collect_default(provider)
    assert events[-1].stop_reason == "max_tokens"


@pytest.mark.parametrize("name", ["ollama", "openai"])
async def test_read_timeout_says_the_model_stopped_responding(name, fake_server):
    fake_server.add(Reply(text="slow", delay=2.0))
    async with opened(name, fake_server.url, read_timeout=0.3) as provider:
        with pytest.raises(ProviderError, match="stopped responding for 0.3 s") as info:
            await collect_default(provider)
    assert info.value.kind == "stream"


# ---------------------------------------------------------------- shared helpers


def test_connect_failure_reasons_come_from_the_exception_chain():
    refused = httpx.ConnectError("All connection attempts failed")
    refused.__cause__ = ConnectionRefusedError(111, "Connect call failed")
    assert connect_failure_reason(refused, 10) == "connection refused"
    dns = httpx.ConnectError("failed")
    dns.__context__ = socket.gaierror(-2, "Name or service not known")
    assert connect_failure_reason(dns, 10) == "host name not found"
    assert (
        connect_failure_reason(httpx.ConnectTimeout("t"), 2.5) == "connection timed out after 2.5 s"
    )


def test_parse_tool_arguments_convention():
    assert parse_tool_arguments("") == {}
    assert parse_tool_arguments('{"a": 1}') == {"a": 1}
    assert parse_tool_arguments(json.dumps('{"a": 1}')) == {"a": 1}  # encoded twice
    assert parse_tool_arguments("[1, 2]") == {"__invalid_json__": "[1, 2]"}
    assert parse_tool_arguments('{"a": ') == {"__invalid_json__": '{"a": '}


def test_redact_removes_keys_and_bearer_tokens():
    text = redact(f"bad key {KEY}; header Bearer abc.def; other sk-proj-XYZ123456", KEY)
    assert "sk-" not in text and "abc.def" not in text


async def test_a_window_stated_in_the_model_list_is_used() -> None:
    from tether.providers.openai import OpenAIProvider

    with FakeServer(context_length=65_536, models=["served-model"]) as server:
        provider = OpenAIProvider(server.url + "/v1")
        assert await provider.context_window("served-model") == 65_536
        assert await provider.context_window("another-model") is None
        await provider.aclose()
    with FakeServer(context_length=None, models=["served-model"]) as server:
        provider = OpenAIProvider(server.url + "/v1")
        assert await provider.context_window("served-model") is None
        await provider.aclose()


async def test_a_llama_cpp_server_states_its_slot_context_as_the_window() -> None:
    from tether.providers.openai import OpenAIProvider

    with FakeServer(context_length=None, models=["served-model"]) as server:  # no max_model_len
        server.slot_context = 16_384  # -c 16384: what a request may fill, not n_ctx_train
        server.parameter_count = 1_777_088_000
        provider = OpenAIProvider(server.url + "/v1")
        assert await provider.context_window("served-model") == 16_384
        assert await provider.stated_billions("served-model") == pytest.approx(1.777, rel=1e-3)
        await provider.aclose()


@pytest.mark.parametrize("proxy", ["", "http://proxy.test:3128"])
def test_only_a_plain_http_server_without_a_proxy_goes_without_the_certificate_store(
    monkeypatch: pytest.MonkeyPatch, proxy: str
) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    if proxy:
        monkeypatch.setenv("ALL_PROXY", proxy)
    assert certificates_for("https://api.openai.com/v1") is True
    local = certificates_for("http://127.0.0.1:8080/v1")
    if proxy:
        assert local is True
    else:  # a context that trusts nothing: TLS, if anything reached for it, would fail
        assert isinstance(local, ssl.SSLContext) and local.verify_mode == ssl.CERT_REQUIRED
        assert local.get_ca_certs() == []

