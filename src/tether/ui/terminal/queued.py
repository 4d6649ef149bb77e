"""Messages typed while a turn runs: each line ended with Enter is queued and sent after it.

While a turn runs the terminal is in its normal (line) mode with echo off, so a line reaches
tether only once Enter ends it. `QueuedMessages.collecting` reads those lines as they come
(through a prompt_toolkit input of its own, attached the way a question's is, so a question
that opens meanwhile takes the terminal and gives it back) and shows each as queued. A line
that a question's drain took (`typed_ahead`) joins the queue the same way once the turn ends;
text after the last Enter stays there, for the next input line.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from .typed_ahead import TypedAhead


class QueuedMessages:
    """Lines typed during a turn, in order, waiting to be sent."""

    def __init__(self, typed_ahead: TypedAhead, show: Callable[[str], None]) -> None:
        self.typed_ahead = typed_ahead
        self.show = show
        """Tells the user a line was queued."""
        self.lines: list[str] = []

    def take_lines(self) -> None:
        """Queue the lines `typed_ahead` holds that Enter ended (each shown as queued)."""
        for line in self.typed_ahead.whole_lines():
            self.lines.append(line)
            self.show(line)

    def next(self) -> str | None:
        return self.lines.pop(0) if self.lines else None

    def give_back(self) -> int:
        """Put the queued lines back in the next input line (a turn was stopped: they are not
        sent unasked); how many there were."""
        count = len(self.lines)
        if count:
            self.typed_ahead.put_first("\n".join(self.lines))
            self.lines.clear()
        return count

    @contextlib.contextmanager
    def collecting(self) -> Iterator[None]:
        """While the block runs (a turn), lines typed at the terminal are queued as they end."""
        from prompt_toolkit.input import create_input

        try:
            source = create_input(sys.stdin) if sys.stdin.isatty() else None
        except (OSError, ValueError, RuntimeError):
            source = None
        if source is None:  # no terminal to read: nothing to queue
            yield
            return

        def on_keys() -> None:
            self.typed_ahead.keep(source.read_keys())
            self.take_lines()

        try:
            attached = source.attach(on_keys)
            attached.__enter__()
        except (EOFError, OSError, ValueError):
            yield
            return
        try:
            yield
        finally:
            attached.__exit__(None, None, None)
