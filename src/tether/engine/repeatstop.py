"""Stop a streamed reply that has fallen into repeating one line.

At a low temperature a small model sometimes loops: asked for a test, it writes the
same assert line again and again until the token limit, which on a CPU costs minutes
and ends in a cut-off call anyway. Once one line of some length has come
`REPEAT_LIMIT` times in a row, the rest of the reply can only be more of it: the loop
closes the stream there, keeps the reply up to the line's first copy, and tells the
model what happened. Short lines (a closing bracket, `pass`) repeat in real code and
never count.

The loop need not be word for word: the same model also writes each line as the last one
with a piece added (`f("a 1 2")`, then `f("a 1 2 1")`, ...), so a line that
holds nearly all of the previous one and is longer counts as its copy too. Lines of real
code that look alike (`parse("2024-01-01")`, `parse("2024-01-02")`) are the same length,
not each longer than the last, and do not.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

REPEAT_LIMIT = 6
"""Copies in a row of one line that mean the reply is looping."""
REPEAT_MIN_CHARS = 16
"""Lines shorter than this (without their indentation) never count as a loop."""
GROWN_MAX_CHARS = 400
"""Longer lines are not compared piece by piece (the comparison is quadratic, and it runs on
every streamed line); word for word they still count."""
GROWN_KEEPS = 0.9
"""A longer line that keeps this share of the previous line's characters, in order, is
that line grown (the loop that adds a piece each time)."""
LOOP_TEMPERATURE = 0.7
"""The temperature of the request after a looping reply (at least): sent the same history at
temperature 0, the model writes the same loop again."""
REPEATING = (
    "Your reply repeated one line over and over ({line!r}), so it was stopped there and "
    "nothing in it was run. Send the call again, each line once."
)


@dataclass
class RepeatStop:
    """Says when a streamed reply has repeated one line `REPEAT_LIMIT` times in a row."""

    _partial: str = ""
    _pos: int = 0
    """Where `_partial` (the line not yet ended) starts in the reply."""
    _last: str | None = None
    _count: int = 0
    _first_end: int = 0
    cut: int | None = None
    """Where to cut the reply (the end of the repeated line's first copy), once it loops."""
    line: str = ""

    def feed(self, text: str) -> bool:
        """Take one delta; True once the reply loops (then `cut` and `line` say where)."""
        if self.cut is not None:
            return True
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            end = self._pos + len(line) + 1
            if self._last is not None and repeats(self._last, line):
                self._last, self._count = line, self._count + 1
                if self._count >= REPEAT_LIMIT:
                    self.cut, self.line = self._first_end, line.strip()
                    return True
            else:
                self._last, self._count, self._first_end = line, 1, end
            self._pos = end
        return False


def repeats(last: str, line: str) -> bool:
    """Whether `line` is `last` again, word for word or grown by a piece."""
    if len(line.strip()) < REPEAT_MIN_CHARS:
        return False
    if line == last:
        return True
    if len(line) <= len(last) or len(last.strip()) < REPEAT_MIN_CHARS or len(line) > GROWN_MAX_CHARS:
        return False
    kept = sum(b.size for b in SequenceMatcher(None, last, line, autojunk=False).get_matching_blocks())
    return kept >= GROWN_KEEPS * len(last)
