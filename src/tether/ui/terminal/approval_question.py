"""The approval question: what a call would do, then one key for the answer.

y runs it, a runs it and saves an allow rule, n or Esc refuses (n then asks, optionally,
why); any other key asks again instead of counting as a refusal. No Enter is needed, and
keys typed before the question was drawn never answer it (`keyboard.read_key`).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from tether.core.messages import ToolCall
from tether.core.ui_protocol import Decision
from tether.safety.approval import COMMAND_TEXT_PARAMS

from ..headless import describe_arguments
from .keyboard import Asker, Choices
from .preview import change_preview
from .shown import indented, shown

QUESTION = "Allow? [y]es / [n]o / [a]lways (Esc: no) "
APPROVAL = Choices(QUESTION, {"y": "yes", "n": "no", "a": "always", "escape": "no"},
                   "Press y, n or a (Esc: no).", stopped="refused")
SHOWN_ARGUMENT_LINES = 15
"""Lines of a long argument shown for approval; command text is always shown whole."""
DIFF_LINES = 40


def print_diff(console: Console, lines: list[str]) -> None:
    """A diff's lines, coloured, at most DIFF_LINES of them."""
    lines = [ln for ln in lines if ln[:1] in "+-@" or ln.startswith(" ")]
    for ln in lines[:DIFF_LINES]:
        style = "diff.add" if ln.startswith("+") else "diff.del" if ln.startswith("-") else "status"
        console.print(indented(shown(ln, style), 4))
    if len(lines) > DIFF_LINES:
        console.print(Text(f"    [... {len(lines) - DIFF_LINES} more diff lines ...]", style="status"))


class ApprovalQuestion:
    """Shows a call that needs approval and reads the answer."""

    def __init__(self, console: Console, asker: Asker, root: Path | None) -> None:
        self.console = console
        self.asker = asker
        self.root = root

    def show(self, call: ToolCall, reason: str) -> bool:
        """What the call would do; True when that was the diff of a change (not shown again)."""
        header = Text("? ", style="notice")
        header.append_text(shown(call.name, "bold"))
        header.append_text(shown(f" wants to run ({reason})" if reason else " wants to run"))
        self.console.print(header)
        diff = change_preview(call, self.root)
        if diff is not None:
            self.console.print(shown("    " + describe_arguments(call.arguments), "bold"))
            print_diff(self.console, diff)
            return True
        for key, value in call.arguments.items():
            self._show_argument(key, value)
        return False

    def _show_argument(self, key: str, value: object) -> None:
        """One argument, each of its lines shown: a command is shown whole, so no line of
        what runs is left out; other long values are cut, saying how much."""
        text = value if isinstance(value, str) else repr(value)
        lines = text.split("\n")  # only a newline breaks the line: `\r` is shown as an escape
        limit = len(lines) if key in COMMAND_TEXT_PARAMS else SHOWN_ARGUMENT_LINES
        self.console.print(shown(f"    {key}: ", "bold"), shown(lines[0]))
        for ln in lines[1:limit]:
            self.console.print(shown("      " + ln))
        if len(lines) > limit:
            self.console.print(Text(f"      [... {len(lines) - limit} more lines ...]", style="status"))

    async def answer(self) -> str | None:
        """The key that answered: "y", "n", "a" or "escape"; None for Ctrl-C or Ctrl-D.
        Only a key pressed after the question was drawn counts; one that means none of
        them says which keys do, and the question waits on."""
        return await self.asker.choose(APPROVAL)

    async def why_not(self) -> Decision:
        try:  # typed after the n: what follows it is meant as the reason
            why = await self.asker.line("Why not? (optional, Enter to skip): ", fresh=False)
        except (KeyboardInterrupt, EOFError):
            why = ""
        return Decision(False, why.strip())
