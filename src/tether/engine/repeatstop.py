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
loop too; the reply is kept up to the end of its first copy. A longer block, up to
`LONG_CYCLE_MAX_LINES` lines, is a loop at its second copy in a row.

Nor need the copies be word for word: asked for a function, the model also writes one case
per value, counting up (`if n == 12: return [...]`, `if n == 13: ...`, each list one item
longer), until the token limit: minutes of generation for code that is never right. A block
of 1 to `COUNT_MAX_LINES` lines that comes `COUNT_COPIES` times in a row alike but for its
numbers (a run of list items counts as one), its first number going up or down by the same
step each time and each copy longer than the one before, is that loop (the block that grows,
as the line that grows above); the model is told to write the rule once instead. Rows of a
table that count (`user1`, `user2`, ...) keep their length, and are not stopped.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.textclip import clip_words

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
LONG_CYCLE_MAX_LINES = 16
"""The longest block of lines whose repetition counts as a loop at `LONG_CYCLE_COPIES`."""
LONG_CYCLE_COPIES = 2
"""Copies in a row of a block longer than `CYCLE_MAX_LINES` that mean the reply is looping:
real code does not write nine lines or more twice in a row word for word, and at three
copies the token limit comes first (six `if` blocks of two lines each, over and over)."""
COUNT_MAX_LINES = 4
"""The longest block of lines whose counted copies (alike but for a number) count as a loop."""
COUNT_COPIES = 10
"""Copies in a row of one block, a number in it counting, that mean the reply is looping."""
LOOP_TEMPERATURE = 0.7
"""The temperature of the request after a looping reply (at least): sent the same history at
temperature 0, the model writes the same loop again."""
REPEATING = (
    "Your reply repeated the same line over and over ({line!r}), so it was stopped there and "
    "nothing in it was run. Send the call again, each line once."
)
COUNTING = (
    "Your reply wrote the same lines again and again with only a number counting up or down "
    "({line!r}), one case per value, so it was stopped there and nothing in it was run. Write "
    "the general rule once (a loop or a formula that works for every value), then send the call "
    "again."
)
_NUMBER = re.compile(r"\d+")
_NUMBER_RUN = re.compile(r"#(?:\s*,\s*#)+")


@dataclass
class RepeatStop:
    """Says when a streamed reply has repeated one line `REPEAT_LIMIT` times in a row, one
    block of lines `CYCLE_COPIES` times (a long one `LONG_CYCLE_COPIES` times), or written one
    block `COUNT_COPIES` times counting (see the module's docstring)."""

    _partial: str = ""
    _pos: int = 0
    """Where `_partial` (the line not yet ended) starts in the reply."""
    _last: str | None = None
    _count: int = 0
    _first_end: int = 0
    _recent: deque[tuple[str, int]] = field(default_factory=lambda: deque(
        maxlen=max(CYCLE_MAX_LINES * CYCLE_COPIES, LONG_CYCLE_MAX_LINES * LONG_CYCLE_COPIES,
                   COUNT_MAX_LINES * COUNT_COPIES)))
    """The last lines, each with where it ends in the reply."""
    cut: int | None = None
    """Where to cut the reply (the end of the repeated line's first copy), once it loops."""
    line: str = ""
    counting: bool = False
    """The loop counts (copies alike but for a number that goes up by a step)."""

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
            if (counted := counted_block(self._recent)) is not None:
                (self.cut, self.line), self.counting = counted, True
                return True
        return False

    def note(self) -> str:
        """What the model is told about its stopped reply."""
        return (COUNTING if self.counting else REPEATING).format(line=clip_words(self.line, 80))


def repeated_block(recent: Sequence[tuple[str, int]]) -> tuple[int, str] | None:
    """Where the first copy of a block of lines ends, and its longest line, when the last
    lines are copies of one block in a row: `CYCLE_COPIES` of a block of `CYCLE_MIN_LINES` to
    `CYCLE_MAX_LINES` lines, or `LONG_CYCLE_COPIES` of a longer one up to `LONG_CYCLE_MAX_LINES`;
    None otherwise."""
    lines = [line for line, _ in recent]
    for size in range(CYCLE_MIN_LINES, LONG_CYCLE_MAX_LINES + 1):
        copies = CYCLE_COPIES if size <= CYCLE_MAX_LINES else LONG_CYCLE_COPIES
        span = size * copies
        if len(lines) < span:
            continue  # a longer block may need fewer lines (fewer copies)
        block = lines[-size:]
        longest = max(block, key=lambda line: len(line.strip()))
        if len(longest.strip()) < REPEAT_MIN_CHARS or _periodic(block):
            continue  # short lines repeat in real code; a shorter block again is not this size
        if all(lines[-span + k] == block[k % size] for k in range(span)):
            return recent[-span + size - 1][1], longest.strip()
    return None


def counted_block(recent: Sequence[tuple[str, int]]) -> tuple[int, str] | None:
    """Where the first copy of a counted block ends, and its longest line, when the last
    lines are `COUNT_COPIES` copies of one block alike but for its numbers, the first of
    which counts by one step (not 0), each copy longer than the last; None otherwise."""
    lines = [line for line, _ in recent]
    for size in range(1, COUNT_MAX_LINES + 1):
        span = size * COUNT_COPIES
        if len(lines) < span:
            break
        tail = lines[-span:]
        copies = ["\n".join(tail[k * size:(k + 1) * size]) for k in range(COUNT_COPIES)]
        longest = max(tail[:size], key=lambda line: len(line.strip())).strip()
        shape = _shape(copies[0])
        if len(longest) < REPEAT_MIN_CHARS or "#" not in shape:
            continue
        if any(_shape(copy) != shape for copy in copies[1:]):
            continue
        grows = all(len(a) < len(b) for a, b in zip(copies, copies[1:], strict=False))
        if grows and _counts([_first_number(copy) for copy in copies]):
            return recent[-span + size - 1][1], longest
    return None


def _first_number(text: str) -> int:
    found = _NUMBER.search(text)
    return int(found.group()[:18]) if found else 0  # Python refuses int() of 4,300+ digits


def _counts(numbers: list[int]) -> bool:
    """Whether `numbers` go up or down by one same step."""
    steps = {b - a for a, b in zip(numbers, numbers[1:], strict=False)}
    return len(steps) == 1 and 0 not in steps


def _shape(text: str) -> str:
    """`text` with each number as `#` and each run of listed numbers as one."""
    return _NUMBER_RUN.sub("#", _NUMBER.sub("#", text))


def repeats(last: str, line: str) -> bool:
    """Whether `line` is `last` again, word for word or grown by a piece."""
    if len(line.strip()) < REPEAT_MIN_CHARS:
        return False
    if line == last:
        return True
    if len(line) <= len(last) or len(last.strip()) < REPEAT_MIN_CHARS or len(line) > GROWN_MAX_CHARS:
        return False
    from difflib import SequenceMatcher  # at the first reply that may have grown: not at start

    kept = sum(b.size for b in SequenceMatcher(None, last, line, autojunk=False).get_matching_blocks())
    return kept >= GROWN_KEEPS * len(last)


def _periodic(block: list[str]) -> bool:
    """Whether `block` is a shorter block over and over (one line again, two taking turns)."""
    size = len(block)
    return any(size % part == 0 and block == block[:part] * (size // part) for part in range(1, size))
