"""What to talk to on a machine set up for nothing: the first run with nothing configured,
and `--local` without the `local` extra.

"Nothing configured" is the default provider (Ollama) that no file, flag, environment
variable or /connect chose. Then Ollama is asked, briefly, whether it is running; when it is
not, the user hears what was found (no Ollama, the API keys in the environment, whether the
`local` extra is installed) instead of a bare "cannot reach Ollama", with `--local` first
when it can run here.

`--local` through Ollama: when llama-cpp-python is not installed but an Ollama server answers
at its configured address, `--local` runs the same model there, under Ollama's name for it
(`ModelSpec.ollama`). If Ollama lacks it, it is pulled first (`ollama.pull_model`, its
progress told as notices) as the `ollama_pull` setting says: "ask" asks in the chat and, in
`-p` where nobody is asked, stops with one line naming the choices; "yes" pulls without
asking; "no" never pulls. Only the default model has an Ollama name: `--local --model
./x.gguf`, or a cached model of another name, needs the extra. httpx and the Ollama client
are imported when used: the chat asks `may_go_through_ollama` before its prompt.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from ..store.config import Settings
from ..store.models import DEFAULT_MODEL, file_name, format_size
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
    import httpx

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


# ---------------------------------------------------------------- --local through Ollama

Say = Callable[[str], None]
Confirm = Callable[[str], Awaitable[bool]]
"""Asks a yes/no question; True for yes."""


class NotPulled(Exception):
    """Ollama lacks the model and it was not pulled (refused, not allowed, or failed); the
    message is one line that says what to do."""


@dataclass(frozen=True)
class OllamaRoute:
    """Where `--local` goes instead: the Ollama at `url`, its model `model`."""

    url: str
    model: str
    present: bool
    """Whether Ollama has the model already (`/api/tags`)."""


def may_go_through_ollama(settings: Settings) -> bool:
    """Whether `--local` could run through Ollama (asks no server): the local provider with
    the default model, and llama-cpp-python not importable."""
    if settings.provider != "local" or not DEFAULT_MODEL.ollama:
        return False
    named = settings.model.strip()
    return (not named or file_name(named) == file_name(DEFAULT_MODEL.name)) and not local_installed()


async def ollama_route(settings: Settings) -> OllamaRoute | None:
    """The Ollama to use instead, if one answers at the configured address."""
    from .ollama import has_model

    url = settings.ollama_host
    if not await ollama_running(url):
        return None
    return OllamaRoute(url, DEFAULT_MODEL.ollama, await has_model(url, DEFAULT_MODEL.ollama))


async def local_through_ollama(settings: Settings, say: Say, confirm: Confirm | None = None) -> Settings:
    """The settings `--local` runs on: Ollama's copy of the model when the route applies
    (pulled first if need be; `confirm` None: nobody to ask), else `settings` unchanged.
    NotPulled when Ollama lacks the model and it was not pulled."""
    if not may_go_through_ollama(settings):
        return settings
    route = await ollama_route(settings)
    if route is None:
        return settings
    say(f"tether[local] is not installed and Ollama answers at {route.url}: --local runs "
        f"{route.model} there")
    if not route.present:
        await pull_if_allowed(route, settings.ollama_pull, say, confirm)
    return settings.with_changes(provider="ollama", model=route.model)


async def pull_if_allowed(route: OllamaRoute, choice: str, say: Say, confirm: Confirm | None) -> None:
    """Pull the route's model as `choice` (the ollama_pull setting) allows; NotPulled when not."""
    from ..store.model_download import ProgressNotices
    from .ollama import PullError, pull_model

    size = f"about {format_size(DEFAULT_MODEL.size)}"
    if choice == "no":
        raise NotPulled(f"Ollama at {route.url} does not have {route.model} and ollama_pull is "
                        f"\"no\": pull it with `ollama pull {route.model}`, or {INSTALL_LOCAL}")
    if choice == "ask" and confirm is None:
        raise NotPulled(f"Ollama at {route.url} does not have {route.model} and -p asks nothing: "
                        f"run `ollama pull {route.model}` ({size}), or set ollama_pull = \"yes\" "
                        f"in TETHER_HOME/config.toml to let --local pull it, or {INSTALL_LOCAL} "
                        "to run it in this process")
    if choice == "ask" and confirm is not None \
            and not await confirm(f"Pull {route.model} into Ollama ({size})?"):
        raise NotPulled(f"Not pulled: run `ollama pull {route.model}`, or {INSTALL_LOCAL}, then "
                        "`tether --local` again; /connect chooses another provider meanwhile.")
    say(f"pulling {route.model} into Ollama at {route.url} (Ctrl-C stops it; a later pull "
        "resumes)")
    try:
        await pull_model(route.url, route.model, ProgressNotices(route.model, say, "pulling"))
    except PullError as exc:
        raise NotPulled(str(exc)) from None
    say(f"pulled {route.model}")
