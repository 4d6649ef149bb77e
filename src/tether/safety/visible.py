"""Model-supplied text made safe to show: nothing in it can steer the terminal or hide.

A command, a path or a diff shown for approval must read as what will run. Raw
control characters would let the text rewrite the screen (`ESC[2K ESC[1G` erases
the line and redraws it), a carriage return or backspace would overwrite what
came before, bidi controls reorder what is drawn, and zero-width characters sit
invisibly between letters. Every such character is written as an escape instead
(`\\x1b`, `\\r`, `\\u202e`); only the newline (each line is shown) and the tab are
kept. Every display path of model text goes through `visible` or `visible_pieces`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..host import clean_text

KEPT = frozenset("\n\t")
"""Layout characters shown as themselves: a newline starts a new, shown line."""
INVISIBLE = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
    "\u2060\u2061\u2062\u2063\u2064\u3164\ufeff\uffa0"
    + "".join(map(chr, range(0x202A, 0x202F)))
    + "".join(map(chr, range(0x2066, 0x206A)))
    + "".join(map(chr, range(0xFE00, 0xFE10)))
)
"""Characters that draw nothing (or reorder what is drawn) although Unicode calls some of
them letters or marks: fillers, joiners, bidi marks and overrides, variation selectors."""


def visible(text: str) -> str:
    """`text` with every control, format and invisible character written as an escape."""
    if text.isascii() and _nothing_hidden(text):  # ASCII holds no surrogate to clean either
        return text
    return "".join(piece for piece, _ in visible_pieces(text))


def visible_pieces(text: str) -> Iterator[tuple[str, bool]]:
    """`text` in runs, each with whether it is an escape standing for hidden characters
    (a terminal may show those in another style). A byte that was not UTF-8 is shown as
    safetext shows it everywhere, `\\xNN`."""
    text = clean_text(text)
    if _nothing_hidden(text):  # the usual case, checked in C: every line of a tool's result
        if text:
            yield text, False
        return
    start = 0
    for index, char in enumerate(text):
        if _hidden(char):
            if start < index:
                yield text[start:index], False
            yield escape(char), True
            start = index + 1
    if start < len(text):
        yield text[start:], False


def escape(char: str) -> str:
    """The escape shown for one hidden character, in Python's spelling."""
    code = ord(char)
    if code < 0x100:
        return {"\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v"}.get(char, f"\\x{code:02x}")
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_WITHOUT_KEPT = str.maketrans("", "", "".join(KEPT))


def _nothing_hidden(text: str) -> bool:
    """Whether no character of `text` is `_hidden`, without a step per character in Python."""
    flat = text.translate(_WITHOUT_KEPT)
    return flat.isprintable() and INVISIBLE.isdisjoint(flat) and (
        flat.isascii() or max(flat) < "\U000E0100")


def _hidden(char: str) -> bool:
    if char in KEPT:
        return False
    # Not printable: every control, format (bidi, tags), separator but the space,
    # surrogate and unassigned character.
    return not char.isprintable() or char in INVISIBLE or 0xE0100 <= ord(char) <= 0xE01EF
