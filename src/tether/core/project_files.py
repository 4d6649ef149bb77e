"""The project's file list, as git sees it (tracked, and untracked but not ignored), else a
bounded walk; listed once and kept a few seconds, so the tools that look across the project
on every call (search_in_file's matches elsewhere, tool_search's file names) do not each run
`git ls-files` or walk the tree again.

git runs hardened (safety/git_guard): no program the repository configures (fsmonitor, ...)
runs while a file list is taken.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ..safety.git_guard import GitConfigError, run_hardened

GIT_LIST_TIMEOUT = 10.0
SKIP_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__"})
LIST_TTL = 3.0
"""How long a taken list is reused: the calls of one reply, not the whole session (a file the
model writes shows up in the next reply's list)."""
LIST_LIMIT = 50_000
"""Files kept from a walk (no git): a home directory opened as a project is not listed whole."""


def git_listed_files(directory: Path) -> list[Path] | None:
    """Tracked and untracked-but-not-ignored files below `directory`, sorted; None when git
    is missing, the directory is not in a repository, or git fails."""
    if shutil.which("git") is None:
        return None
    try:
        done = run_hardened(
            directory, "ls-files", "--cached", "--others", "--exclude-standard", "-z",
            timeout=GIT_LIST_TIMEOUT,
        )
    except (GitConfigError, OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    names = sorted({name for name in os.fsdecode(done.stdout).split("\0") if name})
    return [directory / name for name in names]


def under_skipped_dir(path: Path, directory: Path) -> bool:
    try:
        parts = path.relative_to(directory).parts[:-1]
    except ValueError:
        return False
    return any(part in SKIP_DIRS for part in parts)


def walk_files(directory: Path) -> Iterator[Path]:
    for current, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(name for name in dirnames if name not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(current) / name


def searchable_files(directory: Path) -> list[Path] | Iterator[Path]:
    """git's list below `directory` without the tool folders, else a lazy walk."""
    listed = git_listed_files(directory)
    if not listed:  # not a repo, no git, or an ignored directory searched on purpose
        return walk_files(directory)
    return [path for path in listed if not under_skipped_dir(path, directory)]


class ProjectFiles:
    """The files of one project, listed at most every LIST_TTL seconds (one per ToolContext).
    The paths are as listed, not resolved: whoever reads one still applies its own checks."""

    def __init__(self, root: Path, ttl: float = LIST_TTL) -> None:
        self.root = root
        self.ttl = ttl
        self._lock = threading.Lock()  # handlers of one reply run in parallel threads
        self._paths: tuple[Path, ...] = ()
        self._by_name: dict[str, list[Path]] = {}
        self._by_folder: dict[Path, list[Path]] = {}
        self._taken_at: float | None = None
        self.listings = 0
        """How many times the list was taken (the cache's effect, for tests and figures)."""

    def paths(self) -> tuple[Path, ...]:
        with self._lock:
            self._refresh()
            return self._paths

    def named(self, name: str) -> list[Path]:
        """The files whose base name is `name`."""
        with self._lock:
            self._refresh()
            return list(self._by_name.get(name, ()))

    def in_folder(self, folder: Path) -> list[Path]:
        """The files directly in `folder` (a path as the list spells it: root / relative)."""
        with self._lock:
            self._refresh()
            return list(self._by_folder.get(folder, ()))

    def _refresh(self) -> None:
        now = time.monotonic()
        if self._taken_at is not None and now - self._taken_at < self.ttl:
            return
        listed = searchable_files(self.root)
        paths = tuple(listed if isinstance(listed, list) else _first(listed, LIST_LIMIT))
        by_name: dict[str, list[Path]] = {}
        by_folder: dict[Path, list[Path]] = {}
        for path in paths:
            by_name.setdefault(path.name, []).append(path)
            by_folder.setdefault(path.parent, []).append(path)
        self._paths, self._by_name, self._by_folder = paths, by_name, by_folder
        self._taken_at = now
        self.listings += 1


def _first(paths: Iterator[Path], limit: int) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if len(found) >= limit:
            break
        found.append(path)
    return found
