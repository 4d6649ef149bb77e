"""Regular expressions matched in a worker process, where a time limit can stop them.

Python's `re` holds the interpreter lock for the whole of a match, so a pattern
that backtracks catastrophically (`^(a+)+$` against sixty `a`s and a `!`)
freezes every thread of the process: no timeout inside it can end the match.
search_in_file therefore hands each file's text to a small child process
(`python -I`, started once per search, importing nothing but the standard
library) and kills it when the search's time is up.

The protocol on the worker's stdin/stdout: a request is three big-endian
uint32 (most matches wanted, pattern length, text length) followed by the
UTF-8 pattern and text; the answer is a uint32 count and that many uint32 line
numbers (1-based) of lines the pattern matches.
"""

from __future__ import annotations

import contextlib
import os
import select
import struct
import subprocess
import sys
import time
from types import TracebackType

WORKER_SOURCE = r"""
import re, struct, sys
stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

def take(size):
    data = stdin.read(size)
    if len(data) < size:
        sys.exit(0)
    return data

while True:
    limit, pattern_size, text_size = struct.unpack(">III", take(12))
    pattern = re.compile(take(pattern_size).decode("utf-8", "surrogatepass"))
    text = take(text_size).decode("utf-8", "surrogatepass")
    hits = []
    for number, line in enumerate(text.split("\n"), 1):
        if pattern.search(line):
            hits.append(number)
            if len(hits) >= limit:
                break
    stdout.write(struct.pack(">I%dI" % len(hits), len(hits), *hits))
    stdout.flush()
"""


class PatternTooSlow(Exception):
    """Matching did not finish before the deadline; the worker was stopped."""


class WorkerFailed(Exception):
    """The worker process could not be started or died."""


class RegexWorker:
    """One worker process for the searches of one call; closed (killed if busy) on exit."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RegexWorker:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def matching_lines(self, pattern: str, text: str, limit: int, deadline: float) -> list[int]:
        """Line numbers (1-based, at most `limit`) of the lines of `text` that `pattern`
        matches. Raises PatternTooSlow when the answer is not there by `deadline`
        (time.monotonic())."""
        proc = self._started()
        encoded = pattern.encode("utf-8", "surrogatepass")
        body = text.encode("utf-8", "surrogatepass")
        try:
            assert proc.stdin is not None
            proc.stdin.write(struct.pack(">III", limit, len(encoded), len(body)) + encoded + body)
            proc.stdin.flush()
            (count,) = struct.unpack(">I", self._read(4, deadline))
            return list(struct.unpack(f">{count}I", self._read(4 * count, deadline)))
        except PatternTooSlow:
            self.close()
            raise
        except OSError as exc:
            self.close()
            raise WorkerFailed(f"the search worker stopped ({exc})") from exc

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            proc.wait(timeout=5)

    def _started(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            try:
                # -I: no user site, no environment variables, and the current directory (a
                # project that may hold its own re.py) is not on the import path.
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-c", WORKER_SOURCE],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    cwd=os.path.abspath(os.sep),
                )
            except OSError as exc:
                raise WorkerFailed(f"the search worker could not start ({exc})") from exc
        return self._proc

    def _read(self, size: int, deadline: float) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        data = b""
        while len(data) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise PatternTooSlow
            chunk = os.read(fd, size - len(data))
            if not chunk:
                raise OSError("it exited")
            data += chunk
        return data
