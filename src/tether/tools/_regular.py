"""Files that are only files: a FIFO, a device or a socket is refused, never waited on.

Opening a FIFO for reading blocks until some writer appears (forever, in a
hostile repository), and reading a character device such as /dev/zero never
ends. The check is made twice: `os.stat` first, for a clear message without
opening anything, then again with `fstat` on a descriptor opened with
O_NONBLOCK, so a FIFO swapped in between the two cannot make the open wait.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotARegularFile(OSError):
    """The path is a FIFO, a device or a socket; `kind` says which."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(f"{path} is {kind}")
        self.path = path
        self.kind = kind


def special_kind(mode: int) -> str | None:
    """"a FIFO (named pipe)", "a socket" ... for a mode that is neither a regular file nor a
    directory (nor a symlink); None otherwise."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None


def refuse_special(path: Path) -> None:
    """Raise NotARegularFile when `path` (symlinks followed) is a FIFO, device or socket.
    A missing path passes: the caller reports that in its own words."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    kind = special_kind(mode)
    if kind is not None:
        raise NotARegularFile(path, kind)


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading in binary, only if it is a regular file (symlinks followed).

    Raises NotARegularFile for a FIFO, device or socket (and IsADirectoryError for a
    directory), and the usual OSError otherwise; never blocks on the open.
    """
    refuse_special(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotARegularFile(path, special_kind(mode) or "not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
