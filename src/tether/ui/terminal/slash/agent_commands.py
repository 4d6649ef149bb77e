"""`/agents`: this session's sub-agents with their state, steps, tokens and time."""

from __future__ import annotations

from ....core.textclip import clip_words
from ..terminal_ui import shown
from .context import CommandContext
from .evidence_view import print_evidence
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command


@command("agents", "/agents", "this session's sub-agents: state, steps, tokens, time, transcript")
async def agents(ctx: CommandContext, arg: str) -> None:
    runner = ctx.runtime.subagents
    if runner is None or not runner.runs:
        ctx.say("No sub-agents ran in this session (the model starts them with spawn_agent).")
        return
    for run in runner.runs:
        ctx.console.print(shown(run.headline(), "bold"))
        task = clip_words(run.task, 200)
        ctx.console.print(shown(f"   task: {task}"))
        if run.transcript is not None:
            ctx.console.print(shown(f"   transcript: {run.transcript}", "status"))
    total = runner.usage
    ctx.say(f"{len(runner.runs)} agents · input {total.input_tokens:,} · output "
            f"{total.output_tokens:,} tokens")


def show_agent_calls(ctx: CommandContext, parent_calls: set[str]) -> None:
    """After /evidence's own list: the calls of each agent one of those calls started."""
    runner = ctx.runtime.subagents
    for run in runner.runs if runner is not None else []:
        if run.parent_call in parent_calls and run.evidence:
            ctx.console.print(shown(f"  {run.headline()}", "bold"))
            print_evidence(ctx, run.evidence, indent="    ")
