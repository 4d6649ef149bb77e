"""What to talk to on a machine set up for nothing: the first run with nothing configured,
and `--local` without the `local` extra.

"Nothing configured" is the default provider (Ollama) that no file, flag, environment
variable or /connect chose. Then Ollama is asked, briefly, whether it is running; when it is
not, the user hears what was found (no Ollama, the API keys in the environment, whether the
`local` extra is installed) instead of a bare "cannot reach Ollama", with `--local` first
when it can run here.

`--local` through Ollama: when llama-cpp-python is not installed but an Ollama server answers
at its configured address, `--local` runs the model there. The default model goes under
Ollama's name for it (`ModelSpec.ollama`); if Ollama lacks it, it is pulled first
(`ollama.pull_model`, its progress told as notices). A GGUF file the user names (`--model
./x.gguf`) is checked first (there, readable, starting with the GGUF magic; before any
request), then hashed in a worker thread and imported under a name derived from its stem and
digest (`ollama.import_gguf`: the blob uploaded unless Ollama has it, then `/api/create`), unless
`/api/tags` already lists that name, so a file is imported once. Both follow the
`ollama_pull` setting: "ask" asks in the chat and, in `-p` where nobody is asked, stops with
one line naming the choices; "yes" pulls or imports without asking; "no" never does. A model
of another name from the cache still needs the extra. httpx and the Ollama client are
imported when used: the chat asks `may_go_through_ollama` before its prompt.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..store.config import Settings
from ..store.models import DEFAULT_MODEL, file_name, format_size, names_a_file
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
    """Ollama lacks the model and it was neither pulled nor imported (refused, not allowed,
    failed, or a file that cannot be imported); the message is one line that says what to
    do."""


@dataclass(frozen=True)
class OllamaRoute:
    """Where `--local` goes instead: the Ollama at `url`, its model `model`."""

    url: str
    model: str
    present: bool
    """Whether Ollama has the model already (`/api/tags`)."""


@dataclass(frozen=True)
class Refusals:
    """What stops a pull or an import, one line each: the setting says "no", -p has nobody to
    ask, the user said no."""

    never: str
    unasked: str
    declined: str


def may_go_through_ollama(settings: Settings) -> bool:
    """Whether `--local` could run through Ollama (asks no server): the local provider with
    the default model or a GGUF file (`--model ./x.gguf`), and llama-cpp-python not
    importable."""
    if settings.provider != "local" or local_installed():
        return False
    named = settings.model.strip()
    if names_a_file(named):
        return True
    return bool(DEFAULT_MODEL.ollama) and (
        not named or file_name(named) == file_name(DEFAULT_MODEL.name))


async def ollama_route(settings: Settings) -> OllamaRoute | None:
    """The Ollama to use instead, if one answers at the configured address."""
    from .ollama import has_model

    url = settings.ollama_host
    if not await ollama_running(url):
        return None
    return OllamaRoute(url, DEFAULT_MODEL.ollama, await has_model(url, DEFAULT_MODEL.ollama))


async def local_through_ollama(settings: Settings, say: Say, confirm: Confirm | None = None,
                               digests: Path | None = None) -> Settings:
    """The settings `--local` runs on: Ollama's copy of the model when the route applies
    (pulled or imported first if need be; `confirm` None: nobody to ask), else `settings`
    unchanged. NotPulled when Ollama lacks the model and it did not get there. `digests`
    remembers a GGUF file's hash between runs (None: hashed every time)."""
    if not may_go_through_ollama(settings):
        return settings
    if names_a_file(settings.model.strip()):
        return await gguf_through_ollama(settings, say, confirm, digests)
    route = await ollama_route(settings)
    if route is None:
        return settings
    say(f"tether[local] is not installed and Ollama answers at {route.url}: --local runs "
        f"{route.model} there")
    if not route.present:
        await pull_if_allowed(route, settings.ollama_pull, say, confirm)
    return settings.with_changes(provider="ollama", model=route.model)


async def allowed(choice: str, confirm: Confirm | None, question: str, refusals: Refusals) -> None:
    """Returns when `choice` (the ollama_pull setting), and the user when it says "ask",
    allow the pull or import; NotPulled with the right refusal when not."""
    if choice == "no":
        raise NotPulled(refusals.never)
    if choice == "ask" and confirm is None:
        raise NotPulled(refusals.unasked)
    if choice == "ask" and confirm is not None and not await confirm(question):
        raise NotPulled(refusals.declined)


async def pull_if_allowed(route: OllamaRoute, choice: str, say: Say, confirm: Confirm | None) -> None:
    """Pull the route's model as `choice` (the ollama_pull setting) allows; NotPulled when not."""
    from ..store.model_download import ProgressNotices
    from .ollama import PullError, pull_model

    size = f"about {format_size(DEFAULT_MODEL.size)}"
    await allowed(choice, confirm, f"Pull {route.model} into Ollama ({size})?", Refusals(
        never=f"Ollama at {route.url} does not have {route.model} and ollama_pull is \"no\": "
              f"pull it with `ollama pull {route.model}`, or {INSTALL_LOCAL}",
        unasked=f"Ollama at {route.url} does not have {route.model} and -p asks nothing: run "
                f"`ollama pull {route.model}` ({size}), or set ollama_pull = \"yes\" in "
                f"TETHER_HOME/config.toml to let --local pull it, or {INSTALL_LOCAL} to run it "
                "in this process",
        declined=f"Not pulled: run `ollama pull {route.model}`, or {INSTALL_LOCAL}, then "
                 "`tether --local` again; /connect chooses another provider meanwhile."))
    say(f"pulling {route.model} into Ollama at {route.url} (Ctrl-C stops it; a later pull "
        "resumes)")
    try:
        await pull_model(route.url, route.model, ProgressNotices(route.model, say, "pulling"))
    except PullError as exc:
        raise NotPulled(str(exc)) from None
    say(f"pulled {route.model}")


# ---------------------------------------------------------------- a GGUF file through Ollama


@dataclass(frozen=True)
class GgufFile:
    path: Path
    size: int
    digest: str
    """Its SHA-256, hex."""


async def gguf_through_ollama(settings: Settings, say: Say, confirm: Confirm | None,
                              digests: Path | None = None) -> Settings:
    """`--local --model ./x.gguf` run by Ollama: the file is checked before any request,
    then, when Ollama answers, imported under its derived name unless Ollama lists it."""
    import asyncio

    from ..store.file_digests import cached_sha256
    from .ollama import has_model, ollama_name

    path = Path(settings.model.strip()).expanduser()
    check_importable(path)
    url = settings.ollama_host
    if not await ollama_running(url):
        return settings
    try:
        digest = await asyncio.to_thread(cached_sha256, path, digests)
        gguf = GgufFile(path, path.stat().st_size, digest)
    except OSError as exc:
        raise NotPulled(f"cannot read {path}: {exc.strerror or exc}") from None
    name = ollama_name(path, gguf.digest)
    say(f"tether[local] is not installed and Ollama answers at {url}: --local runs "
        f"{path.name} there, as {name}")
    if not await has_model(url, name):
        await import_if_allowed(gguf, OllamaRoute(url, name, False), settings.ollama_pull, say,
                                confirm)
    return settings.with_changes(provider="ollama", model=name)


def check_importable(path: Path) -> None:
    """NotPulled, one line, unless `path` is a readable regular file that starts like a GGUF."""
    from .base import ProviderError
    from .local import check_gguf

    if not path.exists():
        raise NotPulled(f"no model file at {path}")
    try:
        check_gguf(path)
    except ProviderError as exc:
        raise NotPulled(str(exc)) from None


async def import_if_allowed(gguf: GgufFile, route: OllamaRoute, choice: str, say: Say,
                            confirm: Confirm | None) -> None:
    """Import the file as `choice` (the ollama_pull setting) allows; NotPulled when not."""
    from ..store.model_download import ProgressNotices
    from .ollama import PullError, import_gguf

    path, size = gguf.path, format_size(gguf.size)
    await allowed(choice, confirm, f"Import {path.name} into Ollama as {route.model} ({size})?",
                  Refusals(
        never=f"Ollama at {route.url} does not have {path.name} and ollama_pull is \"no\", so "
              f"--local does not import it: {INSTALL_LOCAL} to run it in this process",
        unasked=f"Ollama at {route.url} does not have {path.name} and -p asks nothing: set "
                f"ollama_pull = \"yes\" in TETHER_HOME/config.toml to let --local import it "
                f"({size}), or {INSTALL_LOCAL} to run it in this process",
        declined=f"Not imported: {INSTALL_LOCAL} to run {path.name} in this process; "
                 "/connect chooses another provider meanwhile."))
    say(f"importing {path.name} into Ollama at {route.url} as {route.model} (Ctrl-C stops it)")
    try:
        await import_gguf(route.url, route.model, path, gguf.digest,
                          ProgressNotices(path.name, say, "importing"))
    except PullError as exc:
        raise NotPulled(str(exc)) from None
    say(f"imported {path.name} as {route.model}")


def stopped_line(settings: Settings) -> str:
    """What the chat says when Ctrl-C stopped the pull or the import."""
    if names_a_file(settings.model.strip()):
        return "Import stopped: nothing was added to Ollama; the next `tether --local` tries again."
    return "Pull stopped: Ollama keeps what it fetched and the next pull resumes it."
