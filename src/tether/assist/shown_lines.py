"""New text for lines of a file, shown by path and line number in a reply, and the edit it makes.

The harness's search lists the places a change left as `path:line: text` (assist/leftovers.py);
told to change them, a small model often answers in the same form with each line changed
(`lib/table.js:3: const { leftPad, heading } = require('./text');`) and makes no call. Those
lines are its edit: the text is the model's, the place is the one it gave. A line counts only
when the file has that line, the shown text differs from it and is still mostly the same line
(a changed copy, not other text at that number); the line keeps the indentation the file gives
it. The lines of one file become one `edit_file` call over the span from the first to the
last (old_content exactly once in the file), one call for each file the reply shows lines of.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from ..tools._paths import is_inside_root
from .reply_shapes import VERSION_MAX_CHARS, file_text

_SHOWN_LINE = re.compile(
    r"^[ \t]*(?:[-*]|\d+[.)])?[ \t]*(?P<quote>`?)(?P<path>[\w./-]+\.\w+):(?P<line>\d+):[ \t]?(?P<text>.*?)[ \t]*$",
    re.M,
)
"""`path:line: text`, maybe in a list item or quoted whole in backticks (the file must have a
suffix)."""
SAME_LINE_RATIO = 0.6
"""How alike the shown text and the file's line must be for one to be a change of the other."""


@dataclass(frozen=True)
class ShownLines:
    """The edit a reply's lines make: in `path` (as the reply named it), `old` becomes `new`."""

    path: str
    numbers: tuple[int, ...]
    old: str
    new: str


def shown_lines_edits(text: str, root: Path, keeps: Callable[[str], bool]) -> list[ShownLines]:
    """The edit each file's changed lines in `text` make, in the order the files come (none
    for a file with no line that qualifies); `keeps`: whether the request keeps a file (as
    named) as it is."""
    by_file: dict[str, dict[int, str]] = {}
    for match in _SHOWN_LINE.finditer(text):
        text_shown = match.group("text")
        if match.group("quote") and text_shown.endswith("`"):  # `path:3: text` quoted whole
            text_shown = text_shown[:-1]
        by_file.setdefault(match.group("path"), {})[int(match.group("line"))] = text_shown
    edits = (_file_edit(named, lines, root, keeps) for named, lines in by_file.items())
    return [edit for edit in edits if edit is not None]


def _file_edit(named: str, shown: dict[int, str], root: Path, keeps: Callable[[str], bool]) -> ShownLines | None:
    path = root / named
    if keeps(named) or not is_inside_root(path, root) or not path.is_file():
        return None
    source = file_text(path, VERSION_MAX_CHARS)
    if source is None:
        return None
    file_lines = source.splitlines(keepends=True)
    changed = {n: _in_place(file_lines[n - 1], new) for n, new in shown.items()
               if 1 <= n <= len(file_lines) and _changed_copy(file_lines[n - 1], new)}
    if not changed:
        return None
    first, last = min(changed), max(changed)
    old = "".join(file_lines[first - 1:last])
    new = "".join(changed.get(n, file_lines[n - 1]) for n in range(first, last + 1))
    if source.count(old) != 1:
        return None
    return ShownLines(named, tuple(sorted(changed)), old, new)


def _changed_copy(line: str, shown: str) -> bool:
    """The shown text differs from the file's line but is mostly the same line."""
    before, after = line.strip(), shown.strip()
    if not after or before == after:
        return False
    return SequenceMatcher(None, before, after).ratio() >= SAME_LINE_RATIO


def _in_place(line: str, shown: str) -> str:
    """The shown text with the file line's indentation and line end."""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    ending = line[len(line.rstrip("\r\n")):]
    return indent + shown.strip() + ending
