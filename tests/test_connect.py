"""What `/connect` reports and offers, and how providers are wired from settings
(keys, capability checks against the configured server, the context window)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply, closed_port

from tether.core.messages import Message
from tether.providers import create_provider, provider_names
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.connect import (
    ProviderStatus,
    available_models,
    connection_status,
    needs_key,
    status_line,
)
from tether.providers.ollama import OllamaProvider
from tether.store.config import Settings
from tether.store.keys import KeyStore

ANTHROPIC_KEY = "sk-ant-api03-env-key-0000000000"
GEMINI_KEY = "AIza-saved-key-00000000000000000"


def by_name(statuses: list[ProviderStatus]) -> dict[str, ProviderStatus]:
    return {s.name: s for s in statuses}


def test_which_providers_need_a_key():
    assert [n for n in provider_names() if needs_key(n)] == ["openai", "anthropic", "gemini"]
    assert needs_key("ollama") is False


async def test_every_provider_says_whether_it_is_ready_and_what_it_needs(tmp_path: Path):
    KeyStore(tmp_path).set("gemini", GEMINI_KEY)
    with FakeServer() as server:
        settings = Settings(ollama_host=server.url, profile="full")  # small would pick text
        statuses = await connection_status(settings, {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}, tmp_path)
    assert [s.name for s in statuses] == provider_names()
    status = by_name(statuses)
    assert status["anthropic"].ready and status["anthropic"].key_source == "env ANTHROPIC_API_KEY"
    assert status["gemini"].ready and status["gemini"].key_source == "saved"
    assert not status["openai"].ready
    assert status["openai"].needs == "set OPENAI_API_KEY or /connect openai"
    assert status["openai"].key_source == "missing"
    assert status["anthropic"].base_url == "https://api.anthropic.com"
    assert status["gemini"].default_model == "gemini-2.5-flash"
    assert [s.name for s in statuses if s.current] == ["ollama"]
    ollama = status["ollama"]
    assert (ollama.ready, ollama.key_source, ollama.protocol) == (True, "not needed", "native")
    assert ollama.model == "qwen2.5-coder:7b" and ollama.base_url == server.url
    everything = json.dumps([s.as_dict() for s in statuses]) + "".join(map(status_line, statuses))
    assert ANTHROPIC_KEY not in everything and GEMINI_KEY not in everything


async def test_gemini_missing_names_both_variables(tmp_path: Path):
    statuses = await connection_status(Settings(provider="gemini"), {}, tmp_path)
    gemini = by_name(statuses)["gemini"]
    assert not gemini.ready and gemini.protocol is None and gemini.current
    assert gemini.needs == "set GEMINI_API_KEY or GOOGLE_API_KEY or /connect gemini"
    assert gemini.model == "gemini-2.5-flash"


async def test_a_provider_in_use_that_does_not_answer_is_not_called_ready(tmp_path: Path):
    settings = Settings(
        provider="anthropic",
        model="claude-haiku-4-5",
        anthropic_base_url=f"http://127.0.0.1:{closed_port()}",  # nothing there
    )
    statuses = await connection_status(settings, {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}, tmp_path)
    current = by_name(statuses)["anthropic"]
    assert not current.ready and not current.checked and current.needs
    line = status_line(current)
    assert line.startswith("* anthropic") and "needs: " in line and "ready" not in line


async def test_only_the_provider_in_use_is_asked_and_its_model_in_use_is_shown(tmp_path: Path):
    with FakeServer() as server:
        settings = Settings(provider="openai", model="from-the-settings", profile="full",
                            openai_base_url=server.url + "/v1")
        statuses = by_name(await connection_status(
            settings, {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": ANTHROPIC_KEY}, tmp_path,
            model="switched-with-slash-model"))
        asked = [path for path, _ in server.requests]
    openai, anthropic = statuses["openai"], statuses["anthropic"]
    assert openai.checked and openai.model == "switched-with-slash-model"
    line = status_line(openai)
    assert "ready" in line and "model switched-with-slash-model" in line
    assert anthropic.ready and not anthropic.checked  # configured, never asked
    assert "configured, not checked" in status_line(anthropic)
    assert "ready" not in status_line(anthropic)
    assert asked and all(path.startswith("/v1/") for path in asked)  # the server in use only


async def test_the_current_ollama_model_without_tools_uses_the_text_protocol(tmp_path: Path):
    with FakeServer(tools_capable=False) as server:
        settings = Settings(ollama_host=server.url, model="coder")  # no size in the name: asked
        current = by_name(await connection_status(settings, {}, tmp_path))["ollama"]
        assert server.bodies("/api/show") == [{"model": "coder"}]  # the configured server, once
    assert current.protocol == "text" and current.model == "coder"


async def test_a_chosen_protocol_is_reported_without_asking(tmp_path: Path):
    with FakeServer() as server:
        # a chosen profile too: auto would ask /api/show for the model's size
        settings = Settings(ollama_host=server.url, protocol="text", profile="full")
        current = by_name(await connection_status(settings, {}, tmp_path))["ollama"]
        assert server.bodies("/api/show") == []
    assert current.protocol == "text"


async def test_ollama_not_running_says_where_it_looked_and_what_to_do(tmp_path: Path):
    url = f"http://127.0.0.1:{closed_port()}"
    current = by_name(await connection_status(Settings(ollama_host=url), {}, tmp_path))["ollama"]
    assert not current.ready and current.protocol is None
    assert url in current.needs and "ollama serve" in current.needs
    assert "needs:" in status_line(current)


async def test_a_local_openai_compatible_server_needs_no_key(tmp_path: Path):
    settings = Settings(provider="ollama", openai_base_url="http://127.0.0.1:8000/v1")
    openai = by_name(await connection_status(settings, {}, tmp_path))["openai"]
    assert openai.ready and openai.key_source == "missing"


async def test_a_damaged_key_file_is_named_in_what_is_needed(tmp_path: Path):
    (tmp_path / "credentials.json").write_text("{oops")
    settings = Settings(provider="anthropic")
    anthropic = by_name(await connection_status(settings, {}, tmp_path))["anthropic"]
    assert not anthropic.ready and "credentials.json is not valid JSON" in anthropic.needs


async def test_available_models_are_sorted_without_repeats():
    with FakeServer(models=["zeta:1b", "alpha:7b", "zeta:1b"]) as server:
        provider = OllamaProvider(server.url)
        assert await available_models(provider) == ["alpha:7b", "zeta:1b"]
        await provider.aclose()


async def test_available_models_failure_is_one_clear_error():
    url = f"http://127.0.0.1:{closed_port()}"
    provider = OllamaProvider(url)
    with pytest.raises(ProviderError) as info:
        await available_models(provider)
    await provider.aclose()
    message = str(info.value)
    assert message.startswith("cannot list the models of ollama: cannot reach Ollama at " + url)
    assert info.value.kind == "connection"


# ---------------------------------------------------------------- wiring from settings


async def test_capabilities_are_asked_of_the_configured_server_once_per_model():
    with FakeServer() as server:
        provider = create_provider(Settings(ollama_host=server.url), {})
        assert await provider.supports_native_tools("a:1b") is True
        server.tools_capable = False
        assert await provider.supports_native_tools("a:1b") is True  # cached
        assert await provider.supports_native_tools("b:1b") is False  # another model: asked
        await provider.aclose()
        assert [b["model"] for b in server.bodies("/api/show")] == ["a:1b", "b:1b"]


async def test_the_context_window_setting_is_sent_as_num_ctx():
    with FakeServer([Reply(text="a"), Reply(text="b")]) as server:
        for window in (32768, None):
            provider = create_provider(Settings(ollama_host=server.url, context_window=window), {})
            async for _ in provider.stream([Message.user("hi")], None, RequestOptions("m")):
                pass
            await provider.aclose()
        first, second = server.bodies("/api/chat")
    assert first["options"] == {"num_ctx": 32768}
    assert "options" not in second


def test_a_saved_key_is_used_when_the_environment_has_none(tmp_path: Path):
    KeyStore(tmp_path).set("openai", "sk-saved-0000000000")
    provider = create_provider(Settings(provider="openai"), {}, home=tmp_path)
    assert provider._http._api_key == "sk-saved-0000000000"
    assert "sk-saved" not in repr(provider)


def test_the_home_defaults_to_tether_home(tmp_path: Path):
    KeyStore(tmp_path).set("anthropic", ANTHROPIC_KEY)
    provider = create_provider(Settings(provider="anthropic"), {"TETHER_HOME": str(tmp_path)})
    assert provider._http._api_key == ANTHROPIC_KEY


async def test_status_says_which_profile_the_model_gets(tmp_path: Path):
    with FakeServer() as server:
        server.parameter_size = "1.5B"
        settings = Settings(ollama_host=server.url, model="mystery")
        current = by_name(await connection_status(settings, {}, tmp_path))["ollama"]
    assert (current.profile, current.protocol) == ("small", "text")
    assert status_line(current).endswith(", model mystery, text tools, small profile")
