"""The one scanner: where calls and `<think>` blocks begin and end, as text streams in.

`StreamFilter` uses it for the streamed display and `segments` for the final parse,
so what the user saw and what the history keeps agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..core.toolspec import ToolTable
from .jsonrepair import _STRING_STOPS
from .tags import (
    CALL_CLOSE,
    CALL_OPEN,
    FUNCTION_CLOSE,
    FUNCTION_OPEN,
    PARAM_CLOSE,
    PARAM_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    _block_names,
)

_TEXT_TAGS = (CALL_OPEN, THINK_OPEN, THINK_CLOSE, FUNCTION_OPEN)
_TEXT_STOPS = re.compile(r"[<`\n\"]")
_JSON_STOPS = re.compile(r'["<]')


def _partial_tag_start(buf: str, start: int, tags: Sequence[str]) -> int:
    """Where a tag that the end of `buf` may still complete begins (len(buf) if none).

    Every tag has its only `<` at position 0, so only the last `<` can start one.
    """
    longest = max(len(t) for t in tags)
    k = buf.rfind("<", max(start, len(buf) - longest + 1))
    if k < 0:
        return len(buf)
    tail = buf[k:]
    return k if any(t.startswith(tail) for t in tags) else len(buf)


def _match_tag(buf: str, j: int, tags: Sequence[str]) -> tuple[str | None, bool]:
    """The tag starting at buf[j], and whether buf ends inside what may still become one."""
    for tag in tags:
        if buf.startswith(tag, j):
            return tag, False
    return None, _partial_tag_start(buf, j, tags) == j


class _Segmenter:
    """Splits a reply, fed in pieces, into answer text, thinking and call text.

    Emits (kind, chunk) events that together spell the input exactly: "text",
    "thinking", "call" (call body), and the tags "call_open", "call_close",
    "think_open", "think_close", "stray_think_close". Only a possible partial tag
    at the end of the input is held back, so the work is linear in the input.

    Inside a call, raw blocks (`<content>` ... `</content>`), XML parameter values
    and JSON strings are skipped over, so a file body that mentions
    `</tool_call>` does not end the call. A tag inside inline code (`like this`)
    in the answer text is not a tag.
    """

    def __init__(self, block_names: Iterable[str]) -> None:
        self._buf = ""
        self._mode = "text"  # text | think | json | block | xml | param
        self._call_close = ""
        self._closer = ""
        self._in_string = False
        self._escape = False
        self._code_ticks = 0
        self._tick_run = 0
        self._quoted = False  # inside a JSON string value ("key": "...) on this line
        self._last_sig = ""  # the last character of this line's answer text that is not a space
        self._block_opens = tuple(f"<{name}>" for name in sorted(block_names))
        self._events: list[tuple[str, list[str]]] = []

    @property
    def in_call(self) -> bool:
        return self._mode not in ("text", "think")

    def feed(self, delta: str) -> list[tuple[str, str]]:
        buf = self._buf + delta
        i = 0
        while i < len(buf):
            i, wait = self._scan(buf, i)
            if wait:
                break
        self._buf = buf[i:]
        return self._take()

    def flush(self) -> list[tuple[str, str]]:
        """End of input: a held-back partial tag was just text after all."""
        kind = {"text": "text", "think": "thinking"}.get(self._mode, "call")
        self._emit(kind, self._buf)
        self._buf = ""
        return self._take()

    # -- plumbing

    def _emit(self, kind: str, chunk: str) -> None:
        if not chunk:
            return
        if self._events and self._events[-1][0] == kind and kind in ("text", "thinking", "call"):
            self._events[-1][1].append(chunk)
        else:
            self._events.append((kind, [chunk]))

    def _take(self) -> list[tuple[str, str]]:
        events = [(kind, "".join(chunks)) for kind, chunks in self._events]
        self._events = []
        return events

    def _scan(self, buf: str, i: int) -> tuple[int, bool]:
        if self._mode == "text":
            return self._scan_text(buf, i)
        if self._mode == "think":
            return self._scan_until(buf, i, THINK_CLOSE, "thinking")
        if self._mode == "json":
            return self._scan_json(buf, i)
        if self._mode == "xml":
            return self._scan_xml(buf, i)
        return self._scan_until(buf, i, self._closer, "call")  # block | param

    # -- answer text

    def _scan_text(self, buf: str, i: int) -> tuple[int, bool]:
        if self._tick_run and buf[i] != "`":
            self._end_tick_run()
        m = _TEXT_STOPS.search(buf, i)
        if m is None:
            self._emit("text", buf[i:])
            return len(buf), False
        j = m.start()
        self._emit_text(buf[i:j])
        ch = buf[j]
        if ch == "\n":
            self._code_ticks = self._tick_run = 0
            self._quoted, self._last_sig = False, ""
            self._emit("text", ch)
            return j + 1, False
        if ch == '"':
            if self._quoted:
                self._quoted = _escaped(buf, j)
            else:  # a string opens a JSON value only after `:`, `,`, `[` or `{`
                self._quoted = self._last_sig in (":", ",", "[", "{")
            self._emit_text(ch)
            return j + 1, False
        if ch == "`":
            k = j
            while k < len(buf) and buf[k] == "`":
                k += 1
            self._tick_run += k - j
            self._emit("text", buf[j:k])
            return k, False
        if self._code_ticks:
            self._emit("text", ch)
            return j + 1, False
        tag, wait = _match_tag(buf, j, _TEXT_TAGS)
        if wait:
            return j, True
        if tag is None or (self._quoted and tag in (THINK_OPEN, THINK_CLOSE)):
            # `"content": "<think>"` in a bare JSON call is a value, not a thinking block
            self._emit("text", ch)
            return j + 1, False
        self._open(tag)
        return j + len(tag), False

    def _emit_text(self, chunk: str) -> None:
        self._emit("text", chunk)
        stripped = chunk.rstrip()
        if stripped:
            self._last_sig = stripped[-1]

    def _end_tick_run(self) -> None:
        """A run of backticks opens or closes inline code; three or more is a fence."""
        run, self._tick_run = self._tick_run, 0
        if run >= 3:
            return
        if self._code_ticks == 0:
            self._code_ticks = run
        elif run == self._code_ticks:
            self._code_ticks = 0

    def _open(self, tag: str) -> None:
        if tag == THINK_OPEN:
            self._emit("think_open", tag)
            self._mode = "think"
        elif tag == THINK_CLOSE:
            self._emit("stray_think_close", tag)
        else:
            self._emit("call_open", tag)
            self._in_string = self._escape = False
            if tag == CALL_OPEN:
                self._mode, self._call_close = "json", CALL_CLOSE
            else:
                self._mode, self._call_close = "xml", FUNCTION_CLOSE

    # -- inside a think block, a raw block or an XML parameter value

    def _scan_until(self, buf: str, i: int, closer: str, kind: str) -> tuple[int, bool]:
        j = buf.find(closer, i)
        if j < 0:
            k = _partial_tag_start(buf, i, (closer,))
            self._emit(kind, buf[i:k])
            return k, k < len(buf)
        self._emit(kind, buf[i:j])
        if self._mode == "think":
            self._emit("think_close", closer)
            self._mode = "text"
        else:
            self._emit("call", closer)
            self._mode = "json" if self._mode == "block" else "xml"
        return j + len(closer), False

    # -- inside a call

    def _scan_json(self, buf: str, i: int) -> tuple[int, bool]:
        if self._in_string:
            return self._scan_string(buf, i), False
        m = _JSON_STOPS.search(buf, i)
        if m is None:
            self._emit("call", buf[i:])
            return len(buf), False
        j = m.start()
        self._emit("call", buf[i:j])
        if buf[j] == '"':
            self._in_string = True
            self._emit("call", '"')
            return j + 1, False
        tag, wait = _match_tag(buf, j, (self._call_close, FUNCTION_OPEN, *self._block_opens))
        if wait:
            return j, True
        if tag is None:
            self._emit("call", "<")
            return j + 1, False
        if tag == self._call_close:
            self._close_call(tag)
        elif tag == FUNCTION_OPEN:
            self._emit("call", tag)
            self._mode = "xml"
        else:
            self._emit("call", tag)
            self._mode, self._closer = "block", "</" + tag[1:]
        return j + len(tag), False

    def _scan_string(self, buf: str, i: int) -> int:
        if self._escape:
            self._escape = False
            self._emit("call", buf[i])
            return i + 1
        m = _STRING_STOPS.search(buf, i)
        if m is None:
            self._emit("call", buf[i:])
            return len(buf)
        j = m.start()
        if buf[j] == '"':
            self._in_string = False
            self._emit("call", buf[i : j + 1])
            return j + 1
        if j + 1 < len(buf):
            self._emit("call", buf[i : j + 2])
            return j + 2
        self._escape = True
        self._emit("call", buf[i:])
        return len(buf)

    def _scan_xml(self, buf: str, i: int) -> tuple[int, bool]:
        j = buf.find("<", i)
        if j < 0:
            self._emit("call", buf[i:])
            return len(buf), False
        self._emit("call", buf[i:j])
        tag, wait = _match_tag(buf, j, (self._call_close, PARAM_OPEN))
        if wait:
            return j, True
        if tag is None:
            self._emit("call", "<")
            return j + 1, False
        if tag == self._call_close:
            self._close_call(tag)
        else:
            self._emit("call", tag)
            self._mode, self._closer = "param", PARAM_CLOSE
        return j + len(tag), False

    def _close_call(self, tag: str) -> None:
        self._emit("call_close", tag)
        self._mode = "text"
        self._in_string = self._escape = False


class StreamFilter:
    """Feeds streamed text deltas; hides <tool_call>...</tool_call> and moves <think>...</think> to thinking.

    Also hides the bare XML call shape (`<function=NAME>...</function>`) and a
    stray `</think>`. Only a possible partial tag at the end is held back.
    """

    def __init__(self, table: ToolTable | None = None) -> None:
        self._segmenter = _Segmenter(_block_names(table))

    @property
    def inside_call(self) -> bool:
        """True while the stream is in the middle of a tool call (the UI may say so)."""
        return self._segmenter.in_call

    def feed(self, delta: str) -> list[tuple[str, str]]:
        """The ("text"|"thinking", chunk) pieces that are safe to show now."""
        return _visible_events(self._segmenter.feed(delta))

    def flush(self) -> list[tuple[str, str]]:
        """The rest, at the end of the stream."""
        return _visible_events(self._segmenter.flush())


def _visible_events(events: list[tuple[str, str]]) -> list[tuple[str, str]]:
    shown: list[tuple[str, str]] = []
    for kind, chunk in events:
        if kind not in ("text", "thinking"):
            continue
        if shown and shown[-1][0] == kind:
            shown[-1] = (kind, shown[-1][1] + chunk)
        else:
            shown.append((kind, chunk))
    return shown


def _escaped(buf: str, j: int) -> bool:
    """Whether the character at `j` follows an odd run of backslashes."""
    run = 0
    while j - run - 1 >= 0 and buf[j - run - 1] == "\\":
        run += 1
    return run % 2 == 1
