"""Regression tests for security fixes: keys echoed in streamed errors, failures of the
network layer that are not httpx errors, repository-configured programs run by
read-only git commands, and search_in_file following symlinks out of the project."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fakeserver import FakeServer, Reply

from tether.messages import Message
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.gemini import GeminiProvider
from tether.providers.ollama import OllamaProvider
from tether.providers.openai import OpenAIProvider

# A key without any well-known prefix: only the provider's own key can catch it.
KEY = "or-v1-abcdef0123456789SECRET"
HELLO = [Message.user("hi")]


# ---------------------------------------------------------------- keys in streamed errors


def _data(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _ollama(url: str) -> OllamaProvider:
    return OllamaProvider(url, api_key=KEY, read_timeout=5)


def _openai(url: str) -> OpenAIProvider:
    return OpenAIProvider(url + "/v1", api_key=KEY, read_timeout=5)


def _anthropic(url: str) -> AnthropicProvider:
    return AnthropicProvider(url, api_key=KEY, read_timeout=5)


def _gemini(url: str) -> GeminiProvider:
    return GeminiProvider(url, api_key=KEY, read_timeout=5)


def _ollama_error(message: str) -> list[bytes]:
    return [json.dumps({"error": message}).encode() + b"\n"]


def _openai_error(message: str) -> list[bytes]:
    return [_data({"error": {"message": message}})]


def _anthropic_error(message: str) -> list[bytes]:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
    return [b"event: error\n" + _data(error)]


def _gemini_error(message: str) -> list[bytes]:
    return [_data({"error": {"status": "RESOURCE_EXHAUSTED", "message": message}})]


PROVIDERS: dict[str, tuple[Callable[[str], Any], Callable[[str], list[bytes]], str, str]] = {
    # name: (make provider, in-stream error frames, model, the kind the error keeps)
    "ollama": (_ollama, _ollama_error, "fake-coder:7b", "api"),
    "openai": (_openai, _openai_error, "fake", "api"),
    "anthropic": (_anthropic, _anthropic_error, "claude-sonnet-4-5", "overloaded"),
    "gemini": (_gemini, _gemini_error, "gemini-2.5-flash", "rate_limit"),
}


async def _stream_error(name: str, server: FakeServer, message: str) -> ProviderError:
    make, frames, model, _ = PROVIDERS[name]
    server.add(Reply(raw_frames=frames(message)))
    provider = make(server.url)
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions(model)):
                pass
    finally:
        await provider.aclose()
    return info.value


@pytest.mark.parametrize("name", PROVIDERS)
async def test_streamed_error_echoing_the_key_is_redacted(name, fake_server):
    error = await _stream_error(name, fake_server, f"Incorrect API key provided: {KEY}")
    assert KEY not in str(error)
    assert "Incorrect API key provided: [redacted]" in str(error)
    assert error.kind == PROVIDERS[name][3]


@pytest.mark.parametrize("name", PROVIDERS)
async def test_streamed_error_cut_off_inside_the_key_shows_none_of_it(name, fake_server):
    # Long enough that the one-line limit cuts the message in the middle of the key.
    padding = "x" * 280
    error = await _stream_error(name, fake_server, f"{padding} key {KEY} was rejected")
    assert KEY[:6] not in str(error)
    assert "[redacted]…" in str(error)


async def test_streamed_error_without_the_key_is_left_alone(fake_server):
    error = await _stream_error("openai", fake_server, "model is busy")
    assert "model is busy" in str(error) and "[redacted]" not in str(error)


# ---------------------------------------------------------------- non-httpx network errors


@pytest.mark.parametrize("name", PROVIDERS)
async def test_port_out_of_range_is_a_connection_error_naming_the_url(name):
    provider = PROVIDERS[name][0]("http://127.0.0.1:99999")
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions(PROVIDERS[name][2])):
                pass
    finally:
        await provider.aclose()
    assert info.value.kind == "connection"
    assert "cannot reach" in str(info.value) and "127.0.0.1:99999" in str(info.value)
    assert "port must be 0-65535" in str(info.value)


async def test_key_the_network_layer_cannot_send_is_a_connection_error(fake_server):
    # A key pasted with a typographic quote cannot go into an HTTP header.
    provider = OpenAIProvider(fake_server.url + "/v1", api_key="sk-pasted\u2019key")
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions("fake")):
                pass
    finally:
        await provider.aclose()
    assert info.value.kind == "connection"
    assert fake_server.url in str(info.value) and "pasted" not in str(info.value)


async def test_unexpected_failure_while_reading_is_a_connection_error(fake_server, monkeypatch):
    import httpx

    async def broken_lines(self: httpx.Response):
        yield 'data: {"choices": []}'
        raise RuntimeError("decoder exploded")

    monkeypatch.setattr(httpx.Response, "aiter_lines", broken_lines)
    fake_server.add(Reply(text="hello"))
    provider = _openai(fake_server.url)
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions("fake")):
                pass
    finally:
        await provider.aclose()
    assert info.value.kind == "connection"
    assert "decoder exploded" in str(info.value) and fake_server.url in str(info.value)
