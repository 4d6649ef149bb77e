"""The rename nudge: a rename ("rename calc_total to compute_order_total") answered while the
old name is still in the project gets the lines where it is and the edit that renames it in
the first of them. Small models rename it in the file the request names and stop there, or
describe every edit in prose.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .messages import Evidence
from .toolspec import ToolContext, ToolError

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

RENAME_LEFT = (
    "The old name {old} is still in the project, so the rename is not done:\n{places}\n"
    "Rename it there too (edit_file), then check with search_in_file that {old} is gone."
)
RENAME_NEXT = " Change one line at a time. For the first, reply with only:\n{call}"
RENAME_PROGRESS = "\n\n{old} is still in the project ({count} left):\n{places}\nNext, rename it in the first: reply with only:\n{call}"
RENAME_DONE = "\n\n{old} is no longer in the project: the rename is done. Run the program or its tests to check it, then answer."
RENAME_PLACES = 6
"""Lines of the old name shown in the rename nudge."""
_FOUND_LINE = re.compile(r"^(.+?):(\d+): ?(.*)$")
"""A line as search_in_file shows it: path, line number, text."""
_RENAME = re.compile(r"\brename\b(.*?)\s(?:to|into|as)\s+(.*)", re.I | re.S)
_RENAME_NOUNS = frozenset({
    "the", "a", "an", "setting", "function", "method", "class", "variable", "field", "key",
    "option", "constant", "module", "attribute", "parameter", "argument", "property", "everywhere",
})


def occurrences(pattern: str, ctx: ToolContext) -> str:
    """The project's lines that match `pattern`, as search_in_file shows them (its rules
    apply: ignored, denied and binary files are skipped); "" when there are none."""
    from ..tools.file_search import SearchInFileParams, search_in_file  # the tool, only when asked

    try:
        output = search_in_file(SearchInFileParams(pattern=pattern, path="."), ctx)
    except (ToolError, OSError):
        return ""
    return "" if output.summary.startswith("0 ") else output.text


def renamed_names(request: str) -> tuple[str, str] | None:
    """(old, new) when the request asks to rename one name to another ("rename the max_items
    setting to item_limit"); None otherwise."""
    match = _RENAME.search(request)
    if match is None:
        return None

    def names(words: str) -> list[str]:
        cleaned = (w.strip("`'\".,;:()") for w in words.split())
        return [w for w in cleaned if w.lower() not in _RENAME_NOUNS and re.fullmatch(r"[A-Za-z_][\w.-]*", w)]

    before, after = names(match.group(1)), names(match.group(2))
    if not before or not after or before[-1] == after[0]:
        return None
    return before[-1], after[0]


def rename_left_nudge(watch: TurnWatch) -> str | None:
    """The nudge for a rename answered while the old name is still in the project: the lines
    where it is, and the edit_file call that renames it in the first. Small models rename it
    in the file the request names and stop, or describe the edits instead of making them. It
    comes again after each edit that leaves fewer such lines, and once more for a count when
    the model made other calls in between (it ran the program instead of sending the edit);
    so at most twice for one count, and never without a call between."""
    names = renamed_names(watch.request)
    if names is None or watch.find is None or watch.calls == 0:
        return None
    places = watch.find(rf"\b{re.escape(names[0])}\b").splitlines()
    found = [line for line in places if _FOUND_LINE.match(line)]
    if not found or not _rename_nudge_due(watch, len(found)):
        return None
    message = RENAME_LEFT.format(old=names[0], places="\n".join(found[:RENAME_PLACES]))
    edit = rename_edit(found[0], *names)
    if edit is None or watch.show_call is None or "edit_file" not in watch.tools:
        return message
    return message + RENAME_NEXT.format(call=watch.offer("edit_file", edit))


def rename_progress_note(watch: TurnWatch, evidence: Evidence) -> str:
    """For a rename request, the note after a call that worked: the lines where the old name
    still is, with the edit for the first, whenever that count changed since the last such
    note or the call only looked (a search, a read); once the name is gone after an edit, that
    the rename is done. So each edit's result carries the next one: small models edit one
    place, then run the program or search again and stop with the others left."""
    names = renamed_names(watch.request)
    if names is None or watch.find is None or evidence.error or evidence.call.name == "run_cmd":
        return ""
    found = [line for line in watch.find(rf"\b{re.escape(names[0])}\b").splitlines() if _FOUND_LINE.match(line)]
    changed = evidence.call.name in ("edit_file", "write_file")
    if not found:
        return RENAME_DONE.format(old=names[0]) if changed and watch.once("rename-done") else ""
    looked = evidence.call.name in ("search_in_file", "read_file", "list_dir")
    if not (looked or watch.once(f"rename-left:{len(found)}")):
        return ""
    edit = rename_edit(found[0], *names)
    if edit is None or watch.show_call is None or "edit_file" not in watch.tools:
        return ""
    call = watch.offer("edit_file", edit)
    return RENAME_PROGRESS.format(old=names[0], count=len(found), places="\n".join(found[:RENAME_PLACES]), call=call)


def _rename_nudge_due(watch: TurnWatch, count: int) -> bool:
    """Whether the rename nudge may come for `count` places left: the first time, or once
    more when calls were made since that first time."""
    first = f"rename:{count}"
    if watch.once(first):
        watch.sent.add(f"{first}@{watch.calls}")
        return True
    earlier = [key for key in watch.sent if key.startswith(first + "@")]
    made_calls = any(int(key.rpartition("@")[2]) < watch.calls for key in earlier)
    return made_calls and watch.once(first + ":again")


def rename_edit(found: str, old: str, new: str) -> dict[str, str] | None:
    """The edit_file arguments that rename `old` in one line search_in_file found
    ("shop/cart.py:3: def calc_total(cart):"): that line's text, and the same with the name
    changed wherever it is a whole word."""
    match = _FOUND_LINE.match(found)
    if match is None or not match.group(3).strip():
        return None
    line = match.group(3).strip()
    renamed = re.sub(rf"(?<![\w]){re.escape(old)}(?![\w])", new, line)
    if renamed == line:
        return None
    return {"filepath": match.group(1), "old_content": line, "new_content": renamed}
