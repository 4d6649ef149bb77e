"""The interactive app's slash commands, each a small handler registered in one table."""

from __future__ import annotations

import difflib
import time

from rich.text import Text

from tether.runtime import session_started
from tether.safety.permissions import RuleError
from tether.store.session import SessionCorrupt
from tether.ui.docs_pages import find_topic, page_text, topics, topics_listing

from ..terminal_ui import shown
from . import (
    agent_commands,
    connect_command,
    context_report,
    cost_command,
    export_command,
    git_commands,
    hook_commands,
    mcp_commands,
    project_commands,
    skill_commands,
)
from .context import CommandContext
from .evidence_view import print_evidence
from .table import CommandTable, on_off

# The commands defined here; the other command modules keep tables of their own, which
# `COMMANDS` (the one the app runs) joins below. They never import this module back.
HERE = CommandTable()
command = HERE.command


@command("help", "/help [TOPIC]", "list the commands; with TOPIC, print that page of the docs")
async def show_help(ctx: CommandContext, arg: str) -> None:
    if arg.strip():
        show_docs_page(ctx, arg.strip())
        return
    from rich.table import Table

    # Two columns that wrap between words within themselves: at 80 columns a long usage
    # (/mcp's) takes two lines of its own column instead of pushing every help text out.
    table = Table.grid(padding=(0, 2), pad_edge=True)
    table.add_column(style="bold", max_width=max(16, ctx.console.width * 2 // 5))
    table.add_column(ratio=1)
    for c in COMMANDS.all():
        table.add_row(Text(c.usage), Text(c.help))  # text, not rich markup: [NAME] stays
    ctx.console.print(table)
    ctx.say("Mention a file with @path to attach it; !command runs a shell command and keeps "
            "its output in the conversation. Alt-Enter or Ctrl-J adds a line; "
            "Ctrl-C stops a running request.")
    ctx.say("/help TOPIC prints a page of the docs: " + ", ".join(topics()) + ".")


def show_docs_page(ctx: CommandContext, word: str) -> None:
    """One page of the docs as its markdown text (ours, not the model's), or the topics."""
    topic = find_topic(word)
    if topic is None:
        ctx.say(f"No help topic {word!r}; " + topics_listing() + ".", "warning")
        return
    ctx.console.print(Text(page_text(topic)))


@command("exit", "/exit", "leave tether (Ctrl-D works too)")
async def exit_app(ctx: CommandContext, arg: str) -> None:
    ctx.exiting = True


@command("clear", "/clear", "start a new conversation (the old one stays saved)")
async def clear(ctx: CommandContext, arg: str) -> None:
    ctx.sessions.start_new()
    ctx.say("New conversation.")
    await session_started(ctx.runtime, "clear", ctx.sessions.record.id)


async def _toggle(ctx: CommandContext, arg: str, label: str, current: bool) -> bool | None:
    value = on_off(arg, current)
    if value is None:
        ctx.say(f"Use /{label} on or /{label} off.", "warning")
    return value


@command("think", "/think on|off", "show the model's reasoning, dimmed")
async def think(ctx: CommandContext, arg: str) -> None:
    value = await _toggle(ctx, arg, "think", ctx.show_thinking)
    if value is not None:
        ctx.show_thinking = value
        ctx.say(f"Reasoning is {'shown' if value else 'hidden'}.")


@command("automode", "/automode on|off", "run every call no deny rule forbids, without asking")
async def automode(ctx: CommandContext, arg: str) -> None:
    value = await _toggle(ctx, arg, "automode", ctx.runtime.auto)
    if value is not None:
        ctx.runtime.set_auto(value)
        ctx.say("Auto mode is on: calls run without asking (deny rules still apply)." if value
                else "Auto mode is off: side effects ask first.")


@command("model", "/model [NAME]", "show the model and the provider's models, or switch")
async def model(ctx: CommandContext, arg: str) -> None:
    await ctx.ready()
    runtime = ctx.runtime
    if arg:
        await _check_model_name(ctx, arg)
        ctx.protocol = await runtime.switch_model(arg)
        ctx.say(f"Model: {arg} ({ctx.protocol} tools).")
        return
    ctx.say(f"Model: {runtime.model} ({runtime.settings.provider}, {ctx.protocol} tools).")
    try:
        names = await ctx.runtime.provider.list_models()
    except Exception as exc:  # the list is a convenience; say why it is missing
        ctx.say(f"Could not list models: {exc}", "warning")
        return
    if names:
        ctx.say("Available: " + ", ".join(names[:40]))


async def _check_model_name(ctx: CommandContext, name: str) -> None:
    """Warn when the provider does not list `name` (a typo shows now, not at the next request);
    the switch happens anyway: a provider may serve models it does not list."""
    provider = ctx.runtime.settings.provider
    try:
        names = await ctx.runtime.provider.list_models()
    except Exception as exc:  # the check is a convenience; say it could not be made
        ctx.say(f"Could not check {name} against {provider}'s models: {exc}", "warning")
        return
    if not names or name in names or f"{name}:latest" in names:  # Ollama's untagged name
        return
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else " See /model for the list."
    ctx.say(f"{provider} does not list a model {name}; using it anyway.{hint}", "warning")


@command("usage", "/usage", "tokens used in this session")
async def usage(ctx: CommandContext, arg: str) -> None:
    u = ctx.sessions.conv.usage
    ctx.say(f"input {u.input_tokens:,} · output {u.output_tokens:,} · cached {u.cached_tokens:,} tokens")


@command("evidence", "/evidence", "the last request's tool calls: arguments, timings, results")
async def evidence(ctx: CommandContext, arg: str) -> None:
    found = ctx.sessions.conv.evidence
    if not found:
        ctx.say("No tool calls in the last request.")
        return
    print_evidence(ctx, found)
    agent_commands.show_agent_calls(ctx, {e.call.id for e in found})


@command("sessions", "/sessions", "the saved sessions of this folder")
async def sessions(ctx: CommandContext, arg: str) -> None:
    found = ctx.sessions.listing()
    if not found:
        ctx.say("No saved sessions for this folder.")
    for s in found[:30]:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.updated))
        state = f"corrupt: {s.corrupt}" if s.corrupt else f"{s.messages} messages"
        current = " (current)" if s.id == ctx.sessions.record.id else ""
        ctx.console.print(Text(f"  {s.id}  {when}  ", style="status"), shown(s.title or "(untitled)"),
                          Text(f"  {state}{current}", style="status"))


@command("load", "/load TITLE|ID", "continue a saved session")
async def load(ctx: CommandContext, arg: str) -> None:
    if not arg:
        ctx.say("Use /load followed by a title or an id (see /sessions).", "warning")
        return
    try:
        record = ctx.sessions.find(arg)
    except (LookupError, SessionCorrupt) as exc:
        ctx.say(str(exc), "error")
        return
    await ctx.sessions.save()
    ctx.sessions.switch_to(record)
    ctx.say(f"Loaded {record.title or record.id} ({len(record.messages)} messages).")
    last = next((m.text for m in reversed(record.messages) if m.role == "assistant" and m.text), "")
    if last:
        ctx.console.print(shown(last[-600:], "status"))


@command("save", "/save [TITLE]", "save the session now, optionally naming it")
async def save(ctx: CommandContext, arg: str) -> None:
    sessions = ctx.sessions
    if arg:
        sessions.rename(arg)
    await sessions.save()
    ctx.say(f"Saved as {sessions.record.title or sessions.record.id}.")


@command("title", "/title NAME", "rename this session")
async def title(ctx: CommandContext, arg: str) -> None:
    sessions = ctx.sessions
    if not arg:
        ctx.say(f"Title: {sessions.record.title or '(untitled)'}")
        return
    sessions.rename(arg)
    await sessions.save()
    ctx.say(f"Renamed to {arg}.")


@command("autotitle", "/autotitle on|off", "name new sessions automatically after the first exchange")
async def autotitle(ctx: CommandContext, arg: str) -> None:
    record = ctx.sessions.record
    value = await _toggle(ctx, arg, "autotitle", record.autotitle)
    if value is not None:
        record.autotitle = value
        ctx.say(f"Automatic titles {'on' if value else 'off'}.")


@command("compact", "/compact", "condense older history into a summary now")
async def compact(ctx: CommandContext, arg: str) -> None:
    await ctx.ready()
    compressor = ctx.runtime.compactor()
    if compressor is None:
        ctx.say("Context compression is switched off.", "warning")
        return
    messages = ctx.sessions.conv.messages
    before = len(messages)
    await ctx.run_cancellable(compressor.compact(messages))
    ctx.say(f"History: {before} → {len(messages)} messages.")


@command("undo", "/undo", "put back the newest change the assistant made")
async def undo(ctx: CommandContext, arg: str) -> None:
    outcome = ctx.runtime.git.undo()
    ctx.say(outcome.message, "info" if outcome.ok else "warning")


@command("autocommit", "/autocommit on|off|status", "commit each AI edit so it can be undone")
async def autocommit(ctx: CommandContext, arg: str) -> None:
    git = ctx.runtime.git
    if arg in ("", "status"):
        ctx.say(f"Auto-commit is {'on' if git.enabled else 'off'}.")
        for c in git.recent(10):
            when = time.strftime("%H:%M:%S", time.localtime(c.when))
            ctx.console.print(Text(f"  {c.sha[:8]} {when} ", style="status"), shown(c.message.splitlines()[0]))
        return
    value = on_off(arg, git.enabled)
    if value is None:
        ctx.say("Use /autocommit on, off or status.", "warning")
        return
    git.enabled = value
    ctx.say(f"Auto-commit is {'on' if value else 'off'}.")


@command("deepthink", "/deepthink on|off", "work each request as plan, check, build, review, verify")
async def deepthink(ctx: CommandContext, arg: str) -> None:
    value = await _toggle(ctx, arg, "deepthink", ctx.deepthink)
    if value is not None:
        ctx.deepthink = value
        ctx.say("Deepthink is on: each request runs in five stages." if value else "Deepthink is off.")


@command("planmode", "/planmode on|off", "require an approved plan before any change")
async def planmode(ctx: CommandContext, arg: str) -> None:
    ctx.say(ctx.runtime.set_plan_mode(arg))


@command("perms", "/perms [allow|deny RULE|reload]", "list or change the permission rules")
async def perms(ctx: CommandContext, arg: str) -> None:
    verb, _, text = arg.partition(" ")
    if verb in ("allow", "deny") and text.strip():
        try:
            ctx.runtime.add_session_rule(verb, text.strip())  # type: ignore[arg-type]
        except RuleError as exc:
            ctx.say(str(exc), "error")
            return
        ctx.say(f"{verb} {text.strip()} for this session.")
    elif verb == "reload":
        for warning in ctx.runtime.reload_rules():
            ctx.say(warning, "warning")
        ctx.say("Rules reloaded.")
    elif verb:
        ctx.say("Use /perms, /perms allow RULE, /perms deny RULE or /perms reload.", "warning")
        return
    lines = ctx.runtime.describe_rules()
    for line in lines or ["No rules: reads run, everything else asks."]:
        ctx.say("  " + line)


COMMANDS = CommandTable.joined(
    HERE,
    agent_commands.COMMANDS,
    connect_command.COMMANDS,
    context_report.COMMANDS,
    cost_command.COMMANDS,
    export_command.COMMANDS,
    git_commands.COMMANDS,
    hook_commands.COMMANDS,
    mcp_commands.COMMANDS,
    project_commands.COMMANDS,
    skill_commands.COMMANDS,
)
