"""get_user_input: the model asks the user a few questions and waits for the answers.

The questions go through an `Asker` the front end supplies (the terminal UI
shows them, with any options plus a free-text answer). Where nobody can
answer (one-shot `-p` mode) the call fails with a message
telling the model to proceed on a stated assumption. It fails (`is_error`)
rather than succeeding with that message so the evidence shows honestly that
no question was answered.

Approval: the tool is `reads=False`, so the loop never answers a repeated
question from its cache of read results, and `needs_approval=False`: asking
needs no approval of its own (the user is about to be asked anyway).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from tether.core.toolspec import Tool, ToolContext, ToolError, ToolOutput

from .limits import params_named

if TYPE_CHECKING:
    from .params import AskParams, Question

ASK_TIMEOUT = 24 * 3600.0
"""Seconds to wait for the user: a person may step away; Ctrl-C still cancels at once."""
NO_ANSWER = "(no answer)"

NOBODY_CAN_ANSWER = (
    "Nobody can answer questions here (no interactive user in this mode). "
    "Do not ask again: proceed with the most sensible assumption and state that "
    "assumption clearly in your answer."
)

Asker = Callable[[list["Question"]], Awaitable[list[str] | None]]
"""Asks the questions; returns one answer per question, or None when nobody can answer."""


def ask_tools(asker: Asker | None) -> list[Tool]:
    """The get_user_input tool, asking through `asker` (None: nobody can answer)."""

    async def get_user_input(args: AskParams, ctx: ToolContext) -> ToolOutput:
        if asker is None:
            raise ToolError(NOBODY_CAN_ANSWER)
        answers = await asker(list(args.questions))
        if answers is None:
            raise ToolError(NOBODY_CAN_ANSWER)
        return ToolOutput(
            format_answers(args.questions, answers),
            summary=f"{len(args.questions)} answered",
        )

    return [
        Tool(
            name="get_user_input",
            description=(
                "Ask the user up to 5 questions when you cannot continue well without their "
                "decision or knowledge (a choice between approaches, a missing fact). Each "
                "question may offer options. Do not ask what you can find out with tools."
            ),
            params=params_named("AskParams"),
            handler=get_user_input,
            reads=False,
            main_arg=None,
            timeout=ASK_TIMEOUT,
            needs_approval=False,
        )
    ]


def format_answers(questions: list[Question], answers: list[str]) -> str:
    """`Q: ... A: ...` lines in question order; a missing or blank answer is said to be so."""
    lines = []
    for index, question in enumerate(questions):
        answer = answers[index] if index < len(answers) else ""
        answer = str(answer).strip() or NO_ANSWER
        lines.append(f"Q: {question.question.strip()}\nA: {answer}")
    return "\n".join(lines)
