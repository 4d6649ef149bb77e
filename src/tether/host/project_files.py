"""The project's file list, as git sees it (tracked, and untracked but not ignored), else a
bounded walk; listed once and kept a few seconds, so the tools that look across the project
on every call (search_in_file's matches elsewhere, tool_search's file names) do not each run
`git ls-files` or walk the tree again.

git runs hardened (host/git_guard): no program the repository configures (fsmonitor, ...)
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

from .git_guard import GitConfigError, run_hardened

GIT_LIST_TIMEOUT = 10.0
SKIP_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__"})
LIST_TTL = 10.0
"""How long a taken list is reused: the calls of a few replies, not the whole session (a file
the model writes is listed at the latest ten seconds later). Taking it costs about a quarter
of a second for 3,000 files on a loaded machine."""
LIST_LIMIT = 50_000
"""Files kept from a walk (no git): a home directory opened as a project is not listed whole."""


def git_listed_names(directory: Path) -> list[str] | None:
    """Tracked and untracked-but-not-ignored files below `directory`, relative to it (git's
    `/` separators), sorted; None when git is missing, the directory is not in a
    repository, or git fails."""
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
    return sorted({name for name in os.fsdecode(done.stdout).split("\0") if name})


def git_listed_files(directory: Path) -> list[Path] | None:
    """git_listed_names as paths below `directory`."""
    names = git_listed_names(directory)
    return None if names is None else [directory / name for name in names]


def in_skipped_dir(name: str) -> bool:
    """Whether a relative name lies in a tool folder (.git, .venv, node_modules, ...)."""
    return any(part in SKIP_DIRS for part in name.split("/")[:-1])


def walk_files(directory: Path) -> Iterator[Path]:
    for current, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(name for name in dirnames if name not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(current) / name


def searchable_files(directory: Path) -> list[Path] | Iterator[Path]:
    """git's list below `directory` without the tool folders, else a lazy walk."""
    names = git_listed_names(directory)
    if not names:  # not a repo, no git, or an ignored directory searched on purpose
        return walk_files(directory)
    return [directory / name for name in names if not in_skipped_dir(name)]


class ProjectFiles:
    """The files of one project, listed at most every LIST_TTL seconds (one per ToolContext).
    Kept as relative names (paths are made only for what a caller takes: making a Path for
    each of thousands of files costs more than git's listing). The paths are as listed, not
    resolved: whoever reads one still applies its own checks."""

    def __init__(self, root: Path, ttl: float = LIST_TTL) -> None:
        self.root = root
        self.ttl = ttl
        self._lock = threading.Lock()  # handlers of one reply run in parallel threads
        self._names: tuple[str, ...] = ()
        self._by_name: dict[str, list[str]] = {}
        self._by_folder: dict[str, list[str]] = {}
        self._taken_at: float | None = None
        self.listings = 0
        """How many times the list was taken (the cache's effect, for tests and figures)."""

    def names(self, limit: int = LIST_LIMIT) -> tuple[str, ...]:
        """Up to `limit` listed files as relative names (the chat's @ completion)."""
        with self._lock:
            self._refresh()
            return self._names[:limit]

    def paths(self) -> Iterator[Path]:
        """Every listed file, made a path as it is taken."""
        with self._lock:
            self._refresh()
            names = self._names
        return (self.root / name for name in names)

    def named(self, name: str) -> list[Path]:
        """The files whose base name is `name`."""
        with self._lock:
            self._refresh()
            return [self.root / found for found in self._by_name.get(name, ())]

    def in_folder(self, folder: str) -> list[Path]:
        """The files directly in `folder`, relative to the root ("" for the root itself)."""
        with self._lock:
            self._refresh()
            return [self.root / found for found in self._by_folder.get(folder, ())]

    def _refresh(self) -> None:
        now = time.monotonic()
        if self._taken_at is not None and now - self._taken_at < self.ttl:
            return
        listed = git_listed_names(self.root)
        names = listed if listed is not None else self._walked_names()
        by_name: dict[str, list[str]] = {}
        by_folder: dict[str, list[str]] = {}
        kept = tuple(name for name in names if not in_skipped_dir(name))
        for name in kept:
            folder, _, base = name.rpartition("/")
            by_name.setdefault(base, []).append(name)
            by_folder.setdefault(folder, []).append(name)
        self._names, self._by_name, self._by_folder = kept, by_name, by_folder
        self._taken_at = now
        self.listings += 1

    def _walked_names(self) -> list[str]:
        names: list[str] = []
        for current, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(name for name in dirnames if name not in SKIP_DIRS)
            base = os.path.relpath(current, self.root)
            names += [name if base == "." else f"{base}/{name}" for name in sorted(filenames)]
            if len(names) >= LIST_LIMIT:
                return names[:LIST_LIMIT]
        return names
