"""The one-mode edit_file's repair for old_content copied with its blank lines changed.

A small model copying a file into old_content drops or merges blank lines (two between
functions become one, a blank line gets a space): old_content is then not found, and the
model, shown the file, sends the same text again or gives up. When every line of
old_content that is not blank is, in order and with nothing between them but blank lines, the
same as a run of the file's lines (trailing spaces aside), in exactly one place, that run is
what it meant, and it is replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.toolspec import Tool, ToolContext
from .edit_repair import repaired_edit

if TYPE_CHECKING:
    from .params import EditFileParams

BLANKS_NOTE = (
    "old_content was not found as written, but its lines match lines {first}-{last} of the file "
    "exactly apart from blank lines, and nowhere else, so those lines were replaced:\n"
)


def blank_lines_change(full: Tool, params: EditFileParams, ctx: ToolContext, text: str) -> Any:
    """The full edit_file's result for the run of lines old_content meant, or None."""
    want = [line.rstrip() for line in (params.old_content or "").splitlines() if line.strip()]
    if len(want) < 2 or not text:
        return None
    file_lines = text.splitlines(keepends=True)
    solid = [(n, line.rstrip()) for n, line in enumerate(file_lines) if line.strip()]
    places = [k for k in range(len(solid) - len(want) + 1)
              if all(solid[k + j][1] == line for j, line in enumerate(want))]
    if len(places) != 1:
        return None
    first, last = solid[places[0]][0], solid[places[0] + len(want) - 1][0]
    span = "".join(file_lines[first : last + 1])
    new = params.new_content
    if span.endswith("\n") and not new.endswith("\n"):
        new += "\n"
    note = BLANKS_NOTE.format(first=first + 1, last=last + 1)
    return repaired_edit(full, ctx, params.filepath, span, new, note)
