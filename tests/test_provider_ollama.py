"""The Ollama provider against a local server speaking Ollama's real wire format,
plus the provider registry.
What every provider does alike is tested once, in test_provider_openai.py."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from fakeserver import FakeServer, Reply, closed_port
from provider_helpers import READ_TOOL, collector, text_of, two_reads

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
from tether.providers import PROVIDERS, create_provider, provider_names
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.ollama import OllamaProvider, OllamaStreamDecoder
from tether.providers.openai import OpenAIProvider
from tether.store.config import Settings

MODEL = "fake-coder:7b"
OPTIONS = RequestOptions(MODEL)
collect = collector(OPTIONS)


@pytest.fixture
async def ollama(fake_server: FakeServer) -> AsyncIterator[OllamaProvider]:
    provider = OllamaProvider(fake_server.url, read_timeout=5)
    yield provider
    await provider.aclose()


# ---------------------------------------------------------------- streaming


async def test_text_arrives_in_several_deltas_then_one_done(ollama, fake_server):
    fake_server.add(Reply(text="Hello, world!", chunk_size=4, usage=(21, 7)))
    events = await collect(ollama)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert [d.text for d in deltas] == ["Hell", "o, w", "orld", "!"]
    assert events[-1] == Done(Usage(21, 7), "end_turn")
    assert sum(isinstance(e, Done) for e in events) == 1


async def test_thinking_comes_as_thinking_deltas_before_the_text(ollama, fake_server):
    fake_server.add(Reply(thinking="Let me see.", text="42", chunk_size=5))
    events = await collect(ollama)
    assert events[:3] == [ThinkingDelta("Let m"), ThinkingDelta("e see"), ThinkingDelta(".")]
    assert events[3] == TextDelta("42")


async def test_think_tags_in_content_are_left_for_the_loop(ollama, fake_server):
    fake_server.add(Reply(text="<think>hm</think>ok", chunk_size=100))
    events = await collect(ollama)
    assert events[0] == TextDelta("<think>hm</think>ok")


async def test_native_tool_calls_become_events_with_fresh_ids(ollama, fake_server):
    calls = [("read_file", {"path": "a.txt"}), ("read_file", {"path": 'we"ird\n.txt'})]
    fake_server.add(Reply(text="Reading both.", tool_calls=calls))
    events = await collect(ollama, tools=[READ_TOOL])
    got = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in got] == calls
    assert all(c.id.startswith("call_") for c in got)
    assert got[0].id != got[1].id
    assert events[-1].stop_reason == "tool_use"
    assert text_of(events) == "Reading both."


# ---------------------------------------------------------------- request encoding


async def test_history_with_tool_calls_and_results_is_encoded_natively(ollama, fake_server):
    fake_server.add(Reply(text="Done."))
    options = RequestOptions(MODEL, temperature=0.2, max_tokens=256)
    await collect(ollama, two_reads("Reading."), [READ_TOOL], options)
    (body,) = fake_server.bodies("/api/chat")
    assert body == {
        "model": MODEL,
        "stream": True,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Read a.txt and b.txt"},
            {
                "role": "assistant",
                "content": "Reading.",
                "tool_calls": [
                    {"function": {"name": "read_file", "arguments": {"path": "a.txt"}}},
                    {"function": {"name": "read_file", "arguments": {"path": "b.txt"}}},
                ],
            },
            {"role": "tool", "content": "alpha", "tool_name": "read_file"},
            {"role": "tool", "content": "Error: no such file", "tool_name": "read_file"},
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
        "options": {"temperature": 0.2, "num_predict": 256},
    }


async def test_no_tools_and_no_options_are_sent_when_not_given(ollama, fake_server):
    fake_server.add(Reply(text="ok"))
    await collect(ollama)
    (body,) = fake_server.bodies("/api/chat")
    assert "tools" not in body and "options" not in body


async def test_empty_tool_list_is_still_sent(ollama, fake_server):
    fake_server.add(Reply(text="ok"))
    await collect(ollama, tools=[])
    assert fake_server.bodies("/api/chat")[0]["tools"] == []


# ---------------------------------------------------------------- failures


async def test_connection_refused_names_the_url_and_what_to_do():
    url = f"http://127.0.0.1:{closed_port()}"
    provider = OllamaProvider(url)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    await provider.aclose()
    assert info.value.kind == "connection"
    message = str(info.value)
    assert message.startswith(f"cannot reach Ollama at {url} (connection refused).")
    assert "ollama serve" in message and "OLLAMA_HOST" in message and "--base-url" in message
    assert "\n" not in message


async def test_host_without_scheme_is_accepted(fake_server):
    provider = OllamaProvider(fake_server.url.removeprefix("http://"))
    assert await provider.list_models() == ["fake-coder:7b", "fake-chat:1b"]
    await provider.aclose()


async def test_missing_model_suggests_ollama_pull(ollama, fake_server):
    fake_server.add(Reply(status=404, error_message="model 'nope:3b' not found"))
    with pytest.raises(ProviderError) as info:
        await collect(ollama, options=RequestOptions("nope:3b"))
    assert info.value.status == 404
    assert "model 'nope:3b' not found" in str(info.value)
    assert "ollama pull nope:3b" in str(info.value)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, "auth"),
        (403, "auth"),
        (429, "rate_limit"),
        (503, "overloaded"),
        (529, "overloaded"),
        (500, "api"),
        (400, "api"),
    ],
)
async def test_error_statuses_map_to_kinds(ollama, fake_server, status, kind):
    fake_server.add(Reply(status=status, error_message=f"server says {status}"))
    with pytest.raises(ProviderError) as info:
        await collect(ollama)
    assert info.value.kind == kind
    assert info.value.status == status
    assert f"server says {status}" in str(info.value)
    assert "\n" not in str(info.value)


async def test_rate_limit_mentions_retry_after(ollama, fake_server):
    fake_server.add(Reply(status=429, error_message="slow down", retry_after=7))
    with pytest.raises(ProviderError, match="Retry after 7 s"):
        await collect(ollama)


async def test_long_server_message_is_truncated_to_one_line(ollama, fake_server):
    fake_server.add(Reply(status=500, error_message="boom\n" + "x" * 2000))
    with pytest.raises(ProviderError) as info:
        await collect(ollama)
    message = str(info.value)
    assert "\n" not in message and "…" in message
    assert len(message) < 420


async def test_exhausted_script_is_a_clear_api_error(ollama):
    with pytest.raises(ProviderError, match="script exhausted") as info:
        await collect(ollama)
    assert info.value.kind == "api" and info.value.status == 500


async def test_stream_that_ends_without_done_is_a_stream_error(ollama, fake_server):
    line = json.dumps(
        {"model": MODEL, "message": {"role": "assistant", "content": "part"}, "done": False}
    )
    fake_server.add(Reply(raw_frames=[(line + "\n").encode()]))
    events: list[Event] = []
    with pytest.raises(ProviderError, match="before it was complete") as info:
        await collect(ollama, into=events)
    assert events == [TextDelta("part")]
    assert info.value.kind == "stream"


async def test_error_line_mid_stream_is_reported(ollama, fake_server):
    first = json.dumps({"model": MODEL, "message": {"content": "par"}, "done": False})
    fake_server.add(Reply(raw_frames=[(first + "\n").encode(), b'{"error": "out of memory"}\n']))
    events: list[Event] = []
    with pytest.raises(ProviderError, match="out of memory") as info:
        await collect(ollama, into=events)
    assert events == [TextDelta("par")]
    assert info.value.kind == "api"


# ---------------------------------------------------------------- decoding details


def test_decoder_accepts_string_arguments_and_marks_invalid_json():
    decoder = OllamaStreamDecoder()
    line = {
        "message": {
            "tool_calls": [
                {"id": "call_x", "function": {"name": "a", "arguments": '{"n": 1}'}},
                {"function": {"name": "b", "arguments": '{"n": '}},
                {"function": {"arguments": {}}},
            ]
        }
    }
    events = decoder.feed(json.dumps(line))
    calls = [e.call for e in events]
    assert calls[0] == ToolCall("call_x", "a", {"n": 1})
    assert calls[1].arguments == {"__invalid_json__": '{"n": '}
    assert len(calls) == 2  # a call without a name is dropped


def test_decoder_ignores_lines_after_done():
    decoder = OllamaStreamDecoder()
    assert decoder.feed('{"done": true, "done_reason": "stop"}') == [Done(Usage(), "end_turn")]
    assert decoder.feed('{"message": {"content": "late"}}') == []


# ---------------------------------------------------------------- capabilities and models


async def test_native_tool_support_comes_from_show_capabilities(ollama, fake_server):
    assert await ollama.supports_native_tools(MODEL) is True
    assert fake_server.bodies("/api/show") == [{"model": MODEL}]
    fake_server.tools_capable = False
    assert await ollama.supports_native_tools("other:1b") is False


async def test_native_tool_support_is_cached_per_model(ollama, fake_server):
    assert await ollama.supports_native_tools(MODEL) is True
    fake_server.tools_capable = False
    assert await ollama.supports_native_tools(MODEL) is True
    assert len(fake_server.bodies("/api/show")) == 1


async def test_unreachable_server_is_asked_again_next_time():
    port = closed_port()
    provider = OllamaProvider(f"http://127.0.0.1:{port}")
    assert await provider.supports_native_tools(MODEL) is False
    with FakeServer(port=port) as server:
        assert await provider.supports_native_tools(MODEL) is True
        assert len(server.bodies("/api/show")) == 1
    await provider.aclose()


async def test_list_models_returns_tag_names():
    with FakeServer(models=["llama3.2:3b", "qwen2.5-coder:7b"]) as server:
        provider = OllamaProvider(server.url)
        assert await provider.list_models() == ["llama3.2:3b", "qwen2.5-coder:7b"]
        await provider.aclose()


async def test_list_models_when_down_is_a_connection_error():
    provider = OllamaProvider(f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(ProviderError) as info:
        await provider.list_models()
    assert info.value.kind == "connection"


# ---------------------------------------------------------------- registry


def test_registry_names_every_provider():
    assert provider_names() == ["ollama", "openai", "anthropic", "gemini", "local"]
    assert PROVIDERS["ollama"] == "tether.providers.ollama:OllamaProvider"


def test_create_provider_uses_the_ollama_host_setting():
    settings = Settings(ollama_host="http://10.1.2.3:5000", connect_timeout=2, request_timeout=9)
    provider = create_provider(settings, {})
    assert isinstance(provider, OllamaProvider)
    assert provider.base_url == "http://10.1.2.3:5000"
    assert provider.default_model == "qwen2.5-coder:7b"


def test_create_provider_picks_openai_with_its_base_url():
    settings = Settings(provider="openai", openai_base_url="http://127.0.0.1:9/v1/")
    provider = create_provider(settings, {"OPENAI_API_KEY": "sk-test-0000000000"})
    assert isinstance(provider, OpenAIProvider)
    assert provider.base_url == "http://127.0.0.1:9/v1"
    assert "sk-test" not in repr(provider)


def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(
        ValueError, match="unknown provider 'nope'; known providers: ollama, openai"
    ):
        create_provider(Settings(provider="nope"), {})


def test_provider_modules_are_imported_lazily():
    code = "import sys, tether.providers; print(sorted(m for m in sys.modules if m.startswith('tether.providers.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ollama" not in out.stdout and "openai" not in out.stdout


@pytest.mark.parametrize(("trained", "expected"), [(32_768, 16_384), (8_192, 8_192)])
async def test_context_window_is_asked_for_and_sent_as_num_ctx(trained: int, expected: int) -> None:
    with FakeServer([Reply(text="hi")], context_length=trained) as server:
        provider = OllamaProvider(server.url)
        assert await provider.context_window("m") == expected
        [event async for event in provider.stream([Message.user("x")], None, RequestOptions("m"))]
        await provider.aclose()
        chat = [b for p, b in server.requests if p == "/api/chat"][-1]
    assert chat["options"]["num_ctx"] == expected


async def test_a_configured_window_wins_and_needs_no_question() -> None:
    with FakeServer([Reply(text="hi")]) as server:
        provider = OllamaProvider(server.url, context_window=4096)
        assert await provider.context_window("m") == 4096
        [event async for event in provider.stream([Message.user("x")], None, RequestOptions("m"))]
        await provider.aclose()
        assert [p for p, _ in server.requests] == ["/api/chat"]
        assert server.requests[0][1]["options"]["num_ctx"] == 4096
