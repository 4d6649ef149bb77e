"""Files that are only files: a FIFO, a device or a socket is refused, never waited on.

Opening a FIFO for reading blocks until some writer appears (forever, in a
hostile repository), and reading a character device such as /dev/zero never
ends. The check is made twice: `os.stat` first, for a clear message without
opening anything, then again with `fstat` on a descriptor opened with
O_NONBLOCK, so a FIFO swapped in between the two cannot make the open wait.

A regular file's size is not a promise either: files under /proc report 0
bytes and some never end (`/proc/self/pagemap` gives gigabytes), and a file a
background command appends to keeps growing. So every read is bounded by what
the caller can use (`read_at_most`), and a copy stops once a file gives
more than its size said plus a little (`copy_regular`), instead of filling the
disk. The descriptor stays non-blocking, which a regular file ignores and a
kernel file that would wait for data (`/proc/kmsg`) answers with EAGAIN.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

CHUNK = 1024 * 1024
COPY_SLACK = 1024 * 1024
"""Bytes a copied file may give beyond the size it reported (a small /proc file reports 0)."""

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
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


class TooLarge(OSError):
    """The file gives more than the caller can use; `limit` says how much that was."""

    def __init__(self, path: Path, limit: int) -> None:
        super().__init__(f"{path} holds more than {limit:,} bytes")
        self.path = path
        self.limit = limit


def read_at_most(handle: BinaryIO, path: Path, limit: int, *, cut: bool = False) -> bytes:
    """The whole content of an open_regular `handle`, or TooLarge once it passes `limit`
    bytes, whatever size the file reported (`cut`: its first `limit` bytes instead). A read
    that would wait is NotARegularFile."""
    chunks: list[bytes] = []
    total = 0
    while chunk := _chunk(handle, path, min(CHUNK, limit + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            if cut:
                return b"".join(chunks)[:limit]
            raise TooLarge(path, limit)
    return b"".join(chunks)


def read_small_file(path: Path, limit: int) -> bytes:
    """All the bytes of a regular file of at most `limit` bytes. Raises TooLarge when it says
    or gives more, NotARegularFile for a FIFO, device or socket, OSError as open() does."""
    with open_regular(path) as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise TooLarge(path, limit)
        return read_at_most(handle, path, limit)


def copy_regular(source: Path, destination: Path) -> None:
    """Copy a regular file to a new `destination` (never an existing file or a symlink put
    there), with its permission bits and times. Raises TooLarge, removing the partial copy,
    when the source gives more than its reported size plus COPY_SLACK (a /proc file that
    never ends, a file something keeps appending to)."""
    with open_regular(source) as handle:
        info = os.fstat(handle.fileno())
        limit = info.st_size + COPY_SLACK
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        out = os.open(destination, flags | getattr(os, "O_CLOEXEC", 0), stat.S_IMODE(info.st_mode))
        try:
            with os.fdopen(out, "wb") as target:
                total = 0
                while chunk := _chunk(handle, source, CHUNK):
                    total += len(chunk)
                    if total > limit:
                        raise TooLarge(source, limit)
                    target.write(chunk)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(destination)
            raise
    os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns))


def _chunk(handle: BinaryIO, path: Path, size: int) -> bytes:
    """Up to `size` bytes of an open_regular `handle` (b"" at the end). The descriptor is
    non-blocking: a file that would wait for data is NotARegularFile, not a hang."""
    try:
        chunk = handle.read(size)
    except BlockingIOError:
        chunk = None
    if chunk is None:
        raise NotARegularFile(path, "a kernel file that waits for data")
    return chunk
