"""Small path helpers shared by the tools: containment in the project root and display."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from pathlib import Path

from tether.host import resolve_path


def is_inside_root(path: Path, root: Path) -> bool:
    """True when `path` (resolved as the kernel resolves it) is the root or lies beneath it.

    Resolving both sides means a symlink inside the project that points
    elsewhere counts as outside, which is what a path policy must see. A path
    the OS cannot resolve or even represent (a loop, a NUL byte) counts as outside.
    """
    resolved_root = kernel_resolved(root)
    return resolved_root is not None and is_inside_resolved(path, resolved_root)


def kernel_resolved(path: Path) -> Path | None:
    """The path as the kernel resolves it; None for one it cannot (a loop, a NUL byte)."""
    try:
        return Path(resolve_path(str(path), "."))
    except (OSError, ValueError):
        return None


def is_inside_resolved(path: Path, resolved_root: Path) -> bool:
    """is_inside_root with the root already resolved (once, for a walk over many files)."""
    resolved = kernel_resolved(path)
    return resolved is not None and is_within(resolved, resolved_root)


def is_within(path: Path, parent: Path) -> bool:
    """True when `path` is `parent` or lies beneath it, comparing the paths as written.

    No symlink is resolved: callers that need that resolve first (see is_inside_root).
    """
    return path == parent or parent in path.parents


def display_path(path: Path, root: Path) -> str:
    """The path as the model should see it: relative to the root when inside it."""
    for candidate, base in _spellings(path, root):
        try:
            relative = candidate.relative_to(base)
        except ValueError:
            continue
        text = relative.as_posix()
        return text if text else "."
    return str(path)


def _spellings(path: Path, root: Path) -> Iterator[tuple[Path, Path]]:
    """The path and root as written, then resolved (only if needed: resolving is slow)."""
    yield path, root
    yield _resolved(path), _resolved(root)


def near_names(path: Path, limit: int = 5) -> list[str]:
    """Names in the path's directory that look like the one asked for (typo help)."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    return difflib.get_close_matches(path.name, names, n=limit, cutoff=0.6)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path
