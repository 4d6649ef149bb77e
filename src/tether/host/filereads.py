"""Reading a config or state file: only a regular file, never more than a limit, and every
failure one line that names the file.

A FIFO in a config file's place would make a plain `read_text` wait forever for a writer
(a hostile repository ships one as `.tether/settings.json`), a character device would never
end, and a huge file would fill memory. Every config and state reader goes through
`read_file_bytes`, so each of those is a `FileProblem` with one clear line, never a hang or
a traceback. An absent file stays FileNotFoundError: each reader has its own meaning for
"absent" (empty settings, no session, a dangling link to report).
"""

from __future__ import annotations

from pathlib import Path

from .regular_files import NotARegularFile, TooLarge, read_small_file

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""Bytes a config or state file may hold: far above any real one, far below harm."""


class FileProblem(OSError):
    """A file that exists but cannot be used; the message is one line that names it."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path = path
        self.reason = reason
        """What is wrong, without the path ("is a FIFO (named pipe), not a regular file")."""


def read_file_bytes(path: Path, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """All the bytes of the regular file at `path` (symlinks followed), at most `limit`.

    Raises FileProblem for a FIFO, a device, a socket or a file over `limit`, and the
    OSError open() raises otherwise (FileNotFoundError when nothing is there)."""
    try:
        return read_small_file(Path(path), limit)
    except (NotARegularFile, TooLarge) as exc:
        raise file_problem(Path(path), exc) from None


def reason_of(exc: OSError) -> str:
    """What an OSError met reading a file says is wrong, without the path:
    "is a FIFO (named pipe), not a regular file", "cannot be read (Permission denied)"."""
    if isinstance(exc, FileProblem):
        return exc.reason
    return f"cannot be read ({exc.strerror or type(exc).__name__})"


def file_problem(path: Path, exc: OSError) -> FileProblem:
    """The one-line FileProblem for an OSError met reading `path`."""
    if isinstance(exc, FileProblem):
        return exc
    if isinstance(exc, NotARegularFile):
        return FileProblem(path, f"is {exc.kind}, not a regular file")
    if isinstance(exc, TooLarge):
        return FileProblem(path, f"holds more than {exc.limit:,} bytes")
    if isinstance(exc, IsADirectoryError):
        return FileProblem(path, "is a directory, not a file")
    return FileProblem(path, reason_of(exc))
