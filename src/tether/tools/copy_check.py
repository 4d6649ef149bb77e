"""Whether a file just written is another file of its folder, line for line.

Asked for a new script next to others, or to implement a module beside its tests, a small
model often writes the file it read last back under the new name: the copy runs, does what
the other file does, and the model reports the request done. A write's result says so when
its code lines (blank lines, trailing spaces and comment-only lines aside) are exactly those
of a file beside it with the same suffix; the write itself stands (a copy may be what was asked).
"""

from __future__ import annotations

from pathlib import Path

from tether.host import read_small_file

MIN_CODE_LINES = 2
"""A file of fewer code lines (a version string, an empty `__init__.py`) is alike by chance."""
MAX_SIBLINGS = 64
"""Files of the folder compared at most: a write into a huge folder is not slowed down."""
SIBLING_MAX_BYTES = 256 * 1024


def code_lines(data: bytes) -> list[bytes]:
    """The lines that are not blank, without their trailing spaces: a small model asked to
    add something often writes the file back unchanged but for its blank lines."""
    return [line.rstrip() for line in data.splitlines() if line.strip()]


def working_lines(data: bytes) -> list[bytes]:
    """The code lines that are not comments only (`#`, `//`): a copy with a comment naming
    its new file on top, or a file quoted back with one, still does what it did."""
    return [line for line in code_lines(data) if not line.lstrip().startswith((b"#", b"//"))]


def copied_from(path: Path, new: bytes) -> Path | None:
    """The file beside `path` (same suffix) whose working lines `new` repeats exactly, or None."""
    lines = working_lines(new)
    if len(lines) < MIN_CODE_LINES:
        return None
    for sibling in _siblings(path):
        try:
            data = read_small_file(sibling, SIBLING_MAX_BYTES)
        except OSError:  # unreadable, too large, gone meanwhile: not a copy we can tell
            continue
        if working_lines(data) == lines:
            return sibling
    return None


def copy_note(source: str) -> str:
    """The sentence a write's result ends with when the file copies `source` (as shown)."""
    return (f" Its code is {source}'s, line for line, so it does what {source} does: unless the "
            "request asked for a copy, change it to do what the request asks.")


def _siblings(path: Path) -> list[Path]:
    """The regular files beside `path` with its suffix, the first MAX_SIBLINGS by name."""
    try:
        alike = sorted(entry for entry in path.parent.iterdir()
                       if entry.suffix == path.suffix and entry.name != path.name)
    except OSError:
        return []
    return [entry for entry in alike[:MAX_SIBLINGS] if entry.is_file() and not entry.is_symlink()]
