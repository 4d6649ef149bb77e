"""Small path helpers shared by the tools: containment in the project root and display."""

from __future__ import annotations

import difflib
import os
from pathlib import Path


def is_inside_root(path: Path, root: Path) -> bool:
    """True when `path` (after resolving symlinks) is the root or lies beneath it.

    Resolving both sides means a symlink inside the project that points
    elsewhere counts as outside, which is what a path policy must see.
    """
    try:
        resolved = Path(path).resolve()
        resolved_root = Path(root).resolve()
    except (OSError, RuntimeError):  # symlink loops and the like
        return False
    return resolved == resolved_root or resolved_root in resolved.parents


def display_path(path: Path, root: Path) -> str:
    """The path as the model should see it: relative to the root when inside it."""
    for candidate, base in ((path, root), (_resolved(path), _resolved(root))):
        try:
            relative = candidate.relative_to(base)
        except ValueError:
            continue
        text = relative.as_posix()
        return text if text else "."
    return str(path)


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
