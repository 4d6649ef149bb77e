"""Crash-safe file writes: a reader sees the old file or the new one, never half.

Every write goes to a temporary file in the same directory, is flushed and
fsynced, and then replaces the target with `os.replace` (atomic on POSIX and
Windows). The directory is fsynced afterwards so the rename itself survives a
power cut. A crash at any moment leaves at most a stray `.<name>.*.tmp` file;
the target is never empty or truncated. The next successful write of the same
target removes such strays once they are over a minute old (a younger one may
belong to another writer that is still busy).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from .safetext import clean_data, clean_text

SECRET_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
STALE_TEMP_AGE = 60.0
# What tempfile.mkstemp puts between our prefix and suffix: eight characters.
_MKSTEMP_MIDDLE = re.compile(r"[a-z0-9_]{8}")


def atomic_write_text(
    path: Path,
    text: str,
    *,
    secret: bool = False,
    encoding: str = "utf-8",
    newline: str | None = None,
) -> None:
    """Write `text` atomically; `newline` translates "\\n" the way `open()` does."""
    if newline is None:
        newline = os.linesep
    if newline not in ("", "\n"):
        text = text.replace("\n", newline)
    atomic_write_bytes(path, clean_text(text).encode(encoding), secret=secret)


def atomic_write_json(path: Path, obj: Any, *, secret: bool = False) -> None:
    """Write `obj` as indented JSON; serialisation errors happen before any file is touched.

    Strings are cleaned first (see safetext): a session holding a file name that is not
    UTF-8 is saved with that name escaped rather than not saved at all."""
    text = json.dumps(clean_data(obj), indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"), secret=secret)


def atomic_write_bytes(path: Path, data: bytes, *, secret: bool = False) -> None:
    """Write `data` atomically; `secret=True` makes the file 0600 from its first byte."""
    target = _write_target(Path(path))
    make_parents(target, private=secret)
    mode = SECRET_MODE if secret else _mode_for(target)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file 0600; set the final mode before any data
        # exists so a secret is never readable by others, not even briefly.
        try:
            os.chmod(tmp_name, mode)
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_directory(target.parent)
    _remove_stale_temps(target)


def make_parents(target: Path, *, private: bool = False) -> None:
    """Create the folders above `target` that are missing; `private=True` makes each one it
    creates owner-only (0700), so a secret's folder never lists its files to others."""
    if not private:
        target.parent.mkdir(parents=True, exist_ok=True)
        return
    missing = []
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            folder.mkdir(mode=PRIVATE_DIR_MODE)


def _remove_stale_temps(target: Path) -> None:
    """Delete temp files an earlier, crashed write of `target` left behind. Never raises."""
    prefix, suffix = f".{target.name}.", ".tmp"
    cutoff = time.time() - STALE_TEMP_AGE
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        # Exactly mkstemp's random part, so `.a.b.<random>.tmp` (target `a.b`)
        # is never taken for a temp file of target `a`.
        if not _MKSTEMP_MIDDLE.fullmatch(name[len(prefix) : len(name) - len(suffix)]):
            continue
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff:
                os.unlink(entry.path)


def _write_target(path: Path) -> Path:
    """Writing through a symlink updates the file it points to and keeps the link."""
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def _mode_for(path: Path) -> int:
    """An existing file keeps its permissions; a new one gets 0666 minus the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_current_umask()


def _current_umask() -> int:
    """The process umask, read without changing it where the OS allows that."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # Elsewhere the only way to read the umask is to set it and put it back.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_directory(directory: Path) -> None:
    """Persist the rename; best effort, since not every OS or filesystem allows it."""
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
