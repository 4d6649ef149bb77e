"""The boundaries of a turn: the user's hooks on a submitted request and on the end of a
turn (the TurnHooks seam, which hooks/engine.py implements), and the answer checks.

The loop calls these as named steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.messages import Evidence, Image, Message, Text
from ..core.toolspec import ToolTable
from ..core.ui_protocol import UI

CHECKS_NOTE = (
    "Checks of your answer against this turn's tool results found problems:\n{found}\n"
    "Tools are disabled now. Answer the user again, saying only what the tool results show."
)
MAX_STOP_HOLDS = 3
"""How many times Stop hooks may keep one turn going."""


@dataclass(frozen=True)
class PromptScreening:
    """What the hooks on a submitted request decided."""

    refusal: str = ""
    """Why the request must not be sent ("" when it may)."""
    context: str = ""
    """Text the model reads with the request."""


class TurnHooks(Protocol):
    """Commands the user configured at a turn's boundaries (hooks/engine.py implements it)."""

    async def prompt_submitted(self, text: str) -> PromptScreening: ...

    async def stopping(self, answer: str, again: bool) -> str:
        """Why the turn must go on ("" lets it end); `again` once a hook kept it going."""
        ...


async def submit_prompt(hooks: TurnHooks | None, messages: list[Message], text: str, ui: UI,
                        images: Sequence[Image] = ()) -> str:
    """The UserPromptSubmit hooks on `text`: why the request is refused (told to `ui`), else
    "" once the request, with any context the hooks gave, is in `messages`."""
    screening = await hooks.prompt_submitted(text) if hooks is not None else PromptScreening()
    if screening.refusal:
        ui.notice(f"A UserPromptSubmit hook blocked the request: {screening.refusal}", "warning")
        return screening.refusal
    context = f"\n\n[Context from a hook]\n{screening.context}" if screening.context else ""
    messages.append(Message("user", [Text(text + context), *images]))
    return ""


async def stop_reason(hooks: TurnHooks | None, answer: str, holds: int) -> str:
    """What a Stop hook says the model must still do ("" lets the turn end); after
    MAX_STOP_HOLDS such reasons in one turn, the turn ends anyway."""
    if hooks is None or holds >= MAX_STOP_HOLDS:
        return ""
    reason = await hooks.stopping(answer, again=holds > 0)
    return f"A Stop hook asks you to go on: {reason}" if reason else ""


def answer_problems(
    text: str, evidence: list[Evidence], messages: list[Message], start: int, table: ToolTable
) -> list[str]:
    """The answer checks on `text`, the answer to the turn whose request is `messages[start]`
    and whose calls left `evidence`."""
    from .answer_checks import check_answer  # loaded at the first answer, not at the start
    from .answer_facts import gather_facts

    prompt = messages[start].text if start < len(messages) else ""
    facts = gather_facts(evidence, messages[:start], prompt,
                         lambda name: (tool := table.get(name)) is not None and tool.read_only)
    return check_answer(text, facts)


def correction_note(checks: list[str]) -> str:
    return CHECKS_NOTE.format(found="\n".join(f"- {check}" for check in checks))
