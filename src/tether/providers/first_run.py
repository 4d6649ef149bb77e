"""The first run with nothing configured: what was found, and what the user can do.

"Nothing configured" is the default provider (Ollama) that no file, flag, environment
variable or /connect chose. Then Ollama is asked, briefly, whether it is running; when it is
not, the user hears what was found (no Ollama, the API keys in the environment, whether the
`local` extra is installed) instead of a bare "cannot reach Ollama", with `--local` first
when it can run here.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from ..store.config import Settings
from ..store.models import DEFAULT_MODEL, format_size
from . import API_KEY_ENV

PROBE_TIMEOUT = 1.5
INSTALL_LOCAL = "pip install 'tether[local]'"


@dataclass(frozen=True)
class Findings:
    ollama_url: str
    ollama_running: bool
    keys: tuple[str, ...]
    """The providers' key variables set in the environment."""
    local_installed: bool


def unconfigured(settings: Settings) -> bool:
    """Whether the provider is the default one that nobody chose."""
    return "provider" not in settings.given and settings.provider == "ollama"


def local_installed() -> bool:
    """Whether llama-cpp-python (the `local` extra) can be imported, without importing it."""
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


async def ollama_running(url: str, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether a server answers at Ollama's URL. Any answer counts: a server that is not
    Ollama is the chat's business to report, with the words of the request that fails."""
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            await client.get(url.rstrip("/") + "/api/version")
    except httpx.HTTPError:
        return False
    return True


async def survey(settings: Settings, env: Mapping[str, str]) -> Findings:
    keys = tuple(var for names in API_KEY_ENV.values() for var in names if env.get(var))
    return Findings(settings.ollama_host, await ollama_running(settings.ollama_host), keys,
                    local_installed())


def found_text(findings: Findings) -> str:
    keys = ("API keys in the environment: " + ", ".join(findings.keys)) if findings.keys \
        else "no API key in the environment"
    local = "tether[local] is installed" if findings.local_installed \
        else "tether[local] is not installed"
    return f"no Ollama at {findings.ollama_url}, {keys}, {local}"


def one_shot_error(findings: Findings) -> str:
    """The -p mode's one line: nothing is asked, the choices are named."""
    local = ("run the small model here with --local" if findings.local_installed
             else f"{INSTALL_LOCAL} and run the small model here with --local")
    keyed = "; or --provider for the key you have" if findings.keys else ""
    return (f"no model to talk to ({found_text(findings)}): {local}, or choose a provider "
            f"with /connect in the chat (`tether`){keyed}")


def chat_choices(findings: Findings) -> list[str]:
    """The chat's lines: what was found, then the choices, `--local` first when it can run."""
    local = (f"`tether --local`: runs {DEFAULT_MODEL.name} in this process "
             f"({format_size(DEFAULT_MODEL.size)}, fetched once into your cache)")
    install = f"`{INSTALL_LOCAL}`, then `tether --local`: a small model in this process"
    connect = "`/connect`: choose a provider, a server or an API key"
    ollama = f"start Ollama (`ollama serve`) at {findings.ollama_url}"
    choices = [local, connect, ollama] if findings.local_installed else [connect, install, ollama]
    return [f"Nothing to talk to yet: {found_text(findings)}. You can:"] + [
        f"  {n}. {choice}" for n, choice in enumerate(choices, 1)]
