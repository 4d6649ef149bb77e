"""How a list of tool calls is shown: /evidence and /agents both print calls this way."""

from __future__ import annotations

import json

from rich.text import Text

from tether.core.messages import INVALID_JSON_KEY, Evidence
from tether.core.textclip import clip_words
from tether.ui.headless import describe_arguments, outcome_mark

from ..terminal_ui import shown
from .context import CommandContext


def arguments_text(arguments: dict) -> str:
    """The arguments as JSON (arguments that were not JSON as the text sent), at most 500 characters."""
    if INVALID_JSON_KEY in arguments:
        return describe_arguments(arguments, 500)
    return clip_words(json.dumps(arguments, ensure_ascii=False), 500)


def print_evidence(ctx: CommandContext, found: list[Evidence], indent: str = "") -> None:
    for i, e in enumerate(found, 1):
        mark = outcome_mark(e)
        ctx.console.print(shown(f"{indent}{i}. {mark} {e.call.name}", "bold"),
                          shown(f" {e.elapsed * 1000:.0f} ms · {e.summary}", "status"))
        ctx.console.print(shown(f"{indent}   " + arguments_text(e.call.arguments)))
        for line in e.details:
            ctx.console.print(shown(f"{indent}   · " + line[:300], "status"))
        lines = e.result.splitlines()
        for line in lines[:8]:
            ctx.console.print(shown(f"{indent}   │ " + line[:200], "status"))
        if len(lines) > 8:
            ctx.console.print(Text(f"{indent}   │ [... {len(lines) - 8} more lines ...]", style="status"))
