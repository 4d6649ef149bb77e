"""A command's output as the model gets it: decoded as it arrives, and kept to a window
that holds the start and the end when there is too much."""

from __future__ import annotations

import codecs
import locale
from collections import deque


class OutputWindow:
    """A bounded record of output: the head and the tail kept, the middle counted and dropped.

    The tail gets the larger share because that is where errors and results land.
    """

    def __init__(self, cap: int) -> None:
        self._head_cap = max(cap // 3, 0)
        self._tail_cap = max(cap - self._head_cap, 1)
        self._head = ""
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.dropped = 0

    def append(self, text: str) -> None:
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            self._trim_tail()

    def _trim_tail(self) -> None:
        while self._tail_len - len(self._tail[0]) >= self._tail_cap:
            first = self._tail.popleft()
            self._tail_len -= len(first)
            self.dropped += len(first)
        excess = self._tail_len - self._tail_cap
        if excess > 0:
            self._tail[0] = self._tail[0][excess:]
            self._tail_len -= excess
            self.dropped += excess

    def take(self) -> tuple[str, int]:
        """The text so far (with a marker where the middle was dropped) and the dropped count; resets."""
        tail = "".join(self._tail)
        dropped = self.dropped
        if dropped:
            text = f"{self._head}\n[... {dropped} characters omitted ...]\n{tail}"
        else:
            text = self._head + tail
        self._head, self._tail, self._tail_len, self.dropped = "", deque(), 0, 0
        return text, dropped


class OutputDecoder:
    """UTF-8 first, incrementally; a chunk that is not UTF-8 is read in the locale's encoding."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self._fallback = locale.getpreferredencoding(False) or "latin-1"

    def decode(self, data: bytes, final: bool = False) -> str:
        pending, _ = self._utf8.getstate()
        try:
            return self._utf8.decode(data, final)
        except UnicodeDecodeError:
            self._utf8.reset()
            return (pending + data).decode(self._fallback, errors="replace")
