"""A name given alone as old_content, where the file has it several times: a rename in that file.

Told where a name is still used, a small model sends `old_content: "calc_total"` and
`new_content: "compute_total"` for a file that uses it three times, and the edit fails
("occurs 3 times"); it rarely finds the lines around each one to make three edits of it. A
name alone for a name alone means the name, wherever the file has it as a whole name (not
`calc_total_2`, not `subcalc_total`), in its own case: every such place is changed, and the
result says how many and on which lines. Anything else that occurs several times (a value, a
line, a name with other text) stays an error that asks for more lines around it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..core.toolspec import Tool, ToolContext
from .edit_repair import repaired_edit

if TYPE_CHECKING:
    from .params import EditFileParams

_NAME = re.compile(r"-{0,2}[A-Za-z_$][\w$-]*")
"""A name in code: an identifier (`calc_total`, `$scope`, `APP_PORT`) or an option (`--dry-run`)."""
SHORTEST = 3
"""A name shorter than this (`x`, `id`) may be part of anything; it is never renamed so."""
RENAMED_NOTE = (
    "old_content is the name `{old}` alone, which {path} has {count} times (lines {lines}), so "
    "each was changed to `{new}`:\n"
)


def renamed_throughout(full: Tool, params: EditFileParams, ctx: ToolContext, text: str) -> Any:
    """The edit that renames every whole-name use of old_content in the file; None unless
    old_content and new_content are each one name and the file has the old one twice or more."""
    old, new = (params.old_content or "").strip(), params.new_content.strip()
    if not (_NAME.fullmatch(old) and _NAME.fullmatch(new)) or len(old.strip("-")) < SHORTEST or old == new:
        return None
    whole = re.compile(rf"(?<![\w$-]){re.escape(old)}(?![\w$-])")
    places = [match.start() for match in whole.finditer(text)]
    if len(places) < 2:
        return None
    lines = sorted({text.count("\n", 0, at) + 1 for at in places})
    note = RENAMED_NOTE.format(old=old, path=params.filepath, count=len(places),
                               lines=", ".join(map(str, lines)), new=new)
    return repaired_edit(full, ctx, params.filepath, text, whole.sub(new, text), note)
