"""The interactive app's slash commands, each a small handler registered in one table."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from tether.safety.permissions import Rule, RuleError, load_rules
from tether.store.session import SessionCorrupt
from tether.ui.headless import outcome_mark

from ..terminal_ui import shown
from .table import CommandTable, on_off

if TYPE_CHECKING:
    from ..app import App

COMMANDS = CommandTable()
command = COMMANDS.command


@command("help", "/help", "list the commands")
async def show_help(app: App, arg: str) -> None:
    width = max(len(c.usage) for c in COMMANDS.all()) + 1  # the longest usage still gets a gap
    for c in COMMANDS.all():
        app.console.print(Text(f"  {c.usage:<{width}}", style="bold"), Text(c.help))
    app.say("Mention a file with @path to attach it. Alt-Enter or Ctrl-J adds a line; "
            "Ctrl-C stops a running request.")


@command("exit", "/exit", "leave tether (Ctrl-D works too)")
async def exit_app(app: App, arg: str) -> None:
    app.exiting = True


@command("clear", "/clear", "start a new conversation (the old one stays saved)")
async def clear(app: App, arg: str) -> None:
    from tether.core.loop import Conversation

    app.conv = Conversation()
    app.record = app.store.new(app.options.root, app.settings.provider, app.runtime.loop.settings.model)
    app.say("New conversation.")


async def _toggle(app: App, arg: str, label: str, current: bool) -> bool | None:
    value = on_off(arg, current)
    if value is None:
        app.say(f"Use /{label} on or /{label} off.", "warning")
    return value


@command("think", "/think on|off", "show the model's reasoning, dimmed")
async def think(app: App, arg: str) -> None:
    value = await _toggle(app, arg, "think", app.ui.show_thinking)
    if value is not None:
        app.ui.show_thinking = value
        app.say(f"Reasoning is {'shown' if value else 'hidden'}.")


@command("automode", "/automode on|off", "run every call no deny rule forbids, without asking")
async def automode(app: App, arg: str) -> None:
    value = await _toggle(app, arg, "automode", app.options.auto)
    if value is not None:
        app.options.auto = value
        app.runtime.policy.auto = value
        app.say("Auto mode is on: calls run without asking (deny rules still apply)." if value
                else "Auto mode is off: side effects ask first.")


@command("model", "/model [NAME]", "show the model and the provider's models, or switch")
async def model(app: App, arg: str) -> None:
    await app.ready()
    loop = app.runtime.loop
    if arg:
        loop.settings.model = arg
        app.protocol = await app.runtime.start()
        app.say(f"Model: {arg} ({app.protocol} tools).")
        return
    app.say(f"Model: {loop.settings.model} ({app.settings.provider}, {app.protocol} tools).")
    try:
        names = await app.runtime.provider.list_models()
    except Exception as exc:  # the list is a convenience; say why it is missing
        app.say(f"Could not list models: {exc}", "warning")
        return
    if names:
        app.say("Available: " + ", ".join(names[:40]))


@command("usage", "/usage", "tokens used in this session")
async def usage(app: App, arg: str) -> None:
    u = app.conv.usage
    app.say(f"input {u.input_tokens:,} · output {u.output_tokens:,} · cached {u.cached_tokens:,} tokens")


@command("evidence", "/evidence", "the last request's tool calls: arguments, timings, results")
async def evidence(app: App, arg: str) -> None:
    if not app.conv.evidence:
        app.say("No tool calls in the last request.")
        return
    for i, e in enumerate(app.conv.evidence, 1):
        mark = outcome_mark(e)
        app.console.print(shown(f"{i}. {mark} {e.call.name}", "bold"),
                          shown(f" {e.elapsed * 1000:.0f} ms · {e.summary}", "status"))
        app.console.print(shown("   " + json.dumps(e.call.arguments, ensure_ascii=False)[:500]))
        lines = e.result.splitlines()
        for line in lines[:8]:
            app.console.print(shown("   │ " + line[:200], "status"))
        if len(lines) > 8:
            app.console.print(Text(f"   │ [... {len(lines) - 8} more lines ...]", style="status"))


@command("sessions", "/sessions", "the saved sessions of this folder")
async def sessions(app: App, arg: str) -> None:
    found = app.store.list(app.options.root)
    if not found:
        app.say("No saved sessions for this folder.")
    for s in found[:30]:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.updated))
        state = f"corrupt: {s.corrupt}" if s.corrupt else f"{s.messages} messages"
        current = " (current)" if s.id == app.record.id else ""
        app.console.print(Text(f"  {s.id}  {when}  ", style="status"), shown(s.title or "(untitled)"),
                          Text(f"  {state}{current}", style="status"))


@command("load", "/load TITLE|ID", "continue a saved session")
async def load(app: App, arg: str) -> None:
    if not arg:
        app.say("Use /load followed by a title or an id (see /sessions).", "warning")
        return
    try:
        record = app.store.load(arg, app.options.root)
    except (LookupError, SessionCorrupt) as exc:
        app.say(str(exc), "error")
        return
    await app.save_session()
    app.record = record
    app.conv = record.to_conversation()
    app.say(f"Loaded {record.title or record.id} ({len(record.messages)} messages).")
    last = next((m.text for m in reversed(record.messages) if m.role == "assistant" and m.text), "")
    if last:
        app.console.print(shown(last[-600:], "status"))


@command("save", "/save [TITLE]", "save the session now, optionally naming it")
async def save(app: App, arg: str) -> None:
    if arg:
        app.record.title, app.record.autotitle = arg, False
    await app.save_session()
    app.say(f"Saved as {app.record.title or app.record.id}.")


@command("title", "/title NAME", "rename this session")
async def title(app: App, arg: str) -> None:
    if not arg:
        app.say(f"Title: {app.record.title or '(untitled)'}")
        return
    app.record.title, app.record.autotitle = arg, False
    await app.save_session()
    app.say(f"Renamed to {arg}.")


@command("autotitle", "/autotitle on|off", "name new sessions automatically after the first exchange")
async def autotitle(app: App, arg: str) -> None:
    value = await _toggle(app, arg, "autotitle", app.record.autotitle)
    if value is not None:
        app.record.autotitle = value
        app.say(f"Automatic titles {'on' if value else 'off'}.")


@command("export", "/export json|md [PATH]", "write this conversation to a file")
async def export(app: App, arg: str) -> None:
    fmt, _, where = arg.partition(" ")
    if fmt not in ("json", "md"):
        app.say("Use /export json [path] or /export md [path].", "warning")
        return
    app.record.update_from(app.conv)
    path = Path(where.strip() or f"tether-{app.record.id}.{fmt}").expanduser()
    path = path if path.is_absolute() else app.options.root / path
    try:
        written = app.store.export(app.record, fmt, path)  # type: ignore[arg-type]
    except OSError as exc:
        app.say(f"Could not export: {exc}", "error")
        return
    app.say(f"Wrote {written}.")


@command("compact", "/compact", "condense older history into a summary now")
async def compact(app: App, arg: str) -> None:
    await app.ready()
    guard = app.runtime.loop.guard
    if guard is None or not hasattr(guard, "compact"):
        app.say("Context compression is switched off.", "warning")
        return
    before = len(app.conv.messages)
    await app.run_cancellable(guard.compact(app.conv.messages))
    app.say(f"History: {before} → {len(app.conv.messages)} messages.")


@command("undo", "/undo", "put back the newest change the assistant made")
async def undo(app: App, arg: str) -> None:
    outcome = app.runtime.git.undo()
    app.say(outcome.message, "info" if outcome.ok else "warning")


@command("autocommit", "/autocommit on|off|status", "commit each AI edit so it can be undone")
async def autocommit(app: App, arg: str) -> None:
    git = app.runtime.git
    if arg in ("", "status"):
        app.say(f"Auto-commit is {'on' if git.enabled else 'off'}.")
        for c in git.recent(10):
            when = time.strftime("%H:%M:%S", time.localtime(c.when))
            app.console.print(Text(f"  {c.sha[:8]} {when} ", style="status"), shown(c.message.splitlines()[0]))
        return
    value = on_off(arg, git.enabled)
    if value is None:
        app.say("Use /autocommit on, off or status.", "warning")
        return
    git.enabled = value
    app.say(f"Auto-commit is {'on' if value else 'off'}.")


@command("deepthink", "/deepthink on|off", "work each request as plan, check, build, review, verify")
async def deepthink(app: App, arg: str) -> None:
    value = await _toggle(app, arg, "deepthink", app.deepthink)
    if value is not None:
        app.deepthink = value
        app.say("Deepthink is on: each request runs in five stages." if value else "Deepthink is off.")


@command("planmode", "/planmode on|off", "require an approved plan before any change")
async def planmode(app: App, arg: str) -> None:
    app.say(app.runtime.set_plan_mode(arg, app.approve_plan))


@command("perms", "/perms [allow|deny RULE|reload]", "list or change the permission rules")
async def perms(app: App, arg: str) -> None:
    verb, _, text = arg.partition(" ")
    if verb in ("allow", "deny") and text.strip():
        try:
            app.runtime.rules.add(verb, Rule.parse(text.strip(), "session"))  # type: ignore[arg-type]
        except RuleError as exc:
            app.say(str(exc), "error")
            return
        app.say(f"{verb} {text.strip()} for this session.")
    elif verb == "reload":
        rules, warnings = load_rules(app.options.root, app.options.home,
                                     trusted=app.options.trusted, extra_allow=app.options.allow,
                                     extra_deny=app.options.deny)
        # The files are re-read (command-line rules come with them); session rules carry over.
        current = app.runtime.rules
        rules.carry_session_rules(current)
        current.allow[:], current.deny[:] = rules.allow, rules.deny
        for warning in warnings:
            app.say(warning, "warning")
        app.say("Rules reloaded.")
    elif verb:
        app.say("Use /perms, /perms allow RULE, /perms deny RULE or /perms reload.", "warning")
        return
    lines = app.runtime.rules.describe(app.runtime.table.access())
    for line in lines or ["No rules: reads run, everything else asks."]:
        app.say("  " + line)


@command("connect", "/connect [NAME [MODEL]|status]", "choose the provider and model; save a key")
async def connect(app: App, arg: str) -> None:
    from tether.providers.connect import connection_status, status_line

    words = arg.split()
    if words[:1] == ["status"]:
        for status in await connection_status(app.settings, app.env, app.options.home):
            app.say(status_line(status))
        return
    name = words[0] if words else await _pick_provider(app)
    if not name:
        return
    from tether.providers import provider_names

    if name not in provider_names():
        app.say(f"Unknown provider {name!r}; choose one of: {', '.join(provider_names())}.", "warning")
        return
    if not await _ensure_key(app, name):
        return
    await _switch(app, name, words[1] if len(words) > 1 else None)


async def _pick_provider(app: App) -> str:
    from tether.providers.connect import connection_status, status_line

    for status in await connection_status(app.settings, app.env, app.options.home):
        app.say(status_line(status))
    try:
        return (await app.ask_line("provider (empty to cancel): ")).strip()
    except (KeyboardInterrupt, EOFError):
        return ""


async def _ensure_key(app: App, name: str) -> bool:
    """Keys come from the environment first; a key typed here is saved under TETHER_HOME only."""
    from tether.providers.connect import needs_key
    from tether.store.keys import KeyStore, KeyStoreError, resolve_key

    store = KeyStore(app.options.home)
    key, source = resolve_key(name, app.env, store)
    if key or not needs_key(name):
        return True
    try:
        typed = (await app.ask_line(f"API key for {name} (saved to {app.options.home}, owner-only): ",
                                    secret=True)).strip()
    except (KeyboardInterrupt, EOFError):
        typed = ""
    if not typed:
        app.say("No key given; not switched.", "warning")
        return False
    try:
        store.set(name, typed)
    except (KeyStoreError, OSError, ValueError) as exc:
        app.say(f"Could not save the key: {exc}", "error")
        return False
    app.say(f"Key saved for {name}.")
    return True


async def _switch(app: App, name: str, model: str | None) -> None:
    from tether.store.keys import ConnectionStore
    from tether.store.statefile import StateFileError

    candidate = app.settings.model_copy(update={"provider": name, "model": model or ""})
    try:
        await app.rebuild(candidate)
    except ValueError as exc:
        app.say(str(exc), "error")
        return
    if model is None:
        model = await _pick_model(app)
        if model:
            app.runtime.loop.settings.model = model
            app.protocol = await app.runtime.start()
    chosen = app.runtime.loop.settings.model
    app.say(f"Connected: {name} · {chosen} ({app.protocol} tools).")
    try:
        ConnectionStore(app.options.home).remember(name, chosen)
    except StateFileError as exc:  # connected all the same; only the memory of it failed
        app.say(f"This connection is not remembered for next time: {exc}", "warning")


async def _pick_model(app: App) -> str:
    from tether.providers.connect import available_models

    try:
        names = await available_models(app.runtime.provider)
    except Exception as exc:  # listing is a convenience: keep the default model
        app.say(f"Could not list models ({exc}); keeping {app.runtime.loop.settings.model}.", "warning")
        return ""
    if not names:
        return ""
    for i, n in enumerate(names[:30], 1):
        app.say(f"  {i:>2}. {n}")
    try:
        raw = (await app.ask_line("model (number or name, empty for the default): ")).strip()
    except (KeyboardInterrupt, EOFError):
        return ""
    if raw.isdigit() and 0 < int(raw) <= min(len(names), 30):
        return names[int(raw) - 1]
    return raw
