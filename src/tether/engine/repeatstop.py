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

Nor need the loop be one line: asked for a test, the model also writes the same few asserts
again and again, a block of `CYCLE_MIN_LINES` to `CYCLE_MAX_LINES` lines. A block that comes
`CYCLE_COPIES` times in a row, word for word, with one line of some length in it, is a
loop too; the reply is kept up to the end of its first copy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
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
CYCLE_MIN_LINES = 3
"""The shortest block of lines whose repetition counts as a loop (two lines taking turns
still occur in real code, as table rows or paired calls)."""
CYCLE_MAX_LINES = 8
"""The longest block of lines whose repetition counts as a loop."""
CYCLE_COPIES = 3
"""Copies in a row of one block of lines that mean the reply is looping."""
LOOP_TEMPERATURE = 0.7
"""The temperature of the request after a looping reply (at least): sent the same history at
temperature 0, the model writes the same loop again."""
REPEATING = (
    "Your reply repeated the same line over and over ({line!r}), so it was stopped there and "
    "nothing in it was run. Send the call again, each line once."
)


@dataclass
class RepeatStop:
    """Says when a streamed reply has repeated one line `REPEAT_LIMIT` times in a row, or
    one block of lines `CYCLE_COPIES` times."""

    _partial: str = ""
    _pos: int = 0
    """Where `_partial` (the line not yet ended) starts in the reply."""
    _last: str | None = None
    _count: int = 0
    _first_end: int = 0
    _recent: deque[tuple[str, int]] = field(
        default_factory=lambda: deque(maxlen=CYCLE_MAX_LINES * CYCLE_COPIES))
    """The last lines, each with where it ends in the reply."""
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
            self._recent.append((line, end))
            if (cycle := repeated_block(self._recent)) is not None:
                self.cut, self.line = cycle
                return True
        return False


def repeated_block(recent: Sequence[tuple[str, int]]) -> tuple[int, str] | None:
    """Where the first copy of a block of lines ends, and its longest line, when the last
    lines are `CYCLE_COPIES` copies of one block in a row; None otherwise."""
    lines = [line for line, _ in recent]
    for size in range(CYCLE_MIN_LINES, CYCLE_MAX_LINES + 1):
        span = size * CYCLE_COPIES
        if len(lines) < span:
            break
        block = lines[-size:]
        longest = max(block, key=lambda line: len(line.strip()))
        if len(longest.strip()) < REPEAT_MIN_CHARS or _periodic(block):
            continue  # short lines repeat in real code; a shorter block again is not this size
        if all(lines[-span + k] == block[k % size] for k in range(span)):
            return recent[-span + size - 1][1], longest.strip()
    return None


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


def _periodic(block: list[str]) -> bool:
    """Whether `block` is a shorter block over and over (one line again, two taking turns)."""
    size = len(block)
    return any(size % part == 0 and block == block[:part] * (size // part) for part in range(1, size))
