"""Asking the person at the terminal: a line, the model's questions, a plan to approve."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from tether.core.ui_protocol import NoticeLevel

from .keyboard import Asker, Choices
from .shown import shown

if TYPE_CHECKING:
    from tether.tools.params import Question

Say = Callable[[str, NoticeLevel], None]
"""Prints one line for the user at a level (info, warning, error)."""

PLAN = Choices("Approve this plan? [y]es / [n]o (Esc: no) ", {"y": "yes", "n": "no", "escape": "no"},
               "Press y or n (Esc: no).")


class Asking:
    """What the tools and plan mode ask the user. `settle` ends whatever the UI is drawing
    (the live region) before the question shows."""

    def __init__(self, console: Console, settle: Callable[[], None], asker: Asker) -> None:
        self.console = console
        self.settle = settle
        self.asker = asker

    async def questions(self, questions: list[Question]) -> list[str] | None:
        """get_user_input: each question with its numbered options; a number picks one, other
        words are the answer. None when the user stops answering (Ctrl-C or Ctrl-D)."""
        self.settle()
        answers = []
        for q in questions:
            self.console.print(shown("? " + q.question, "bold"))
            for i, option in enumerate(q.options, 1):
                self.console.print(shown(f"   {i}. {option}"))
            try:
                raw = (await self.asker.line("answer (a number or your own words): ")).strip()
            except (KeyboardInterrupt, EOFError):
                return None
            answers.append(picked(raw, q.options))
        return answers

    async def approve_plan(self, plan: str) -> tuple[bool, str]:
        """Plan mode: (approved, what should change): y approves; n asks what should change;
        Esc, Ctrl-C or Ctrl-D reject it without a word."""
        self.settle()
        self.console.print(Text("Plan for approval:", style="bold"))
        self.console.print(shown(plan))
        answer = await self.asker.choose(PLAN)
        if answer != "n":
            return answer == "y", ""
        try:  # typed after the n: what follows it is meant
            return False, (await self.asker.line("What should change? ", fresh=False)).strip()
        except (KeyboardInterrupt, EOFError):
            return False, ""


def picked(raw: str, options: list[str], shown_options: int | None = None) -> str:
    """The option a typed number names (1-based, among the first `shown_options`), else the
    typed text itself."""
    count = len(options) if shown_options is None else min(len(options), shown_options)
    return options[int(raw) - 1] if raw.isdigit() and 0 < int(raw) <= count else raw
