"""A folder search run by ripgrep (`rg`), when it is installed: the same matches as the
Python search, at the speed of a native search.

tether still decides which files are searched (git's list, the deny rules, the walk's
guards, the size limit): rg gets that list, in order, a chunk at a time, and reads only
those files (`--no-config`, no ignore files of its own, one thread so the order is the
list's). Matches stream back as JSON and the caller stops rg once it has enough. A
pattern rg cannot run (look-around, back-references: Python's syntax is wider) raises
`PatternUnsupported` before any match, and the caller searches with Python instead.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

CHUNK_FILES = 512
"""Paths per rg process: far below the argument-list limit, few enough starts to not matter."""
ERROR_BYTES = 4096
PROBE_SECONDS = 10.0
ENCODING_NONE = ("--encoding", "none")
"""Bytes as they are (no UTF-16 sniffing), as the Python search reads them."""


class PatternUnsupported(Exception):
    """rg refused the pattern (its message is the exception's text)."""


@dataclass
class FileMatches:
    path: Path
    lines: list[tuple[int, str]] = field(default_factory=list)
    """(1-based line number, the line's text without its newline)."""


def ripgrep() -> str | None:
    """The rg program on PATH, or None."""
    return shutil.which("rg")


def search(
    program: str, pattern: str, files: Iterable[Path], per_file: int
) -> Generator[FileMatches, None, None]:
    """The files of `files` with matches, in their order, each with at most `per_file`
    lines. Closing the iterator stops rg."""
    chunk: list[Path] = []
    for path in files:
        chunk.append(path)
        if len(chunk) >= CHUNK_FILES:
            yield from _search_chunk(program, pattern, chunk, per_file)
            chunk = []
    if chunk:
        yield from _search_chunk(program, pattern, chunk, per_file)


def _search_chunk(program: str, pattern: str, files: list[Path], per_file: int) -> Iterator[FileMatches]:
    command = [program, "--json", "--no-config", "--no-ignore", "--hidden", "--threads", "1",
               *ENCODING_NONE, "--max-count", str(per_file), "--regexp", pattern, "--",
               *(os.fspath(p) for p in files)]
    with tempfile.TemporaryFile() as errors:  # a pipe could fill up while stdout is read
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=errors, cwd=os.path.abspath(os.sep))
        try:
            assert proc.stdout is not None
            current: FileMatches | None = None
            for raw in proc.stdout:
                current, done = _event(raw, current)
                if done is not None:
                    yield done
            _check_finished(proc, errors)
        finally:
            _stop(proc)


def _event(raw: bytes, current: FileMatches | None) -> tuple[FileMatches | None, FileMatches | None]:
    """The file being read after one JSON line of rg's, and a finished file with matches."""
    try:
        event = json.loads(raw)
        kind, data = event["type"], event["data"]
    except (ValueError, KeyError, TypeError):
        return current, None
    if kind == "begin":
        return FileMatches(Path(_path(data["path"]))), None
    if kind == "match" and current is not None:
        current.lines.append((int(data["line_number"]), _text(data["lines"]).rstrip("\n")))
    elif kind == "end" and current is not None:  # a NUL byte past the start: searched, as in Python
        return None, current if current.lines else None
    return current, None


def _path(value: dict[str, str]) -> str:
    """rg's path as the file system names it: a name that is not UTF-8 keeps its bytes (as
    surrogate escapes, like os.listdir's names), so it is shown escaped as in the Python search."""
    if "text" in value:
        return value["text"]
    return os.fsdecode(base64.b64decode(value.get("bytes", "")))


def _text(value: dict[str, str]) -> str:
    """rg's {"text": ...} or, for bytes that are not UTF-8, {"bytes": base64}."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", "replace")


def _check_finished(proc: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
    """rg exits 0 (matches), 1 (none) or 2 (an error: a refused pattern, or an unreadable
    file, which the Python search skips quietly too)."""
    if proc.wait() != 2:
        return
    errors.seek(0)
    message = errors.read(ERROR_BYTES).decode("utf-8", "replace")
    if "regex" in message.lower():
        raise PatternUnsupported(message.strip())


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.kill()
    if proc.stdout is not None:
        with contextlib.suppress(OSError):
            proc.stdout.close()
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        proc.wait(timeout=5)


def usable(pattern: str) -> str | None:
    """The rg program, if it is installed and runs `pattern`."""
    program = ripgrep()
    return program if program is not None and takes(program, pattern) else None


def takes(program: str, pattern: str) -> bool:
    """Whether rg runs `pattern` (tried on empty input: a refusal costs no file read)."""
    try:
        done = subprocess.run([program, "--no-config", "--regexp", pattern, "-"], input=b"",
                              capture_output=True, timeout=PROBE_SECONDS, cwd=os.path.abspath(os.sep))
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode in (0, 1)
