"""A change request that names several files, answered with some of them unchanged.

"add a slugify(text) function to textkit/strings.py ... and a test for it in
tests/test_strings.py": the model added the function, summed up, and never touched the test
file. "rename max_items ... in settings.json and wherever the code reads it": the code was
renamed, settings.json was not. When a reply would end a change request after a change was
made, and the request names a code or settings file that the turn has not changed, the model is
told which, once. Test files count only when the request asks for a test; a request to run
something, and data files (logs, CSVs, text), never count: they are inputs, not targets.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from .reply_shapes import is_test_path

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

NAMED_UNCHANGED = (
    "The request also names {paths}, which you have not changed in this turn. If the request "
    "asks for a change there, make it now (read the file first if it exists); if not, answer."
)
_TARGET_SUFFIXES = frozenset({
    "py", "js", "mjs", "ts", "tsx", "jsx", "go", "rs", "rb", "java", "kt", "c", "h", "cc", "cpp",
    "cs", "php", "sh", "json", "toml", "yaml", "yml", "ini", "cfg", "conf",
})
"""Code and settings files: what a change targets (data files are its inputs)."""
_ASKS_FOR_TEST = re.compile(r"\b(?:add|write|create|with|and)\s+(?:a\s+|an?\s+|some\s+)?(?:unit\s+)?tests?\b", re.I)


def named_unchanged_nudge(watch: TurnWatch) -> str | None:
    """NAMED_UNCHANGED for the files the request names that this turn has not changed, once
    per turn; None when there are none or the request is no change request."""
    if not watch.acted or not watch.written or watch.reading is None or not watch.asks_change():
        return None
    if watch.asks_to_run():
        return None
    wants_test = bool(_ASKS_FOR_TEST.search(watch.request))
    left = []
    targets = [name for name in watch.reading.named if name.rsplit(".", 1)[-1] in _TARGET_SUFFIXES]
    for named in targets:
        if is_test_path(named) and not wants_test:
            continue
        if os.path.normpath(named) not in watch.written:
            left.append(named)
    if not left or not watch.once("named_files"):
        return None
    return NAMED_UNCHANGED.format(paths=" and ".join(left))
