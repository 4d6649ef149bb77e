"""A count over a folder taken from one file of it, and a count found but never written.

"Count the lines that contain TODO in the python files under src/": a small model searches
the one file of src/ it guesses (the project map names it), then writes steps, code or a
number from that one file. The search's own note names the folder to search; the model
does not read it. When the request counts in a folder of the project and the turn's last
search looked at one file inside it, the search of the whole folder is written out for the
model to send (with the pattern it used). When the request asks for the number in a file and
the turn's last search counted its matching lines, an answer that does not write it gets the
write_file call with that count.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

_COUNTS = re.compile(r"\b(count|how many|number of|tally|total number)\b", re.I)
_FOLDER = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+)/(?![\w-])")
"""A folder the request names with a slash at its end (`src/`, `src/app/`)."""
_FOLDER_WORDS = re.compile(r"\b(?:under|in|inside|within|below)\s+(?:the\s+)?`?([\w-]+(?:/[\w-]+)*)`?"
                           r"(?:\s+(?:folder|directory|dir))?", re.I)

FOLDER_COUNT = (
    "The request counts in {folder}/, but your last search looked at one file of it ({path}), "
    "so that is not the count. Search the whole folder and count from what it reports: reply "
    "with only:\n{call}"
)


def requested_folder(request: str, root: Path) -> str | None:
    """The one folder of the project a counting request names ("under src/"), or None."""
    if not _COUNTS.search(request):
        return None
    named = {m.group(1) for m in _FOLDER.finditer(request)}
    named |= {m.group(1).rstrip("/") for m in _FOLDER_WORDS.finditer(request)}
    folders = [name for name in named if _is_project_folder(root, name)]
    return folders[0] if len(folders) == 1 else None


def _is_project_folder(root: Path, name: str) -> bool:
    try:
        path = (root / name).resolve()
        return path.is_dir() and path.is_relative_to(root.resolve()) and path != root.resolve()
    except (OSError, RuntimeError):
        return False


def count_scope_nudge(watch: TurnWatch) -> str | None:
    """FOLDER_COUNT with the folder's search_in_file call, once per turn, when the request
    counts in a folder and the last search looked at one file inside it; None otherwise."""
    search = watch.last_search
    if search is None or watch.root is None or watch.show_call is None or "folder" in watch.sent:
        return None
    folder = requested_folder(watch.request, watch.root)
    path = search.get("path", ".")
    if folder is None or not search.get("pattern") or not _one_file_inside(watch.root, path, folder):
        return None
    watch.once("folder")
    call = watch.offer("search_in_file", {"pattern": search["pattern"], "path": folder})
    return FOLDER_COUNT.format(folder=folder, path=path, call=call)


def _one_file_inside(root: Path, path: str, folder: str) -> bool:
    try:
        target, scope = (root / path).resolve(), (root / folder).resolve()
        return target.is_file() and target.is_relative_to(scope)
    except (OSError, RuntimeError):
        return False


COUNT_LINE = re.compile(r"^\((\d+) matching lines? in \d+ files?\)$", re.M)
"""The count search_in_file ends a list of matches with."""
_INTO_FILE = re.compile(r"\b(?:write|save|put|store)\b.*?\b(?:to|in|into)\s+`?((?:[\w-]+/)*[\w.-]+\.txt)\b", re.I)
COUNT_TO_FILE = (
    "Your last search counted {count} matching lines, and the request asks for the number in "
    "{path}, which you have not written. If that search is the count asked for, write it: "
    "reply with only:\n{call}"
)


def count_file_nudge(watch: TurnWatch) -> str | None:
    """COUNT_TO_FILE with the write_file call for the count the last search reported, once
    per turn, when the request counts into a text file that this turn has not written."""
    if watch.root is None or watch.show_call is None or "write_file" not in watch.tools:
        return None
    wanted = _INTO_FILE.search(watch.request) if _COUNTS.search(watch.request) else None
    if wanted is None or not watch.seen or "count_file" in watch.sent:
        return None
    path = wanted.group(1)
    counts = COUNT_LINE.findall(watch.seen[-1])  # only a search ends its result with one
    if not counts or path in watch.written or (watch.root / path).exists():
        return None
    watch.once("count_file")
    call = watch.offer("write_file", {"filepath": path, "content": counts[-1] + "\n"})
    return COUNT_TO_FILE.format(count=counts[-1], path=path, call=call)
