"""The provider registry: a name picks a module, imported only when it is used.

Adding a provider is one line in PROVIDERS (plus, if it has them, one line in
BASE_URL_SETTINGS and API_KEY_ENV). A provider without a base-URL setting is
built with its class attribute `default_base_url`.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any

from ..config import Settings
from .base import Provider

PROVIDERS: dict[str, str] = {
    "ollama": "tether.providers.ollama:OllamaProvider",
    "openai": "tether.providers.openai:OpenAIProvider",
}

BASE_URL_SETTINGS: dict[str, str] = {
    "ollama": "ollama_host",
    "openai": "openai_base_url",
}

API_KEY_ENV: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
}


def provider_names() -> list[str]:
    return list(PROVIDERS)


def provider_class(name: str) -> Any:
    """The class registered under `name`; ValueError naming the known ones if there is none."""
    target = PROVIDERS.get(name)
    if target is None:
        known = ", ".join(provider_names())
        raise ValueError(f"unknown provider '{name}'; known providers: {known}")
    module_name, _, class_name = target.partition(":")
    return getattr(import_module(module_name), class_name)


def create_provider(settings: Settings, env: Mapping[str, str]) -> Provider:
    """The provider `settings.provider` names, pointed at its configured URL and key."""
    cls = provider_class(settings.provider)
    url_setting = BASE_URL_SETTINGS.get(settings.provider)
    base_url = (
        getattr(settings, url_setting) if url_setting else getattr(cls, "default_base_url", "")
    )
    key_var = API_KEY_ENV.get(settings.provider)
    api_key = (env.get(key_var) or None) if key_var else None
    return cls(
        base_url,
        api_key=api_key,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.request_timeout,
    )
