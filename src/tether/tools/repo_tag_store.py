"""The on-disk tag cache: each parsed file's tags, kept between runs of tether, so a new
process maps a big tree it has mapped before without parsing it again.

One SQLite file per project under the user's cache folder (TETHER_HOME/cache/tags), named
by a hash of the project's real path: the repository cannot plant or read it. Rows are
keyed by the file's absolute path and hold its stamp (modification time and size) and its
tags as JSON (no pickle: a damaged or edited cache gives wrong tags at worst, never code).
A row whose stamp differs is ignored and replaced. The cache is best-effort: any error of
SQLite or the disk leaves the map to be made by parsing, as without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from .repo_tags import Definition, FileTags, Stamp

SCHEMA = "CREATE TABLE IF NOT EXISTS tags (path TEXT PRIMARY KEY, mtime INTEGER, size INTEGER, data TEXT)"
VERSION = 1
"""Part of the file name: a new encoding starts a new file instead of misreading the old."""
LOCK_WAIT = 1.0
"""Seconds a write waits for another tether writing the same project's cache."""


def encode(tags: FileTags) -> str:
    definitions = [[d.name, d.line, d.signature] for d in tags.definitions]
    return json.dumps({"d": definitions, "r": dict(tags.references)}, separators=(",", ":"))


def decode(text: str) -> FileTags | None:
    """The tags, or None for a row that is not what `encode` writes."""
    try:
        data = json.loads(text)
        definitions = tuple(Definition(str(n), int(line), str(s)) for n, line, s in data["d"])
        references = Counter({str(k): int(v) for k, v in data["r"].items()})
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return FileTags(definitions, references)


class TagStore:
    """One project's rows; opened when first used, so a map of a small tree never waits
    for it when the in-memory cache already has everything."""

    def __init__(self, folder: Path, root: Path) -> None:
        self.root = root
        real = os.path.realpath(root)
        name = hashlib.sha256(os.fsencode(real)).hexdigest()[:24]
        self.path = folder / f"{name}.v{VERSION}.sqlite3"
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def get(self, path: Path, stamp: Stamp) -> FileTags | None:
        """The stored tags of `path` if stored with this same stamp."""
        db = self._open()
        if db is None:
            return None
        try:
            row = db.execute("SELECT mtime, size, data FROM tags WHERE path = ?", (str(path),)).fetchone()
        except sqlite3.Error:
            return None
        if row is None or (row[0], row[1]) != stamp:
            return None
        return decode(row[2])

    def put(self, entries: Iterable[tuple[Path, Stamp, FileTags]]) -> None:
        """Store freshly parsed tags (one transaction)."""
        rows = [(str(p), stamp[0], stamp[1], encode(tags)) for p, stamp, tags in entries]
        db = self._open()
        if db is None or not rows:
            return
        with contextlib.suppress(sqlite3.Error):
            with db:
                db.executemany("INSERT OR REPLACE INTO tags VALUES (?, ?, ?, ?)", rows)

    def forget_missing(self, present: set[Path]) -> None:
        """Drop the rows of files that are gone, so the file cannot grow without end."""
        db = self._open()
        if db is None:
            return
        keep = {str(p) for p in present}
        with contextlib.suppress(sqlite3.Error):
            gone = [(p,) for (p,) in db.execute("SELECT path FROM tags") if p not in keep]
            if gone:
                with db:
                    db.executemany("DELETE FROM tags WHERE path = ?", gone)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _open(self) -> sqlite3.Connection | None:
        if self._db is not None or self._broken:
            return self._db
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            db = sqlite3.connect(self.path, timeout=LOCK_WAIT, check_same_thread=False)
            db.execute(SCHEMA)
        except (OSError, sqlite3.Error):
            self._broken = True  # tried once per store: the map goes on without it
            return None
        self._db = db
        return db
