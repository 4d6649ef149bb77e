"""`/hooks`: the hooks in use, event by event, each with the file it came from."""

from __future__ import annotations

from rich.text import Text

from tether.hooks.config import EVENTS, TOOL_EVENTS

from ..terminal_ui import shown
from .context import CommandContext
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command

NONE_CONFIGURED = ("No hooks. Add a `hooks` table to TETHER_HOME/config.toml or settings.json, "
                   "or to a trusted project's .tether/settings.json (tether help hooks shows the format).")


@command("hooks", "/hooks", "the hooks in use: event, matcher, command, and where each came from")
async def list_hooks(ctx: CommandContext, arg: str) -> None:
    hooks = ctx.runtime.hooks
    found = hooks.set if hooks is not None else None
    for warning in found.warnings if found is not None else []:
        ctx.say(warning, "warning")
    if found is None or not found.hooks:
        ctx.say(NONE_CONFIGURED)
        return
    for event in EVENTS:
        specs = [h for h in found.hooks if h.event == event]
        if not specs:
            continue
        ctx.console.print(Text(event, style="bold"))
        for spec in specs:
            line = Text("  ")
            if event in TOOL_EVENTS:
                line.append(f"[{spec.matcher or '*'}] ", style="tool")
            line.append_text(shown(spec.command))
            extra = f"timeout {spec.timeout:g}s" + (", strict" if spec.strict else "")
            line.append(f"  ({extra})", style="status")
            ctx.console.print(line)
            ctx.console.print(Text("    from ").append_text(shown(spec.source, "status")))
