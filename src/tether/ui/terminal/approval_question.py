"""The approval question: what a call would do, then one key for the answer.

y runs it, a runs it and saves an allow rule, n or Esc refuses (n then asks, optionally,
why); any other key asks again instead of counting as a refusal. No Enter is needed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from tether.core.messages import ToolCall
from tether.core.ui_protocol import Decision
from tether.safety.approval import COMMAND_TEXT_PARAMS

from ..headless import describe_arguments
from .preview import change_preview
from .shown import shown

KeyAsker = Callable[[str], Awaitable[str]]
"""Shows a question and returns the key pressed ("y", "escape", ...) without waiting for
Enter; raises KeyboardInterrupt or EOFError on Ctrl-C or Ctrl-D."""
LineAsker = Callable[[str], Awaitable[str]]
"""Shows a prompt and returns the line typed; raises KeyboardInterrupt/EOFError on Ctrl-C/D."""

QUESTION = "Allow? [y]es / [n]o / [a]lways (Esc: no) "
ANSWERS = {"y": "yes", "n": "no", "a": "always", "escape": "no"}
AGAIN = "  Press y, n or a (Esc: no)."
SHOWN_ARGUMENT_LINES = 15
"""Lines of a long argument shown for approval; command text is always shown whole."""
DIFF_LINES = 40


async def read_key(message: str) -> str:
    """One key pressed at `message`, read by prompt_toolkit (so an arrow key's escape
    sequence is one key, not an Esc); the question is erased, the caller prints the answer."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.keys import Keys
    from prompt_toolkit.layout import Layout, Window
    from prompt_toolkit.layout.controls import FormattedTextControl

    keys = KeyBindings()

    @keys.add(Keys.Any)
    def _key(event: KeyPressEvent) -> None:
        event.app.exit(result=event.key_sequence[0].data)

    @keys.add("escape", eager=True)
    def _escape(event: KeyPressEvent) -> None:
        event.app.exit(result="escape")

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    @keys.add("c-d")
    def _end(event: KeyPressEvent) -> None:
        event.app.exit(exception=EOFError())

    control = FormattedTextControl(message, show_cursor=True)
    app: Application[str] = Application(layout=Layout(Window(control, height=1)), key_bindings=keys,
                                        erase_when_done=True)
    return await app.run_async(handle_sigint=False)


def print_diff(console: Console, lines: list[str]) -> None:
    """A diff's lines, coloured, at most DIFF_LINES of them."""
    lines = [ln for ln in lines if ln[:1] in "+-@" or ln.startswith(" ")]
    for ln in lines[:DIFF_LINES]:
        style = "diff.add" if ln.startswith("+") else "diff.del" if ln.startswith("-") else "status"
        console.print(shown("    " + ln, style))
    if len(lines) > DIFF_LINES:
        console.print(Text(f"    [... {len(lines) - DIFF_LINES} more diff lines ...]", style="status"))


class ApprovalQuestion:
    """Shows a call that needs approval and reads the answer."""

    def __init__(self, console: Console, ask_key: KeyAsker, ask_line: LineAsker,
                 root: Path | None) -> None:
        self.console = console
        self.ask_key = ask_key
        self.ask_line = ask_line
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
        A key that means none of them asks again."""
        while True:
            try:
                key = await self.ask_key(QUESTION)
            except (KeyboardInterrupt, EOFError):
                self.console.print(Text(QUESTION, style="bold").append("refused", style="tool.error"))
                return None
            key = key if key == "escape" else key.lower()
            if key in ANSWERS:
                self.console.print(Text(QUESTION, style="bold").append(ANSWERS[key]))
                return key
            self.console.print(Text(AGAIN, style="notice"))

    async def why_not(self) -> Decision:
        try:
            why = await self.ask_line("Why not? (optional, Enter to skip): ")
        except (KeyboardInterrupt, EOFError):
            why = ""
        return Decision(False, why.strip())
