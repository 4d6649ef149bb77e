"""Whole tool results that were too long for the conversation, kept where the model can page them.

Dispatch windows a long result (head and tail kept). For a tool whose result has no other
way back (an MCP server's answer: asking again may cost, or give something else), the
whole text is saved here first, one folder per run under TETHER_HOME/results, and the
windowed result names the file, to be read a page at a time with read_file. Only this
run's folder is readable without asking (`ApprovalPolicy.readable`), so one project's
session cannot read what another's tools returned. The oldest run folders are removed
once there are more than `KEPT_RUNS`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from pathlib import Path

from ..host import atomic_write_text

FOLDER = "results"
KEPT_RUNS = 20
UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


LINE_LIMIT = 2_000
"""Longer lines are split in the saved file: read_file cuts a line over 4,000 characters."""


class ResultFiles:
    """The saved results of one run: `save` writes one and says how to page it."""

    def __init__(self, home: Path) -> None:
        self.parent = home / FOLDER
        self.folder = self.parent / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        self._count = 0

    def save(self, tool_name: str, text: str, kept_head: int) -> str:
        """Write `text` (owner-only: results may hold private data) and return the note
        for the model: where it is, how to page it, where the window's cut begins.
        OSError if it cannot be written."""
        if self._count == 0:
            self._prune()
        self._count += 1
        path = self.folder / f"{self._count:03d}-{UNSAFE.sub('_', tool_name)[:80]}.txt"
        pageable, how = pageable_text(text)
        atomic_write_text(path, pageable, secret=True, newline="\n")
        lines = len(pageable.splitlines())
        where = (f"; the part left out starts near line {text.count(chr(10), 0, kept_head) + 1}"
                 if not how else f" ({how})")
        return (f"\n[The whole result ({len(text):,} characters) is saved in {path}, {lines:,} "
                f"lines{where}. Page through it with read_file(filepath=\"{path}\", offset=N).]")

    def _prune(self) -> None:
        """Remove the oldest run folders, leaving room for this run's."""
        with contextlib.suppress(OSError):
            runs = sorted(p for p in self.parent.iterdir() if p.is_dir() and p != self.folder)
            for old in runs[: max(len(runs) - (KEPT_RUNS - 1), 0)]:
                shutil.rmtree(old, ignore_errors=True)


def pageable_text(text: str) -> tuple[str, str]:
    """The text with lines short enough to page, and how it was changed ("" if not): one
    JSON document is indented, and lines still too long are split."""
    if _fits(text):
        return text, ""
    changes = []
    with contextlib.suppress(ValueError):
        text = json.dumps(json.loads(text), indent=1, ensure_ascii=False)
        changes.append("the JSON indented")
    if not _fits(text):
        text = "\n".join(line[i:i + LINE_LIMIT] for line in text.split("\n")
                         for i in range(0, max(len(line), 1), LINE_LIMIT))
        changes.append(f"lines over {LINE_LIMIT:,} characters split")
    return text, ", ".join(changes)


def _fits(text: str) -> bool:
    return all(len(line) <= LINE_LIMIT for line in text.split("\n"))
