"""Keys typed before a question was on the screen: never its answer, kept for the next message.

While a turn runs, what is typed waits in the terminal's input queue (the kernel's, and
prompt_toolkit's own store of keys read past the end of the last input). A question that
simply started reading would take those keys as its answer: `also please` typed while the
model thought answered an approval with its `a`. So every question runs through
`TypedAhead.fresh`: before it is drawn, prompt_toolkit's store is taken; right after its first
drawing has been written out (before any key is handed to its bindings), everything the
terminal holds is read out. Only keys that reach the terminal after the question was written
can answer it. What was taken is kept as text, and the chat's next input line starts with it.

Keys typed before the chat's first input line was drawn (while the app was still starting)
reached a terminal in line mode, where Enter arrives as a line feed, which the input line
takes for Ctrl-J (a new line in the message). `entering_early_keys` reads them out at that
line's first drawing instead: the text up to the first line end is entered there, as if typed
at it; the lines after it are kept (the chat sends them next, in order) and an unfinished
last line goes into the next input line.
"""

from __future__ import annotations

import contextlib
import select
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

from prompt_toolkit.application import Application
from prompt_toolkit.input.typeahead import get_typeahead
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

T = TypeVar("T")

MAX_DRAINED_READS = 1024
"""Reads (of up to 1 KiB each) taken out of the terminal at one question: far more than
anyone types ahead, and a bound for input that never stops coming."""
MAX_KEPT_CHARS = 20_000
"""Typed-ahead text kept for the next message; what comes after is dropped."""
LINE_ENDS = (Keys.ControlM, Keys.ControlJ)
ERASERS = (Keys.ControlH, Keys.Backspace)


class TypedAhead:
    """What was typed before the questions that drained it, as text for the next message."""

    def __init__(self) -> None:
        self.kept = ""
        self._changed = False

    async def fresh(self, app: Application[Any],
                    run: Callable[[Callable[[], None]], Awaitable[T]]) -> T:
        """`run(pre_run)` runs `app` (passing `pre_run` on to it) so that only keys that
        arrive after its first drawing can answer it; the keys before are kept here."""
        drained = False

        def pre_run() -> None:  # before the app feeds itself what the last app read too far
            self.keep(get_typeahead(app.input))

        def after_render(_: object) -> None:  # the question is written out; no key is read yet
            nonlocal drained
            if not drained:
                drained = True
                self.keep(drain(app))
                if self._changed:
                    app.invalidate()  # the question may say what it kept

        app.after_render += after_render
        try:
            return await run(pre_run)
        finally:
            app.after_render -= after_render

    def keep(self, presses: Iterable[KeyPress]) -> None:
        text = typed_text(presses, self.kept)[:MAX_KEPT_CHARS]
        self._changed = self._changed or text != self.kept
        self.kept = text

    def pending(self) -> str:
        """The kept text while keys kept since the last `news` are not yet mentioned, else ""."""
        return self.kept.strip() if self._changed else ""

    def news(self) -> str:
        """The kept text when keys were kept since the last call (for the note a question
        shows once), else ""."""
        changed, self._changed = self._changed, False
        return self.kept.strip() if changed else ""

    def whole_lines(self) -> list[str]:
        """The kept lines that a line end finished, taken out (blank ones dropped); what
        follows the last line end stays kept."""
        *done, rest = self.kept.split("\n")
        self.kept = rest
        return [line for line in done if line.strip()]

    def put_first(self, text: str) -> None:
        """`text` before what is kept (lines taken out with `whole_lines`, given back)."""
        self.kept = text + ("\n" + self.kept if self.kept else "")

    def first_line(self) -> str | None:
        """The kept text up to the first line end, taken out; None when no line end was kept."""
        if "\n" not in self.kept:
            return None
        line, self.kept = self.kept.split("\n", 1)
        return line

    def take(self) -> str:
        """The kept text, for the next input line (without the line end that sent it)."""
        kept, self.kept, self._changed = self.kept, "", False
        return kept.rstrip("\n")


@contextlib.contextmanager
def entering_early_keys(app: Application[Any], kept: TypedAhead) -> Iterator[None]:
    """While the block runs the chat's first input line: at its first drawing, the keys typed
    before it are read out of the terminal and the first line they end is entered (see the
    module's docstring); without a line end they are only put in the input line."""
    drained = False

    def after_render(_: object) -> None:  # drawn; no key has reached the bindings yet
        nonlocal drained
        if drained:
            return
        drained = True
        kept.keep(drain(app))
        line = kept.first_line()
        buffer = app.current_buffer
        if line is None:
            buffer.insert_text(kept.take())
            return
        buffer.insert_text(line)
        buffer.validate_and_handle()

    app.after_render += after_render
    try:
        yield
    finally:
        app.after_render -= after_render


def drain(app: Application[Any]) -> list[KeyPress]:
    """Every key the terminal holds for `app`, read without waiting. Cursor-position answers
    (the app's own request to the terminal) are given back to the app; the rest is returned."""
    source = app.input
    presses: list[KeyPress] = []
    try:
        fd = source.fileno()
        for _ in range(MAX_DRAINED_READS):
            if source.closed or not select.select([fd], [], [], 0)[0]:
                break
            presses.extend(source.read_keys())
    except (OSError, ValueError, NotImplementedError):  # no descriptor to read: nothing waits
        pass
    presses.extend(source.flush_keys())  # an Esc the parser still held
    answers = [p for p in presses if p.key == Keys.CPRResponse]
    if answers and app.loop is not None:
        app.key_processor.feed_multiple(answers)
        app.loop.call_soon(app.key_processor.process_keys)
    return [p for p in presses if p.key != Keys.CPRResponse]


def typed_text(presses: Iterable[KeyPress], before: str = "") -> str:
    """`before` followed by the text the key presses type: characters, pastes, line ends and
    tabs; Backspace takes the last character back; other keys (arrows, Ctrl keys) are dropped."""
    chars = list(before)
    for press in presses:
        if press.key in ERASERS:
            if chars:
                chars.pop()
        elif press.key in LINE_ENDS:
            chars.append("\n")
        elif press.key == Keys.ControlI:
            chars.append("\t")
        elif press.key == Keys.BracketedPaste:
            chars.extend(press.data)
        elif not isinstance(press.key, Keys) and press.data.isprintable():
            chars.append(press.data)
    return "".join(chars)
