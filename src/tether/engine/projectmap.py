"""A compact map of the project for the first request: paths and sizes, within a budget.

A small model that has not seen the file list guesses paths (`src/app.py` for
`app.py`). The map names what is there, so it need not guess. Files git ignores
are left out (`git ls-files`); outside a git repository the walk skips hidden and
tool folders. When everything does not fit, folders are folded into
`dir/ (N files)`, smallest listing first kept open.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from ..host import git_listed_names

WALK_FILE_LIMIT = 2_000
SKIP_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache"})


def project_files(root: Path) -> list[str]:
    """Paths relative to `root`, sorted: git's view (tracked and not ignored), else a walk."""
    listed = _git_files(root)
    return sorted(listed if listed is not None else _walked_files(root))


def _git_files(root: Path) -> list[str] | None:
    """git's list (hardened: a repository's fsmonitor or filters never run for it)."""
    listed = git_listed_names(root)
    if listed is None:
        return None
    return [name for name in listed if (root / name).is_file()]  # deleted but still tracked


def _walked_files(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        base = Path(folder).relative_to(root)
        found += [(base / f).as_posix() for f in files if not f.startswith(".")]
        if len(found) >= WALK_FILE_LIMIT:
            break
    return found


def _size(root: Path, name: str) -> str:
    """`340B`, `1.2K`, `15K`, `3.4M`: enough to tell a stub from a big file."""
    try:
        size = float((root / name).stat().st_size)
    except OSError:
        return "?"
    if size < 1000:
        return f"{size:.0f}B"
    for unit in ("K", "M", "G"):
        size /= 1000
        if size < 1000 or unit == "G":
            return f"{size:.1f}{unit}" if size < 10 else f"{size:.0f}{unit}"
    return "?"


def project_map(root: Path, budget: int) -> str:
    """The map as lines `path size`, at most `budget` characters; "" for an empty project,
    or without a budget (the full profile's: its start lists no files)."""
    if budget <= 0:
        return ""
    files = project_files(root)
    if not files:
        return ""
    lines = [f"{name} {_size(root, name)}" for name in files]
    text = "\n".join(lines)
    return text if len(text) <= budget else _folded(root, files, budget)


def _folded(root: Path, files: list[str], budget: int) -> str:
    """Top-level files listed; each top-level folder as `dir/ (N files)`, opened while it fits."""
    folders: dict[str, list[str]] = defaultdict(list)
    top: list[str] = []
    for name in files:
        head, sep, _ = name.partition("/")
        (folders[head] if sep else top).append(name)
    entries = {name: f"{name} {_size(root, name)}" for name in top}
    entries.update({d: f"{d}/ ({len(members)} files)" for d, members in folders.items()})
    for folder in sorted(folders, key=lambda d: len(folders[d])):
        opened = "\n".join(f"{n} {_size(root, n)}" for n in folders[folder])
        trial = {**entries, folder: opened}
        if len("\n".join(trial.values())) <= budget:
            entries = trial
    text = "\n".join(entries[k] for k in sorted(entries))
    if len(text) <= budget:
        return text
    cut = text[:budget].rsplit("\n", 1)[0]
    return cut + f"\n... ({text.count(chr(10)) - cut.count(chr(10))} more entries)"
