"""What `/connect` shows and does: which providers are ready, what each still
needs, and which models one offers.

Only the provider in use is asked (its model list, briefly: no tokens are spent), so only
it can be called ready; the others say what they are configured with and that they were not
checked, never "ready" on the strength of a key alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..core.model_table import load_model_table
from ..core.profile import PROFILES, choose_protocol, detect_profile
from ..store.config import Settings, setting_default
from ..store.keys import API_KEY_ENV, KeyStore, key_variables, resolve_key
from . import (
    BASE_URL_SETTINGS,
    base_url_of,
    create_provider,
    provider_class,
    provider_names,
)
from ._http import CAPABILITY_TIMEOUT
from .base import Provider, ProviderError

PROBE_TIMEOUT = 2 * CAPABILITY_TIMEOUT
"""Seconds the provider in use gets to list its models for `/connect status`."""


@dataclass(frozen=True)
class ProviderStatus:
    """One provider as `/connect` lists it. Never holds a key."""

    name: str
    ready: bool
    """Configured: nothing is missing (a key, where one is needed)."""
    needs: str
    """What is still missing, e.g. "set ANTHROPIC_API_KEY or /connect anthropic"; "" when ready."""
    base_url: str
    default_model: str
    key_source: str
    """"env NAME", "saved", "missing" or "not needed"."""
    current: bool = False
    model: str = ""
    """The model in use, for the current provider."""
    protocol: str | None = None
    """"native" or "text" for the current provider, when known."""
    profile: str | None = None
    """"small" or "full" for the current provider, when known."""
    model_table: str | None = None
    """The model table's entry for the model ("qwen3 (built-in)"), when one matches."""
    checked: bool = False
    """The server answered just now (only the current provider is asked)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def needs_key(provider_name: str) -> bool:
    """Whether the provider normally needs an API key (a local OpenAI-compatible server may not)."""
    return provider_name in API_KEY_ENV


def key_hint(provider_name: str) -> str:
    variables = " or ".join(key_variables(provider_name))
    return f"set {variables} or /connect {provider_name}"


async def connection_status(
    settings: Settings, env: Mapping[str, str], home: Path, model: str = ""
) -> list[ProviderStatus]:
    """Every registered provider, the current one first-hand (reachable? which protocol?);
    `model` is the one in use (a /model switch changes it, not the settings)."""
    store = KeyStore(home)
    statuses = [_static_status(name, settings, env, store) for name in provider_names()]
    return [
        await _current_status(status, settings, env, home, model) if status.current else status
        for status in statuses
    ]


def _static_status(
    name: str, settings: Settings, env: Mapping[str, str], store: KeyStore
) -> ProviderStatus:
    base_url = base_url_of(settings, name)
    cls = provider_class(name)
    if needs_key(name):
        key, source = resolve_key(name, env, store)
    else:
        key, source = None, "not needed"
    ready = not needs_key(name) or key is not None or may_skip_key(name, base_url)
    needs = "" if ready else key_hint(name)
    if not ready and store.problem:
        needs += f" ({store.problem})"
    return ProviderStatus(
        name=name,
        ready=ready,
        needs=needs,
        base_url=base_url,
        default_model=str(getattr(cls, "default_model", "")),
        key_source=source,
        current=name == settings.provider,
    )


def may_skip_key(name: str, base_url: str) -> bool:
    """Whether a key may be left out: the provider is pointed at a server other than its own
    hosted API (vLLM, llama.cpp, LM Studio, a proxy ...), which may need none."""
    setting = BASE_URL_SETTINGS.get(name)
    if not needs_key(name) or setting is None:
        return False
    default = str(setting_default(setting))
    return urlsplit(base_url).hostname != urlsplit(default).hostname


async def _current_status(
    status: ProviderStatus, settings: Settings, env: Mapping[str, str], home: Path,
    in_use: str = "",
) -> ProviderStatus:
    model = in_use or settings.model or status.default_model
    status = _replace(status, model=model)
    if not status.ready:
        return status
    quick = settings.with_changes(connect_timeout=min(settings.connect_timeout, CAPABILITY_TIMEOUT))
    provider = create_provider(quick, env, home=home)
    try:
        try:  # is it there, and does it take the key? (a model list costs no tokens)
            await asyncio.wait_for(provider.list_models(), PROBE_TIMEOUT)
        except (ProviderError, asyncio.TimeoutError) as exc:
            why = str(exc) or f"no answer within {PROBE_TIMEOUT:.0f}s"
            return _replace(status, ready=False, needs=why)
        status = _replace(status, checked=True)
        matched = load_model_table(home).match(model)
        choice = await detect_profile(settings.profile, provider, model, matched)
        protocol = await choose_protocol(settings.protocol, PROFILES[choice.name], choice.entry,
                                         lambda: provider.supports_native_tools(model))
        return _replace(status, protocol=protocol, profile=choice.name,
                        model_table=matched.shown() if matched else None)
    finally:
        await provider.aclose()


def _replace(status: ProviderStatus, **changes: Any) -> ProviderStatus:
    return ProviderStatus(**{**asdict(status), **changes})


async def available_models(provider: Provider) -> list[str]:
    """The provider's own model list, sorted; a failure is one clear ProviderError."""
    try:
        models = await provider.list_models()
    except ProviderError as exc:
        raise ProviderError(
            f"cannot list the models of {provider.name}: {exc}", exc.kind, exc.status
        ) from None
    return sorted(set(models))


def status_line(status: ProviderStatus) -> str:
    """One line for the `/connect` table."""
    mark = "*" if status.current else " "
    if not status.ready:
        state = f"needs: {status.needs}"
    else:
        state = "ready" if status.checked else "configured, not checked"
    key = (
        "" if status.key_source in ("not needed", "missing") else f", key from {status.key_source}"
    )
    extra = ""
    if status.current:
        extra = f", model {status.model}" + (
            f", {status.protocol} tools" if status.protocol else ""
        ) + (f", {status.profile} profile" if status.profile else "") + (
            f", model table: {status.model_table}" if status.model_table else "")
    return f"{mark} {status.name:<10} {state}{key} — {status.base_url}{extra}"
