"""Asking the person at the terminal: a line, the model's questions, a plan to approve."""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit import PromptSession
from rich.console import Console
from rich.text import Text

from tether.core.ui_protocol import NoticeLevel
from tether.tools.ask import Question

from .terminal_ui import shown

Say = Callable[[str, NoticeLevel], None]
"""Prints one line for the user at a level (info, warning, error)."""


async def ask_line(message: str, default: str = "", secret: bool = False) -> str:
    """One line typed at a prompt of its own; KeyboardInterrupt or EOFError on Ctrl-C or Ctrl-D."""
    session: PromptSession = PromptSession()
    return await session.prompt_async(message, default=default, handle_sigint=False,
                                      is_password=secret)


class Asking:
    """What the tools and plan mode ask the user, shown above a line prompt. `settle` ends
    whatever the UI is drawing (the live region) before the question shows."""

    def __init__(self, console: Console, settle: Callable[[], None]) -> None:
        self.console = console
        self.settle = settle

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
                raw = (await ask_line("answer (a number or your own words): ")).strip()
            except (KeyboardInterrupt, EOFError):
                return None
            answers.append(picked(raw, q.options))
        return answers

    async def approve_plan(self, plan: str) -> tuple[bool, str]:
        """Plan mode: (approved, what should change); Ctrl-C or Ctrl-D rejects it without a word."""
        self.settle()
        self.console.print(Text("Plan for approval:", style="bold"))
        self.console.print(shown(plan))
        try:
            answer = (await ask_line("Approve this plan? [y]es / [n]o: ")).strip().lower()
            if answer in ("y", "yes"):
                return True, ""
            return False, (await ask_line("What should change? ")).strip()
        except (KeyboardInterrupt, EOFError):
            return False, ""


def picked(raw: str, options: list[str], shown_options: int | None = None) -> str:
    """The option a typed number names (1-based, among the first `shown_options`), else the
    typed text itself."""
    count = len(options) if shown_options is None else min(len(options), shown_options)
    return options[int(raw) - 1] if raw.isdigit() and 0 < int(raw) <= count else raw
