"""The boundaries of a turn: the user's hooks on a submitted request and on the end of a
turn (the TurnHooks seam, which hooks/engine.py implements), and the answer checks.

The loop calls these as named steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .answer_checks import check_answer
from .answer_facts import gather_facts
from .messages import Message, Usage
from .toolspec import ToolTable
from .turn_assist import GateVerdict
from .ui_protocol import UI

if TYPE_CHECKING:
    from .loop import Conversation, ParseResult, Reply, TurnLoop, TurnResult, TurnState

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


async def submit_prompt(
    hooks: TurnHooks | None, conv: Conversation, text: str, ui: UI
) -> TurnResult | None:
    """The UserPromptSubmit hooks on `text`: the result of a refused request (told to `ui`),
    else None once the request, with any context the hooks gave, is in the history."""
    screening = await hooks.prompt_submitted(text) if hooks is not None else PromptScreening()
    if screening.refusal:
        from .loop import TurnResult  # the loop imports this module

        ui.notice(f"A UserPromptSubmit hook blocked the request: {screening.refusal}", "warning")
        return TurnResult("", "blocked", 0, Usage(), [], error=screening.refusal)
    context = f"\n\n[Context from a hook]\n{screening.context}" if screening.context else ""
    conv.messages.append(Message.user(text + context))
    return None


async def stop_reason(hooks: TurnHooks | None, answer: str, holds: int) -> str:
    """What a Stop hook says the model must still do ("" lets the turn end); after
    MAX_STOP_HOLDS such reasons in one turn, the turn ends anyway."""
    if hooks is None or holds >= MAX_STOP_HOLDS:
        return ""
    reason = await hooks.stopping(answer, again=holds > 0)
    return f"A Stop hook asks you to go on: {reason}" if reason else ""


def answer_problems(text: str, turn: TurnState, table: ToolTable) -> list[str]:
    """The answer checks on `text`, the answer to `turn`."""
    conv, start = turn.conv, turn.start
    messages = conv.messages
    prompt = messages[start].text if start < len(messages) else ""
    facts = gather_facts(conv.evidence, messages[:start], prompt,
                         lambda name: (tool := table.get(name)) is not None and tool.read_only)
    return check_answer(text, facts)


def correction_note(checks: list[str]) -> str:
    return CHECKS_NOTE.format(found="\n".join(f"- {check}" for check in checks))


async def conclude(loop: TurnLoop, turn: TurnState, reply: Reply, parsed: ParseResult) -> TurnResult | None:
    """The turn's answer, unless a Stop hook's reason to go on becomes the next message (None);
    checked, and with feedback on, corrected once in a tool-free request."""
    from .dispatch import first_line
    from .loop import assistant_message
    from .messages import Text

    verdict = await gate_verdict(turn)
    if verdict.again:  # the check after the change failed: the model gets it and goes on
        turn.conv.messages += [assistant_message(parsed, reply, loop.settings), Message.user(verdict.again)]
        loop.ui.notice("the check after the change failed: its output goes back to the model")
        return None
    reason = await stop_reason(loop.hooks, parsed.text, turn.stop_holds)
    if reason:
        turn.stop_holds += 1
        turn.conv.messages += [assistant_message(parsed, reply, loop.settings), Message.user(reason)]
        loop.ui.notice(f"Stop hook: {first_line(reason)}")
        return None
    text = parsed.text
    checks = loop.checks_of(turn, text)
    if checks and loop.settings.answer_check_feedback:
        turn.conv.messages.append(Message("assistant", [Text(text or "(empty reply)")]))
        loop.ui.notice(f"answer checks: {len(checks)} problem(s); asking for a corrected answer")
        reply = await loop.ask(turn, tools=False, note=correction_note(checks))
        text = loop.parse(reply).text
        checks = loop.checks_of(turn, text)
    if verdict.note:  # after the checks, which read the model's words: this line is the harness's
        text = f"{text.rstrip()}\n\n{verdict.note}" if text.strip() else verdict.note
        loop.ui.text(f"\n\n{verdict.note}\n")
    return loop.finish(turn, reply, text, checks=checks)


async def gate_verdict(turn: TurnState) -> GateVerdict:
    """What the turn's gate says of the answer about to end it; the calls it made join the
    turn's evidence (and a command it ran may have changed what reads would see)."""
    if turn.gate is None:
        return GateVerdict()
    verdict = await turn.gate.before_answer(turn.conv.evidence)
    if verdict.evidence:
        turn.conv.evidence.extend(verdict.evidence)
        turn.read_cache.clear()
    return verdict
