"""/cost: the tokens this session used, and what they cost on a hosted model the price table knows."""

from __future__ import annotations

from tether.core.messages import Usage
from tether.providers.prices import PRICES_DATE, dollars, estimated_cost

from .context import CommandContext
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command


def cost_line(provider: str, model: str, usage: Usage) -> str:
    """Tokens in (of which cached) and out, then the estimate or why there is none."""
    tokens = (f"{usage.input_tokens:,} tokens in ({usage.cached_tokens:,} cached), "
              f"{usage.output_tokens:,} out")
    cost = estimated_cost(provider, model, usage)
    if cost is None:
        return f"{tokens}; price unknown for {provider} {model} (tokens only)"
    return f"{tokens}; about {dollars(cost)} at {model}'s prices (USD, price table of {PRICES_DATE})"


@command("cost", "/cost", "tokens this session used, and their price on a known hosted model")
async def cost(ctx: CommandContext, arg: str) -> None:
    runtime = ctx.runtime
    ctx.say("This session: " + cost_line(runtime.settings.provider, runtime.model,
                                         ctx.sessions.conv.usage))
