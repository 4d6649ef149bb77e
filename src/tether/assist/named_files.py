"""A change request that names several files, answered with some of them unchanged.

Asked to add a function to one module and a test for it in another, a model adds the
function, sums up, and never touches the test file; asked to rename a setting in a settings
file and wherever the code reads it, it renames the code and leaves the settings file. When
a reply would end a change request after a change was made, and the request names a code or
settings file that the turn has not changed, the model is told which, once; not a file the
request says to leave as it is, or names as the model of a new one. Asked to write a
new script, a model ran the script beside it and answered with a number it made up: when a
reply would end a change request with nothing written, and a new file the request asks for
is still not on disk (a command may have made it), the model is told so, once. Test files
count only when the request asks for a test; a request to run something, and data files
(logs, CSVs, text), never count: they are inputs, not targets.
"""

from __future__ import annotations

import os
import re

from ..engine.turn_record import TurnEvidence
from ..tools._paths import is_inside_root
from .reply_shapes import is_test_path
from .request import reading_of

NAMED_UNCHANGED = (
    "The request also names {paths}, which you have not changed in this turn. If the request "
    "asks for a change there, make it now (read the file first if it exists); if not, answer."
)
NEW_FILE_MISSING = (
    "The request asks for {paths}, which does not exist yet: nothing was written in this turn. "
    "Write it now with write_file (the whole file), then run it to check it."
)
CLAIMED_UNCHANGED = (
    "Your answer says you changed {paths}, but no call of this turn changed {it}: nothing was "
    "written there. If it needs the change, make it now with edit_file or write_file; if not, "
    "answer without saying it was changed."
)
_CHANGE_CLAIM = re.compile(
    r"\b(?:I|I've|I have|we|we've)\s+(?:also\s+|now\s+|just\s+)?(?:changed|updated|renamed|modified|"
    r"edited|fixed|replaced|rewrote|rewritten|wrote|added|removed|applied)\b(?:[^.!?\n]|[.!?](?=\S))*",
    re.I,
)
"""A sentence in which the model says it made a change ("I changed bin/report.js and ..."); a
dot inside a word (a file name) does not end it."""
_PATH_WORD = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[A-Za-z]\w*)(?![\w/-])")
_TARGET_SUFFIXES = frozenset({
    "py", "js", "mjs", "ts", "tsx", "jsx", "go", "rs", "rb", "java", "kt", "c", "h", "cc", "cpp",
    "cs", "php", "sh", "json", "toml", "yaml", "yml", "ini", "cfg", "conf",
})
"""Code and settings files: what a change targets (data files are its inputs)."""


def named_unchanged(e: TurnEvidence) -> list[str]:
    """The files a change request names that this turn has not changed ([] when all were,
    or the request is no change request, or nothing was changed yet)."""
    if not e.acted or not e.written or e.reading is None or not e.asks_change or e.asks_to_run:
        return []
    reading = reading_of(e)
    targets = [name for name in reading.named if name.rsplit(".", 1)[-1] in _TARGET_SUFFIXES
               and not reading.keeps_by_name(name)]
    return [name for name in targets
            if not (is_test_path(name) and not reading.wants_test) and not _was_written(name, e.written)]


def missing_new_files(e: TurnEvidence) -> list[str]:
    """The new code or settings files a change request asks for that are still not on disk,
    when the turn has written nothing ([] otherwise)."""
    if e.written or e.root is None or e.reading is None or not e.asks_change or e.asks_to_run:
        return []
    reading = reading_of(e)
    if not reading.new_file:
        return []
    return [name for name in reading.new_files
            if name.rsplit(".", 1)[-1] in _TARGET_SUFFIXES and not (e.root / name).exists()]


def _was_written(name: str, written: frozenset[str]) -> bool:
    """Whether the turn changed the file the request names: that path, or, for a bare file
    name ("add a c2f.py next to the other scripts"), a file of that name in any folder."""
    path = os.path.normpath(name)
    if path in written:
        return True
    return os.sep not in path and any(os.path.basename(done) == path for done in written)


def claimed_unchanged(e: TurnEvidence) -> list[str]:
    """The project files the answer says it changed ("I changed bin/report.js ...") that no
    call of this turn changed, for a change request ([] otherwise); not one a command of the
    turn names (`sed -i ... app.py` changes it with no file tool)."""
    if e.root is None or not e.asks_change or e.asks_to_run or not e.reply:
        return []
    claimed = [m.group(1) for claim in _CHANGE_CLAIM.finditer(e.reply) for m in _PATH_WORD.finditer(claim.group(0))]
    root = e.root
    return list(dict.fromkeys(
        name for name in claimed
        if name.rsplit(".", 1)[-1] in _TARGET_SUFFIXES and is_inside_root(root / name, root)
        and (root / name).is_file() and not _was_written(name, e.written)
        and not any(os.path.basename(name) in command for command in e.commands)))  # `sed -i ... app.py`
