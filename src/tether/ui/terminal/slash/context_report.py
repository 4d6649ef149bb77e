"""`/context`: what the next request would hold, part by part, with token estimates."""

from __future__ import annotations

from rich.text import Text

from tether.engine.context import TokenEstimator
from tether.skills.catalog import prompt_index

from ..terminal_ui import shown
from .context import CommandContext
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command


def estimator_of(ctx: CommandContext) -> TokenEstimator:
    """The guard's calibrated estimator when there is one, else a fresh one."""
    found = getattr(ctx.runtime.compactor(), "estimator", None)
    return found if isinstance(found, TokenEstimator) else TokenEstimator()


@command("context", "/context", "what the context holds: prompt, instructions, tools, history")
async def show_context(ctx: CommandContext, arg: str) -> None:
    await ctx.ready()
    runtime, est = ctx.runtime, estimator_of(ctx)
    mode = runtime.loop.mode

    def tokens(raw: float) -> str:
        return f"{est.calibrated(raw):,} tokens"

    system, context = runtime.system_prompt(mode), runtime.context()
    rows: list[tuple[str, str]] = [("system prompt", tokens(est.text_cost(system))),
                                   ("project context", tokens(est.text_cost(context)))]
    for found in runtime.instructions.files:
        rows.append((f"  instructions {found.path}", tokens(est.text_cost(found.text))))
    if runtime.instructions.cut:
        rows.append(("  " + runtime.instructions.cut, ""))
    for path in runtime.instructions.skipped:
        rows.append((f"  instructions {path} skipped: its folder is not trusted", ""))
    if runtime.skills is not None:
        index = prompt_index(runtime.skills.catalog.skills)
        rows.append((f"  skill index ({len(runtime.skills.catalog.skills)} skills)",
                     tokens(est.text_cost(index))))
    offered = runtime.loop.offered()
    where = "native schemas" if mode == "native" else "in the system prompt's menu"
    schemas = est.tools_cost(offered) if mode == "native" else 0.0
    rows.append((f"tools ({len(offered)}, {where})", tokens(schemas) if schemas else ""))
    history = ctx.sessions.conv.messages
    history_cost = sum(est.message_cost(m) for m in history)
    rows.append((f"history ({len(history)} messages)", tokens(history_cost)))
    total = est.text_cost(system) + est.text_cost(context) + schemas + history_cost
    window = runtime.context_window
    rows.append(("total", tokens(total) + (f" of {window:,}" if window else "")))
    width = max(len(label) for label, _ in rows) + 2
    for label, value in rows:
        ctx.console.print(Text("  ").append_text(shown(f"{label:<{width}}")).append(value))
