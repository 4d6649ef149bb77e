"""/connect: choose the provider, the server it is reached at, the model, and save a key.

A provider pointed at a server of one's own (a local OpenAI-compatible server, a proxy) may
need no key, so an empty answer to the key question is accepted there. The choice (provider,
model and, when it is not the provider's own, the base URL) is remembered for the next start;
a key only ever goes to the key store.
"""

from __future__ import annotations

from dataclasses import dataclass

from tether.host import StateFileError
from tether.providers import BASE_URL_SETTINGS, base_url_of, provider_names
from tether.providers.connect import (
    available_models,
    connection_status,
    may_skip_key,
    needs_key,
    status_line,
)
from tether.store.config import Settings, check_base_url, setting_default
from tether.store.keys import ConnectionStore, KeyStore, KeyStoreError, resolve_key

from ..asking import picked
from .context import CommandContext
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command


@dataclass(frozen=True)
class ConnectRequest:
    """What `/connect NAME [URL] [MODEL]` asked for; None where the user is to be asked."""

    name: str
    base_url: str | None
    model: str | None


def parse_connect(words: list[str]) -> ConnectRequest:
    """`NAME`, then an optional base URL (a word with `://`), then an optional model."""
    name, rest = words[0], words[1:]
    base_url = rest.pop(0).rstrip("/") if rest and "://" in rest[0] else None
    return ConnectRequest(name, base_url, rest[0] if rest else None)


@command("connect", "/connect [NAME [URL] [MODEL]|status]",
         "choose the provider, its server and model; save a key")
async def connect(ctx: CommandContext, arg: str) -> None:
    words = arg.split()
    if words[:1] == ["status"]:
        await _show_connections(ctx)
        return
    if words:
        request = parse_connect(words)
    else:
        name = await _pick_provider(ctx)
        if not name:
            return
        request = ConnectRequest(name, None, None)
    if request.name not in provider_names():
        ctx.say(f"Unknown provider {request.name!r}; choose one of: {', '.join(provider_names())}.",
                "warning")
        return
    asked = not words  # chosen from the list: ask for the server too
    settings = await _with_server(ctx, request, ask=asked)
    if settings is None or not await _ensure_key(ctx, settings):
        return
    await _switch(ctx, settings, request.model)


async def _show_connections(ctx: CommandContext) -> None:
    runtime = ctx.runtime
    for status in await connection_status(runtime.settings, runtime.env, runtime.home, runtime.model):
        ctx.say(status_line(status))


async def _pick_provider(ctx: CommandContext) -> str:
    await _show_connections(ctx)
    try:
        return (await ctx.ask_line("provider (empty to cancel): ")).strip()
    except (KeyboardInterrupt, EOFError):
        return ""


async def _with_server(ctx: CommandContext, request: ConnectRequest, ask: bool) -> Settings | None:
    """The settings to connect with: the provider, and the base URL given, asked for (when
    the provider was picked from the list) or kept. None when the URL is refused or the
    question is cancelled."""
    setting = BASE_URL_SETTINGS.get(request.name)
    current = ctx.runtime.settings
    url = request.base_url
    if url is not None and setting is None:
        ctx.say(f"{request.name} has no base URL to set; not switched.", "warning")
        return None
    if url is None and ask and setting is not None:
        kept = base_url_of(current, request.name)
        try:
            url = (await ctx.ask_line(f"base URL (Enter keeps {kept}): ", default=kept)).strip()
        except (KeyboardInterrupt, EOFError):
            ctx.say("Not switched.")
            return None
        url = url.rstrip("/") or kept
    changes: dict[str, str] = {"provider": request.name, "model": request.model or ""}
    if url is not None and setting is not None:
        try:
            check_base_url(url)
        except ValueError as exc:
            ctx.say(f"Cannot use {url!r} as the base URL: {exc}; not switched.", "warning")
            return None
        changes[setting] = url
    return current.with_changes(**changes)


async def _ensure_key(ctx: CommandContext, settings: Settings) -> bool:
    """Keys come from the environment first; a key typed here is saved under TETHER_HOME only.
    A server other than the provider's own may need none: an empty answer is accepted there."""
    name = settings.provider
    home = ctx.runtime.home
    store = KeyStore(home)
    key, _source = resolve_key(name, ctx.runtime.env, store)
    if key or not needs_key(name):
        return True
    url = base_url_of(settings, name)
    optional = may_skip_key(name, url)
    hint = "; empty if the server needs none" if optional else ""
    try:
        typed = (await ctx.ask_line(f"API key for {name} (saved to {home}, owner-only{hint}): ",
                                    secret=True)).strip()
    except (KeyboardInterrupt, EOFError):
        if optional:
            ctx.say("Not switched.")
            return False
        typed = ""
    if not typed:
        if optional:
            ctx.say(f"No key: {url} is asked without one.")
            return True
        ctx.say("No key given; not switched.", "warning")
        return False
    try:
        store.set(name, typed)
    except (KeyStoreError, OSError, ValueError) as exc:
        ctx.say(f"Could not save the key: {exc}", "error")
        return False
    ctx.say(f"Key saved for {name}.")
    return True


async def _switch(ctx: CommandContext, candidate: Settings, model: str | None) -> None:
    try:
        await ctx.rebuild(candidate)
    except ValueError as exc:
        ctx.say(str(exc), "error")
        return
    if model is None:
        model = await _pick_model(ctx)
        if model:
            ctx.protocol = await ctx.runtime.switch_model(model)
    name, chosen = candidate.provider, ctx.runtime.model
    url = base_url_of(candidate, name)
    ctx.say(f"Connected: {name} · {chosen} ({ctx.protocol} tools) at {url}.")
    _remember(ctx, name, chosen, url)


def _remember(ctx: CommandContext, name: str, model: str, url: str) -> None:
    """Keep the choice for the next start; the base URL only when it is not the provider's own
    default, so a later change of config.toml's URL still counts for the hosted API."""
    setting = BASE_URL_SETTINGS.get(name)
    default = str(setting_default(setting)) if setting else url
    try:
        ConnectionStore(ctx.runtime.home).remember(name, model, "" if url == default else url)
    except (StateFileError, ValueError) as exc:  # connected all the same; only the memory failed
        ctx.say(f"This connection is not remembered for next time: {exc}", "warning")


async def _pick_model(ctx: CommandContext) -> str:
    try:
        names = await available_models(ctx.runtime.provider)
    except Exception as exc:  # listing is a convenience: keep the default model
        ctx.say(f"Could not list models ({exc}); keeping {ctx.runtime.model}.", "warning")
        return ""
    if not names:
        return ""
    for i, n in enumerate(names[:30], 1):
        ctx.say(f"  {i:>2}. {n}")
    try:
        raw = (await ctx.ask_line("model (number or name, empty for the default): ")).strip()
    except (KeyboardInterrupt, EOFError):
        return ""
    return picked(raw, names, shown_options=30)
