"""Paths resolved the way the kernel resolves them: the one resolution every check and tool uses.

`os.path.normpath` folds `a/../b` into `b` before looking at the disk; the
kernel walks the components left to right and follows a symlink before the
`..` after it, so with `a -> x/y` the path `a/../b` is `x/b`. A check that
folds first judges one file and the tool opens another. `resolve_path` walks
like the kernel: symlinks are followed as they are met, `..` goes up from the
directory reached so far. A component that does not exist yet is taken as a
directory to be created (what `mkdir -p` then `open` would reach), so a `..`
after it comes back to where it was, and a symlink met after that is still
followed.

This module imports nothing of tether: the tool table uses it, so every tool
opens the path that was checked.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque

MAX_SYMLINKS = 40
"""Symlinks followed in one resolution before giving up, as Linux does (ELOOP)."""


def resolve_path(path: str, base: str, *, follow_final: bool = True) -> str:
    """The absolute path `open()` reaches for `path` (relative paths start at `base`).

    `follow_final=False` leaves a final symlink unfollowed, as `unlink` and
    `lstat` see it. Raises OSError(ELOOP) for a symlink loop and ValueError for
    a path the OS cannot represent (a NUL byte).
    """
    if "\0" in path or "\0" in base:
        raise ValueError("embedded null byte in a path")
    start = "/" if os.path.isabs(path) else _resolved_base(base)
    return _walk(start, path, follow_final)


def resolve_from(resolved_dir: str, name: str) -> str:
    """resolve_path for `name` relative to a directory already resolved: a walk over a
    folder's files resolves the folder once, not once per file."""
    if "\0" in name or "\0" in resolved_dir:
        raise ValueError("embedded null byte in a path")
    return _walk(resolved_dir, name, True)


def _resolved_base(base: str) -> str:
    absolute = base if os.path.isabs(base) else os.path.join(os.getcwd(), base)
    return _walk("/", absolute, True)


def _walk(start: str, path: str, follow_final: bool) -> str:
    current = start
    missing = 0  # components appended that do not exist (yet): `..` pops them lexically
    pending = deque(path.split("/"))
    followed = 0
    while pending:
        name = pending.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            missing = max(missing - 1, 0)
            continue
        candidate = os.path.join(current, name)
        if missing:
            current, missing = candidate, missing + 1
            continue
        target = _link_target(candidate)
        final = not pending  # a trailing `/` or `/.` makes the kernel follow the link too
        if target is None or (final and not follow_final):
            current = candidate
            missing = 0 if target is not None or os.path.lexists(candidate) else 1
            continue
        followed += 1
        if followed > MAX_SYMLINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
        pending.extendleft(reversed(target.split("/")))
        if os.path.isabs(target):
            current = "/"
    return current


def _link_target(path: str) -> str | None:
    """What the symlink at `path` points to, or None when `path` is no symlink (or absent)."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return None
        return os.readlink(path)
    except OSError:  # absent, or under a file or an unsearchable directory: the kernel stops too
        return None


def resolve_user_path(text: str, root: str, *, follow_final: bool = True) -> str:
    """A path a tool call names (`~` expanded, relative to the project root), resolved."""
    return resolve_path(os.path.expanduser(text), root, follow_final=follow_final)


def resolved_forms(text: str, root: str) -> tuple[str, ...]:
    """Both readings of a path a call names: every symlink followed (what open() reads or
    writes) and the last one left alone (what unlink removes); one item when they agree."""
    followed = resolve_user_path(text, root)
    entry = resolve_user_path(text, root, follow_final=False)
    return (followed,) if entry == followed else (followed, entry)


def is_within(path: str | os.PathLike[str], parent: str | os.PathLike[str]) -> bool:
    """True when `path` is `parent` or lies beneath it, comparing the paths as given (no
    symlink resolved: resolve both first)."""
    path, parent = os.fspath(path), os.fspath(parent)
    if path == parent:
        return True
    prefix = parent if parent.endswith(os.sep) else parent + os.sep
    return path.startswith(prefix)


def file_identity(path: str, *, follow: bool = True) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, or None when there is none."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino
