"""What a "not found" result suggests: the existing paths closest to the one asked for.

Models guess paths (`src/textutils.py` for `textutils.py`, `config.yml` for
`config.yaml`). Naming the files that do exist with the same or a similar name
anywhere in the project turns a dead end into one more call.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

SCAN_LIMIT = 5_000
SKIP_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox"})


def closest_paths(wanted: Path, root: Path, limit: int = 3) -> list[str]:
    """Up to `limit` project paths (relative, posix) whose name is the wanted name or close to
    it, those nearest the wanted folder first; [] when nothing looks alike."""
    name = wanted.name
    if not name:
        return []
    candidates: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        base = Path(folder)
        candidates += [(base / f).relative_to(root).as_posix() for f in files + dirs]
        if len(candidates) > SCAN_LIMIT:
            break
    names = {c.rsplit("/", 1)[-1] for c in candidates}
    close = set(difflib.get_close_matches(name, names, n=limit * 2, cutoff=0.7)) | (
        {name} if name in names else set()
    )
    try:
        asked = wanted.relative_to(root).as_posix()
    except ValueError:
        asked = wanted.as_posix()
    found = [c for c in candidates if c.rsplit("/", 1)[-1] in close and c != asked]
    found.sort(key=lambda c: (c.rsplit("/", 1)[-1] != name, -_shared_prefix(c, asked), len(c)))
    return found[:limit]


def _shared_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a.split("/"), b.split("/")]))
