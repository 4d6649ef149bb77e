"""The provider registry: a name picks a module, imported only when it is used.

Adding a provider is one line in PROVIDERS (plus, if it has them, one line in
BASE_URL_SETTINGS and store.keys.API_KEY_ENV). A provider without a base-URL setting is
built with its class attribute `default_base_url`. A key comes from the
environment first, then from the keys saved with /connect.

Providers and the event stream, in detail:

Each provider module encodes `Message`s into its API's request and decodes its stream into the
four events. `providers/_http.HttpTransport` is the one place that sends: it maps HTTP and
connection failures to `ProviderError` (one line, never the key: `redacting` scrubs every
error a stream raises), retries 429/503/529 before any event was yielded (`retry.RetryPolicy`,
honouring `Retry-After`). Once a decoder says the answer is whole, `_common.read_past_the_end`
reads the rest of the body (bounded in lines and time) before the last events are yielded:
a response closed before its body ended takes its connection with it, and every step would
open a new one (`FakeServer.connections` counts them in the tests). An error body that is not JSON is reduced to one line
(`_errors.text_body_line`): a web page (a proxy's or a web server's, not an API) to its title or
first heading, said to be a page. Before any provider encodes a history, `HttpChatProvider._stream`
repairs it, once for all four (`_http.answered_history`: a call without a result gets an
error result, a result without its call becomes a user note, results follow their calls in
order), so a cancelled, trimmed or foreign history is a request every API accepts;
`tests/fakeserver.py` rejects, as the real APIs do, a request with a dangling call, and
`tests/test_replay.py` sends one through each provider. Tool-call fragments are assembled per index and emitted complete;
arguments that are not JSON arrive as `{"__invalid_json__": raw}` and dispatch tells the model.
A decoder reads each piece of an answer with `_http.chunk_object`, which raises `UnreadableChunk`
for a line that is not a JSON object; `HttpChatProvider._decoded` turns that into a stream
`ProviderError` (before any readable piece: "no readable answer", the URL may be wrong), and so
is an end marker that comes before any piece (`valid_events` does not count end markers): a
broken answer is never handed on as a whole one.
That key is internal: everything shown to people or scripts goes through
`messages.arguments_fields` (json outputs: `arguments: {}` plus `invalid_arguments`) or
`headless.describe_arguments` ("arguments that are not valid JSON: ...").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.config import Settings
from ..store.keys import API_KEY_ENV

if TYPE_CHECKING:  # the chat names the providers before its prompt; their code waits
    from .base import Provider

PROVIDERS: dict[str, str] = {
    "ollama": "tether.providers.ollama:OllamaProvider",
    "openai": "tether.providers.openai:OpenAIProvider",
    "anthropic": "tether.providers.anthropic:AnthropicProvider",
    "gemini": "tether.providers.gemini:GeminiProvider",
    "local": "tether.providers.local:LocalProvider",
}

BASE_URL_SETTINGS: dict[str, str] = {
    "ollama": "ollama_host",
    "openai": "openai_base_url",
    "anthropic": "anthropic_base_url",
    "gemini": "gemini_base_url",
}

DEFAULT_MODELS: dict[str, str] = {
    "ollama": "qwen2.5-coder:7b",
    "openai": "gpt-4o-mini",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
    "local": "qwen2.5-coder-1.5b-instruct-q4_k_m",
}
"""The model each provider uses when none is chosen (its class's `default_model`): here, so
the chat can name it before the provider's code is imported."""



def provider_names() -> list[str]:
    return list(PROVIDERS)


def default_model(name: str) -> str:
    """The model provider `name` uses when none is chosen ("" for an unknown provider)."""
    return DEFAULT_MODELS.get(name, "")


def provider_class(name: str) -> Any:
    """The class registered under `name`; ValueError naming the known ones if there is none."""
    target = PROVIDERS.get(name)
    if target is None:
        known = ", ".join(provider_names())
        raise ValueError(f"unknown provider '{name}'; known providers: {known}")
    module_name, _, class_name = target.partition(":")
    return getattr(import_module(module_name), class_name)


def base_url_of(settings: Settings, name: str) -> str:
    """The URL the provider `name` is configured to talk to."""
    url_setting = BASE_URL_SETTINGS.get(name)
    if url_setting:
        return str(getattr(settings, url_setting))
    return str(getattr(provider_class(name), "default_base_url", ""))


def create_provider(
    settings: Settings,
    env: Mapping[str, str],
    notice: Callable[[str], None] | None = None,
    home: Path | None = None,
) -> Provider:
    """The provider `settings.provider` names, pointed at its configured URL and key.

    `notice` hears about retries and skipped chunks; `home` holds the saved keys
    (default: TETHER_HOME), used when the environment has no key.
    """
    from ..store.config import tether_home
    from ..store.keys import KeyStore, resolve_key
    from .retry import RetryPolicy

    name = settings.provider
    cls = provider_class(name)
    if hasattr(cls, "from_settings"):  # no URL, no key: in-process (local)
        return cls.from_settings(settings, env, notice)  # type: ignore[no-any-return]
    api_key = None
    if name in API_KEY_ENV:
        store = KeyStore(tether_home(env) if home is None else home)
        api_key, source = resolve_key(name, env, store)
        if source == "missing" and store.problem and notice is not None:
            notice(store.problem)  # a broken credentials file must not look like "no key saved"
    extra: dict[str, Any] = {}
    if name == "ollama" and settings.context_window is not None:
        extra["context_window"] = settings.context_window
    return cls(
        base_url_of(settings, name),
        api_key=api_key,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.request_timeout,
        retry=RetryPolicy(max_retries=settings.max_retries),
        notice=notice,
        **extra,
    )
