"""A script the request runs with arguments, written so that it reads none.

"write a script total.py that sums one column of a CSV file, used like: python total.py FILE
COLUMN": a small model writes total.py with `file_path = 'data/sales.csv'` and `column_name =
'amount'` set in the code, runs `python total.py`, sees a total and answers. The script ignores
every argument it is given. When the request shows the command line a Python script is run
with, and a write or an edit leaves that script reading no command-line arguments (no sys.argv,
argparse, click, typer, fire or optparse), the result says so, with the command the request shows.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from ..store.filereads import read_file_bytes
from ..tools._paths import is_inside_root
from .messages import Evidence

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

NO_ARGUMENTS = (
    "\nWarning: {script} reads no command-line arguments (sys.argv or argparse), but the request "
    "gives it some ({usage}), so they would be ignored. Read them in the script instead of fixed "
    "values, then run it with real values as arguments."
)
_ARGUMENTS_SAID = re.compile(r"\b(?:command[- ]line\s+)?arguments?\b|\bargv\b", re.I)
_SCRIPT_NAMED = re.compile(r"(?<![\w./-])([\w./-]+\.py)\b")
_USAGE = re.compile(r"(?:python3?\s+)?(?P<script>[\w./-]+\.py)(?P<args>(?:[ \t]+(?:[A-Z][A-Z0-9_]*|<[\w -]+>|\[[^\]\n]+\]))+)")
"""`python total.py FILE COLUMN`, `c2f.py <celsius>`: the script, then placeholders."""
_READS_ARGUMENTS = re.compile(r"\bargv\b|\bargparse\b|\bclick\b|\btyper\b|\bfire\b|\boptparse\b|\bdocopt\b")


def requested_usage(request: str) -> tuple[str, str] | None:
    """(script, the command line) the request shows a Python script run with, or says it
    takes arguments; None when it does neither."""
    found = _USAGE.search(request)
    if found is not None:
        return found.group("script"), found.group(0).strip()
    named = set(_SCRIPT_NAMED.findall(request))
    if len(named) == 1 and _ARGUMENTS_SAID.search(request):  # "it takes temperatures as arguments"
        script = named.pop()
        return script, f"python {script} ARGUMENTS"
    return None


def unread_arguments_note(watch: TurnWatch, evidence: Evidence) -> str:
    """NO_ARGUMENTS for a write or an edit of the script the request shows run with arguments,
    when the text it left reads none ("" otherwise, and after the first time for a script)."""
    if evidence.call.name not in ("write_file", "edit_file") or evidence.error:
        return ""
    usage = requested_usage(watch.request)
    path = evidence.call.arguments.get("filepath")
    if usage is None or not isinstance(path, str) or watch.root is None:
        return ""
    script, command = usage
    named, wanted = os.path.normpath(path), os.path.normpath(script)
    if named != wanted and not named.endswith(os.sep + wanted):  # scripts/c2f.py for "c2f.py"
        return ""
    target = (watch.root / path).resolve()
    if not is_inside_root(target, watch.root):
        return ""
    try:
        text = read_file_bytes(target).decode("utf-8", errors="replace")  # no FIFO wait
    except OSError:
        return ""
    if _READS_ARGUMENTS.search(text) or not watch.once(f"arguments:{script}"):
        return ""
    return NO_ARGUMENTS.format(usage=command, script=script)
