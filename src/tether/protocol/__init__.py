"""The text tool-call protocol: `<tool_call>` rendering, parsing and repair.

Models without native function calling (and small local models that write calls
as text anyway) send calls as text:

    <tool_call>
    {"name": "write_file", "arguments": {"filepath": "game.py"}}
    <content>
    print("hi")
    </content>
    </tool_call>

File bodies travel in raw blocks named after the tool's `block_params`, so they
never need escaping. Parsing repairs what is safe to repair and refuses what may
have been cut off: closing the brackets after a half-written string would let
write_file replace a real file with a partial one.

One scanner (`_Segmenter`) decides where calls and `<think>` blocks begin and
end, for the streamed display (`StreamFilter`) and for the final parse
(`parse_reply`) alike, so what the user saw and what the history keeps agree.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.messages import Message, Role, Text, ToolCall, ToolResult, new_call_id
from ..core.toolspec import Tool, ToolTable

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
FUNCTION_OPEN = "<function="
FUNCTION_CLOSE = "</function>"
PARAM_OPEN = "<parameter="
PARAM_CLOSE = "</parameter>"
DEFAULT_BLOCK_NAMES = ("content", "old_content", "new_content", "stdin")

_TEXT_TAGS = (CALL_OPEN, THINK_OPEN, THINK_CLOSE, FUNCTION_OPEN)
_NAME_KEYS = ("name", "tool_name", "function_name", "tool", "function")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "params")
_ENVELOPE_KEYS = ("tool_call", "function", "function_call", "tool_use", "call")
_NAME_PREFIXES = ("functions.", "default_api.", "tools.")
_CALL_FENCE_LABELS = ("tool_call", "tool_code", "tool", "function_call")
_LOOSE_FENCE_LABELS = ("json", "")
_CALL_PREFIX_TOKENS = ("<|python_tag|>", "[TOOL_CALLS]")
"""Special tokens some chat templates leak in front of a bare JSON call."""
_SNIPPET_CHARS = 80
_LITERAL_EVAL_LIMIT = 200_000


@dataclass
class ParseResult:
    calls: list[ToolCall]
    """The calls to run, in the order the reply made them."""
    text: str
    """The visible answer: the reply without call blocks and `<think>` blocks, stripped."""
    thinking: str
    """The content of the reply's `<think>` blocks, joined."""
    errors: list[str]
    """One message per refused call, written to the model."""


# ---------------------------------------------------------------- the scanner

_TEXT_STOPS = re.compile(r"[<`\n\"]")
_JSON_STOPS = re.compile(r'["<]')
_STRING_STOPS = re.compile(r'["\\]')


def _block_names(table: ToolTable | None) -> set[str]:
    names = set(DEFAULT_BLOCK_NAMES)
    if table is not None:
        for tool in table:
            names.update(tool.block_params)
    return names


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


# ---------------------------------------------------------------- segments


@dataclass
class _Segment:
    kind: str  # text | think | call | stray
    offset: int
    open_tag: str = ""
    parts: list[str] = field(default_factory=list)
    close_tag: str = ""

    @property
    def body(self) -> str:
        return "".join(self.parts)

    @property
    def raw(self) -> str:
        return self.open_tag + self.body + self.close_tag


def _segments(text: str, block_names: set[str], base: int = 0) -> list[_Segment]:
    segmenter = _Segmenter(block_names)
    segments: list[_Segment] = []
    offset = base
    for kind, chunk in segmenter.feed(text) + segmenter.flush():
        _add_event(segments, kind, chunk, offset)
        offset += len(chunk)
    return segments


def _add_event(segments: list[_Segment], kind: str, chunk: str, offset: int) -> None:
    last = segments[-1] if segments else None
    if kind == "text":
        if last is not None and last.kind == "text":
            last.parts.append(chunk)
        else:
            segments.append(_Segment("text", offset, parts=[chunk]))
    elif kind in ("think_open", "call_open"):
        segments.append(_Segment(kind.split("_")[0], offset, open_tag=chunk))
    elif kind == "stray_think_close":
        segments.append(_Segment("stray", offset, open_tag=chunk))
    elif kind in ("thinking", "call") and last is not None:
        last.parts.append(chunk)
    elif kind in ("think_close", "call_close") and last is not None:
        last.close_tag = chunk


def _split_reply(text: str, block_names: set[str]) -> list[_Segment]:
    """Segments of the whole reply.

    The streaming scanner lets an unclosed raw block (or XML parameter value) run
    to the end of the reply. With the whole reply in hand, one left unclosed
    inside a call that does have its closing tag ends at that tag, and the rest
    is read again.
    """
    segments: list[_Segment] = []
    base = 0
    while True:
        found = _segments(text[base:], block_names, base)
        segments.extend(found)
        last = found[-1] if found else None
        cut = _unclosed_value_cut(last) if last is not None else None
        if last is None or cut is None:
            return segments
        closer = CALL_CLOSE if last.open_tag == CALL_OPEN else FUNCTION_CLOSE
        body = last.body
        last.parts, last.close_tag = [body[:cut]], closer
        base = last.offset + len(last.open_tag) + cut + len(closer)


def _unclosed_value_cut(segment: _Segment) -> int | None:
    """Where an unclosed call with an unclosed block or parameter value ends, if it has a closing tag."""
    if segment.kind != "call" or segment.close_tag:
        return None
    body = segment.body
    if segment.open_tag == FUNCTION_OPEN or body.lstrip().startswith(FUNCTION_OPEN):
        value_start = _unclosed_param_value_start(body)
    else:
        start = _first_json_start(body)
        value_start = _unclosed_block_value_start(
            body, _json_extent(body, start) if start >= 0 else 0
        )
    if value_start is None:
        return None
    closer = CALL_CLOSE if segment.open_tag == CALL_OPEN else FUNCTION_CLOSE
    cut = body.find(closer, value_start)
    return cut if cut >= 0 else None


# ---------------------------------------------------------------- JSON repair


class _Truncated(Exception):
    """The text ends where a value was still being written."""


class _Invalid(Exception):
    """The text is not JSON that can be safely repaired."""


_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NUMBER_CHARS = re.compile(r"[-+0-9.eE]+")
_WORD = re.compile(r"[A-Za-z_]\w*")
_LITERALS = {
    "true": "true",
    "false": "false",
    "null": "null",
    "True": "true",
    "False": "false",
    "None": "null",
}
_ESCAPES = set('"\\/bfnrt')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_CLOSERS = {"{": "}", "[": "]"}


class _JsonRepair:
    """One pass over almost-JSON, writing repaired JSON.

    Repairs: trailing commas, Python's True/False/None, Python strings ('single
    quoted', r"raw"), invalid string escapes, and missing closing brackets, but
    only after a complete value. Raises
    _Truncated when the text stops mid-value (an open string, a dangling `:` or
    `,`, a number that may have had more digits) and `at_eof` says the text may
    have been cut off there; otherwise such text is _Invalid.
    """

    def __init__(self, src: str, at_eof: bool) -> None:
        self.src, self.at_eof = src, at_eof
        self.out: list[str] = []
        self.stack: list[str] = []
        self.expect = "value"  # value | key | colon | after | key_or_close | value_or_close
        self.ended_on_number = False

    def run(self) -> str:
        i, n = 0, len(self.src)
        while i < n:
            ch = self.src[i]
            if ch in " \t\r\n":
                self.out.append(ch)
                i += 1
                continue
            self.ended_on_number = False
            i = self._token(ch, i)
        return self._finish()

    def _cut_off(self) -> Exception:
        return _Truncated() if self.at_eof else _Invalid()

    def _token(self, ch: str, i: int) -> int:
        if ch == '"':
            return self._string(i)
        if ch == "'":
            return self._python_string(i, raw=False)
        if ch in "{[":
            self._need("value", "value_or_close")
            self.stack.append(ch)
            self.out.append(ch)
            self.expect = "key_or_close" if ch == "{" else "value_or_close"
            return i + 1
        if ch in "}]":
            self._close(ch)
            return i + 1
        if ch == ",":
            if self.expect != "after" or not self.stack:
                raise _Invalid()
            self.out.append(ch)
            self.expect = "key" if self.stack[-1] == "{" else "value"
            return i + 1
        if ch == ":":
            self._need("colon")
            self.out.append(ch)
            self.expect = "value"
            return i + 1
        if ch in "-0123456789":
            return self._number(i)
        if ch.isalpha():
            return self._word(i)
        raise _Invalid()

    def _need(self, *states: str) -> None:
        if self.expect not in states:
            raise _Invalid()

    def _close(self, ch: str) -> None:
        if not self.stack or _CLOSERS[self.stack[-1]] != ch:
            raise _Invalid()
        if self.expect in ("key", "value"):
            self._drop_trailing_comma()
        elif self.expect not in ("after", "key_or_close", "value_or_close"):
            raise _Invalid()
        self.stack.pop()
        self.out.append(ch)
        self.expect = "after"

    def _drop_trailing_comma(self) -> None:
        for k in range(len(self.out) - 1, -1, -1):
            if self.out[k] == ",":
                del self.out[k]
                return
            if not self.out[k].isspace():
                break
        raise _Invalid()

    def _string(self, i: int) -> int:
        self._need("value", "key", "key_or_close", "value_or_close")
        src, n = self.src, len(self.src)
        piece = ['"']
        j = i + 1
        while True:
            m = _STRING_STOPS.search(src, j)
            if m is None:
                raise self._cut_off()
            k = m.start()
            piece.append(src[j:k])
            if src[k] == '"':
                break
            if k + 1 >= n:
                raise self._cut_off()
            j = self._escape(src, k, piece)
        piece.append('"')
        self.out.append("".join(piece))
        self.expect = "colon" if self.expect in ("key", "key_or_close") else "after"
        return k + 1

    def _escape(self, src: str, k: int, piece: list[str]) -> int:
        """Copy the escape at src[k]; a backslash JSON does not know stays a backslash."""
        nxt = src[k + 1]
        if nxt in _ESCAPES:
            piece.append(src[k : k + 2])
            return k + 2
        if nxt == "u":
            if _HEX4.match(src, k + 2):
                piece.append(src[k : k + 6])
                return k + 6
            if len(src) - (k + 2) < 4 and re.fullmatch(r"[0-9a-fA-F]*", src[k + 2 :]):
                raise self._cut_off()
        if nxt == "'":
            piece.append("'")
            return k + 2
        piece.append("\\\\")
        return k + 1

    def _python_string(self, quote: int, raw: bool) -> int:
        """The Python string literal whose quote is at `quote`, written out as a JSON string."""
        self._need("value", "key", "key_or_close", "value_or_close")
        src, mark = self.src, self.src[quote]
        j = quote + 1
        while j < len(src) and src[j] != mark:
            j += 2 if src[j] == "\\" else 1
        if j >= len(src):
            raise self._cut_off()
        body = src[quote + 1 : j]
        if raw:
            value = body
        else:
            try:  # a plain quoted literal: literal_eval evaluates nothing but the string
                value = ast.literal_eval(mark + body.replace("\n", "\\n") + mark)
            except (ValueError, SyntaxError) as exc:
                raise _Invalid() from exc
        self.out.append(json.dumps(value, ensure_ascii=False))
        self.expect = "colon" if self.expect in ("key", "key_or_close") else "after"
        return j + 1

    def _number(self, i: int) -> int:
        self._need("value", "value_or_close")
        m = _NUMBER_CHARS.match(self.src, i)
        assert m is not None
        token = m.group()
        if not _NUMBER.fullmatch(token):
            raise self._cut_off() if m.end() == len(self.src) else _Invalid()
        self.out.append(token)
        self.expect = "after"
        self.ended_on_number = True
        return m.end()

    def _word(self, i: int) -> int:
        m = _WORD.match(self.src, i)
        token = m.group() if m else self.src[i]
        end = i + len(token)
        if token in ("r", "R") and end < len(self.src) and self.src[end] in "\"'":
            return self._python_string(end, raw=True)  # r"TODO": a Python raw string
        if token in _LITERALS and self.expect in ("value", "value_or_close"):
            self.out.append(_LITERALS[token])
            self.expect = "after"
            return end
        if end == len(self.src) and any(lit.startswith(token) for lit in _LITERALS):
            raise self._cut_off()
        raise _Invalid()

    def _finish(self) -> str:
        if not self.stack:
            if self.expect == "after":
                return "".join(self.out)
            raise self._cut_off()
        if self.expect != "after":
            # After `:`, `,`, a key or an opening bracket the next value is missing.
            raise self._cut_off()
        if self.ended_on_number and self.at_eof:
            raise _Truncated()  # "12" may have been the start of "125"
        closers = "".join(_CLOSERS[c] for c in reversed(self.stack))
        return "".join(self.out) + closers


def _python_literal(src: str) -> Any:
    """A dict or list written in Python syntax (single quotes), or None."""
    if len(src) > _LITERAL_EVAL_LIMIT:
        return None
    try:
        value = ast.literal_eval(src.strip())
    except Exception:  # literal_eval raises many kinds on junk; none of them matter here
        return None
    return value if isinstance(value, (dict, list)) else None


def _decode(src: str, at_eof: bool) -> Any:
    """The JSON value in `src`, repaired if that is safe; raises _Truncated or _Invalid."""
    try:
        return json.loads(src, strict=False)
    except (ValueError, RecursionError):
        pass
    try:
        repaired = _JsonRepair(src, at_eof).run()
    except _Invalid:
        value = _python_literal(src)
        if value is None:
            raise
        return value
    try:
        return json.loads(repaired, strict=False)
    except (ValueError, RecursionError) as exc:
        raise _Invalid() from exc


def _string_end(s: str, quote: int) -> int:
    """The index just past the string opening at s[quote], or -1 if it never closes."""
    j = quote + 1
    while True:
        m = _STRING_STOPS.search(s, j)
        if m is None:
            return -1
        if s[m.start()] == '"':
            return m.start() + 1
        j = m.start() + 2


_EXTENT_STOPS = re.compile(r'["{}\[\]<]')


def _json_extent(s: str, start: int) -> int:
    """Where the JSON value opening at s[start] ends: its matching bracket, else the
    first `<` outside a string (a raw block or closing tag follows), else the end."""
    depth, i = 0, start
    while True:
        m = _EXTENT_STOPS.search(s, i)
        if m is None:
            return len(s)
        j, ch = m.start(), s[m.start()]
        if ch == '"':
            end = _string_end(s, j)
            if end < 0:
                return len(s)
            i = end
            continue
        if ch == "<":
            return j
        depth += 1 if ch in "{[" else -1
        if depth <= 0:
            return j + 1
        i = j + 1


def _first_json_start(s: str) -> int:
    """The first `{`, or an earlier `[` that opens a list of objects; -1 if none."""
    brace = s.find("{")
    bracket = s.find("[")
    if 0 <= bracket < brace and s[bracket + 1 : brace].strip() == "":
        return bracket
    return brace


def _json_values(src: str) -> list[str] | None:
    """`src` as a sequence of JSON objects/lists and nothing else, or None."""
    pos = _skip_space(src, 0)
    if pos >= len(src) or src[pos] not in "{[":
        return None
    values = []
    while True:
        end = _json_extent(src, pos)
        values.append(src[pos:end])
        pos = _skip_space(src, end, ",")
        if pos >= len(src):
            return values
        if src[pos] not in "{[":
            return None


def _skip_space(s: str, i: int, also: str = "") -> int:
    while i < len(s) and (s[i].isspace() or s[i] in also):
        i += 1
    return i


# ---------------------------------------------------------------- call shapes

_SNIFF_NAME = re.compile(
    r"""["']?(?:name|tool_name|function_name|tool|function)["']?\s*:\s*["']([\w.\-]+)"""
    r"""|<function=([\w.\-]+)"""
)
_BLOCK_TAG = re.compile(r"<([A-Za-z_][\w\-]*)>")
_FUNCTION_TAG = re.compile(r"<function=([^<>\n]*)>")
_PARAM_TAG = re.compile(r"<parameter=([^<>\n]*)>")
_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?P<label>[A-Za-z_][\w\-]*)?[^\n`]*\n(?P<body>.*?)"
    r"(?:(?P<close>^[ \t]*```[ \t]*$)|\Z)",
    re.M | re.S,
)


def _clean_name(name: str) -> str:
    name = name.strip().strip("\"'`").strip()
    for prefix in _NAME_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _sniff_name(src: str) -> str | None:
    """The tool name a broken call seems to give, for a useful refusal."""
    m = _SNIFF_NAME.search(src)
    if m is None:
        return None
    return _clean_name(m.group(1) or m.group(2))


def _strip_raw_block(value: str) -> str:
    """A raw block's text: the newline right after the opening tag is the tag's own; the
    newline before the closing tag is the content's (a file written as
    `<content>\nX\n</content>` ends with a newline, as text files should)."""
    if value.startswith("\r\n"):
        return value[2:]
    return value[1:] if value.startswith("\n") else value


def _strip_block(value: str) -> str:
    """A parameter value's text: one leading and one trailing newline are the tags' own."""
    crlf = value.startswith("\r\n")
    if crlf:
        value = value[2:]
    elif value.startswith("\n"):
        value = value[1:]
    if crlf and value.endswith("\r\n"):
        return value[:-2]
    return value[:-1] if value.endswith("\n") else value


def _ends_in_partial_tag(text: str) -> bool:
    k = text.rfind("<")
    return k >= 0 and ">" not in text[k:]


def _read_blocks(rest: str, closed: bool) -> tuple[dict[str, str], bool]:
    """The raw blocks after a call's JSON, and whether they were cut off.

    A block left open inside a closed call runs to the end of the call; one left
    open at the end of the reply may be missing its end, so it counts as cut off.
    """
    blocks: dict[str, str] = {}
    pos = 0
    while True:
        m = _BLOCK_TAG.search(rest, pos)
        if m is None:
            return blocks, not closed and _ends_in_partial_tag(rest[pos:])
        end = rest.find(f"</{m.group(1)}>", m.end())
        if end < 0:
            if not closed:
                return blocks, True
            blocks[m.group(1)] = _strip_raw_block(rest[m.end() :])
            return blocks, False
        blocks[m.group(1)] = _strip_raw_block(rest[m.end() : end])
        pos = end + len(m.group(1)) + 3


def _unclosed_block_value_start(body: str, pos: int) -> int | None:
    while True:
        m = _BLOCK_TAG.search(body, pos)
        if m is None:
            return None
        end = body.find(f"</{m.group(1)}>", m.end())
        if end < 0:
            return m.end()
        pos = end + len(m.group(1)) + 3


def _unclosed_param_value_start(body: str) -> int | None:
    pos = 0
    while True:
        m = _PARAM_TAG.search(body, pos)
        if m is None:
            return None
        end = body.find(PARAM_CLOSE, m.end())
        if end < 0:
            return m.end()
        pos = end + len(PARAM_CLOSE)


def _schema_types(prop: dict[str, Any]) -> set[str]:
    declared = prop.get("type")
    types = set(declared) if isinstance(declared, list) else {declared} if declared else set()
    for key in ("anyOf", "oneOf"):
        for branch in prop.get(key, []) or []:
            if isinstance(branch, dict):
                types |= _schema_types(branch)
    return types


def _properties(tool: Tool) -> dict[str, dict[str, Any]]:
    return tool.json_schema().get("properties", {})


def _coerce(value: str, prop: dict[str, Any]) -> Any:
    """An XML parameter's text as the type the schema asks for (text stays text)."""
    types = _schema_types(prop) - {"null"}
    if not types or "string" in types:
        return value
    s = value.strip()
    if "integer" in types and re.fullmatch(r"[-+]?\d{1,30}", s):
        return int(s)
    if "boolean" in types and s.lower() in ("true", "false"):
        return s.lower() == "true"
    if "number" in types and re.fullmatch(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?", s):
        return float(s)
    if types & {"array", "object"}:
        try:
            return json.loads(s)
        except (ValueError, RecursionError):
            return value
    return value


def _unwrap(obj: dict[str, Any]) -> dict[str, Any]:
    """The call inside `{"tool_call": {...}}` or OpenAI's `{"function": {...}}`."""
    for _ in range(3):
        if any(isinstance(obj.get(k), str) for k in _NAME_KEYS):
            return obj
        inner = next((obj[k] for k in _ENVELOPE_KEYS if isinstance(obj.get(k), dict)), None)
        if inner is None:
            return obj
        obj = inner
    return obj


def _name_and_rest(obj: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    obj = _unwrap(obj)
    for key in _NAME_KEYS:
        value = obj.get(key)
        if isinstance(value, str):
            return _clean_name(value), {k: v for k, v in obj.items() if k != key}
    return None, obj


def _argument_dict(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return dict(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        try:
            decoded = _decode(value, at_eof=False)
        except (_Invalid, _Truncated):
            return None
        return dict(decoded) if isinstance(decoded, dict) else None
    return None


def _arguments(tool: Tool, rest: dict[str, Any]) -> tuple[dict[str, Any], bool] | None:
    """The call's arguments, and whether they sat beside the name; None if unusable.

    A key like `input` that is also one of the tool's own parameters is taken as
    that parameter unless it holds an object.
    """
    props = _properties(tool)
    for key in _ARGUMENT_KEYS:
        if key not in rest or (key in props and not isinstance(rest[key], dict)):
            continue
        args = _argument_dict(rest[key])
        return None if args is None else (args, False)
    beside = {k: v for k, v in rest.items() if k in props or k not in ("id", "type")}
    return beside, True


def _escaped(buf: str, j: int) -> bool:
    """Whether the character at `j` follows an odd run of backslashes."""
    run = 0
    while j - run - 1 >= 0 and buf[j - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _without_block_tags(name: str, value: str) -> str:
    """`"content": "<content>print(1)</content>"`: a raw block's tags written inside the
    JSON string would be written to disk with the text; the tags go, the text stays."""
    opening, closing = f"<{name}>", f"</{name}>"
    body = value.strip()
    if not body.startswith(opening):
        return value
    inner = body[len(opening) :]
    if not inner.endswith(closing) or closing in inner[: -len(closing)]:
        return value  # the tags do not wrap the whole value exactly once: leave it as written
    return _strip_raw_block(inner[: -len(closing)])


def repair_block_values(call: ToolCall, table: ToolTable) -> ToolCall:
    """The call with raw-block tags taken out of its block parameters' JSON values."""
    tool = table.get(call.name)
    if tool is None:
        return call
    fixed = {
        k: _without_block_tags(k, v) if k in tool.block_params and isinstance(v, str) else v
        for k, v in call.arguments.items()
    }
    return call if fixed == call.arguments else ToolCall(call.id, call.name, fixed)


def _accepts_block(tool: Tool, name: str) -> bool:
    return name in tool.block_params or name in _properties(tool)


def _call_objects(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list) and len(value) == 1:
        return value["tool_calls"]
    return [value]


def _prefix_name(prefix: str) -> str | None:
    """`read_file {"filepath": ...}`: a bare tool name written before the JSON."""
    words = prefix.replace("`", " ").split()
    return _clean_name(words[-1]).rstrip(":") if words else None


# ---------------------------------------------------------------- refusals


def _cut_off_error(name: str | None) -> str:
    what = f"Your {name} call" if name else "Your tool call"
    return (
        f"{what} was cut off before its arguments were complete; nothing was run. "
        "Send the complete call again."
    )


def _tool_list(table: ToolTable) -> str:
    names = table.names()
    shown = ", ".join(names[:30])
    return shown + (", ..." if len(names) > 30 else "") if names else "(none)"


def _unknown_tool_error(name: str, table: ToolTable) -> str:
    return (
        f"There is no tool named {name!r}; nothing was run. Available tools: {_tool_list(table)}."
    )


def _no_name_error(table: ToolTable) -> str:
    return (
        'Your tool call has no "name"; nothing was run. Send {"name": ..., "arguments": {...}} '
        f"with one of: {_tool_list(table)}."
    )


def _snippet(src: str) -> str:
    flat = " ".join(src.split())
    return flat if len(flat) <= _SNIPPET_CHARS else flat[:_SNIPPET_CHARS] + "..."


def _invalid_json_error(src: str) -> str:
    return (
        f"Your tool call is not valid JSON (near: {_snippet(src)}); nothing was run. "
        'Send one JSON object like {"name": "TOOL", "arguments": {...}} inside <tool_call>...</tool_call>.'
    )


def _malformed_xml_error(src: str) -> str:
    return (
        f"Your tool call is malformed (near: {_snippet(src)}); nothing was run. "
        "Write <function=NAME> with <parameter=NAME>value</parameter> lines, or send JSON instead."
    )


def _bad_arguments_error(name: str) -> str:
    return f'The "arguments" of your {name} call must be a JSON object; nothing was run. Send the call again.'


# ---------------------------------------------------------------- parse_reply

_Found = list[ToolCall | str]
"""Calls and refusal messages, in reply order."""


class _ReplyParser:
    """Reads one whole reply. `native` means only shapes naming a real tool count."""

    def __init__(self, table: ToolTable, native: bool) -> None:
        self.table, self.native = table, native
        self.found: _Found = []
        self.visible: list[str] = []
        self.thinking: list[str] = []
        self.tagged_calls = False

    def parse(self, text: str) -> ParseResult:
        segments = _reclassify_stray_think(_split_reply(text, _block_names(self.table)))
        self.tagged_calls = any(s.kind == "call" for s in segments)
        for segment in segments:
            if segment.kind == "think":
                self.thinking.append(segment.body)
            elif segment.kind == "call":
                self._tagged_call(segment)
            elif segment.kind == "text":
                self._answer_text(segment.body)
        self._bare_object()
        calls = [repair_block_values(f, self.table) for f in self.found if isinstance(f, ToolCall)]
        errors = [f for f in self.found if isinstance(f, str)]
        thinking = "\n\n".join(t.strip() for t in self.thinking if t.strip())
        return ParseResult(calls, "".join(self.visible).strip(), thinking, errors)

    def _refuse(self, name: str | None, message: str) -> _Found | None:
        """A refusal, unless in native mode the text names no real tool (then it is text)."""
        if self.native and (name is None or name not in self.table):
            return None
        return [message]

    # -- <tool_call> and <function=...> blocks

    def _tagged_call(self, segment: _Segment) -> None:
        closed = bool(segment.close_tag)
        body = segment.body
        if segment.open_tag == FUNCTION_OPEN:
            found = self._xml_call(FUNCTION_OPEN + body, closed)
        elif body.lstrip().startswith(FUNCTION_OPEN):
            found = self._xml_call(body.lstrip(), closed)
        else:
            found = self._json_call(body, closed)
        if found is None:
            self.visible.append(segment.raw)
        else:
            self.found.extend(found)

    def _json_call(self, body: str, closed: bool) -> _Found | None:
        start = _first_json_start(body)
        if start < 0:
            if not closed:
                return self._refuse(_sniff_name(body), _cut_off_error(None))
            return self._refuse(None, _invalid_json_error(body or "(empty)"))
        values, end = self._json_sequence(body, start)
        rest = body[end:]
        blocks, blocks_cut = _read_blocks(rest, closed)
        at_eof = not closed and not rest.strip()
        found: _Found = []
        for k, src in enumerate(values):
            last = k == len(values) - 1
            outcome = self._object_calls(
                src,
                at_eof and last,
                blocks if last else {},
                blocks_cut and last,
                _prefix_name(body[:start]),
            )
            found.extend(outcome or [])
        return found or None

    @staticmethod
    def _json_sequence(body: str, start: int) -> tuple[list[str], int]:
        """Several JSON objects in one call block are several calls."""
        values, pos = [], start
        while True:
            end = _json_extent(body, pos)
            values.append(body[pos:end])
            nxt = _skip_space(body, end)
            if nxt >= len(body) or body[nxt] != "{":
                return values, end
            pos = nxt

    def _object_calls(
        self, src: str, at_eof: bool, blocks: dict[str, str], blocks_cut: bool, prefix: str | None
    ) -> _Found | None:
        try:
            value = _decode(src, at_eof)
        except _Truncated:
            return self._refuse(_sniff_name(src), _cut_off_error(_sniff_name(src)))
        except _Invalid:
            return self._refuse(_sniff_name(src), _invalid_json_error(src))
        found: _Found = []
        for obj in _call_objects(value):
            outcome = self._object_call(obj, blocks, blocks_cut, prefix)
            if outcome is not None:
                found.append(outcome)
        return found or None

    def _object_call(
        self, obj: Any, blocks: dict[str, str], blocks_cut: bool, prefix: str | None
    ) -> ToolCall | str | None:
        if not isinstance(obj, dict):
            return None if self.native else _invalid_json_error(repr(obj))
        name, rest = _name_and_rest(obj)
        if name is None and prefix in self.table:
            name = prefix
        if name is None:
            return None if self.native else _no_name_error(self.table)
        tool = self.table.get(name)
        if tool is None:
            return None if self.native else _unknown_tool_error(name, self.table)
        if blocks_cut:
            return _cut_off_error(name)
        resolved = _arguments(tool, rest)
        if resolved is None:
            return _bad_arguments_error(name)
        args = resolved[0]
        # A block needs no escaping, so where the JSON and a block disagree the block is right.
        args.update({k: v for k, v in blocks.items() if _accepts_block(tool, k)})
        return ToolCall(new_call_id(), tool.name, args)

    def _xml_call(self, body: str, closed: bool) -> _Found | None:
        m = _FUNCTION_TAG.match(body)
        if m is None:
            name = _sniff_name(body)
            if not closed:
                return self._refuse(name, _cut_off_error(name))
            return self._refuse(name, _malformed_xml_error(body))
        name = _clean_name(m.group(1))
        tool = self.table.get(name)
        if tool is None:
            return None if self.native else [_unknown_tool_error(name, self.table)]
        params, cut = _xml_params(body[m.end() :], closed)
        if cut:
            return [_cut_off_error(name)]
        props = _properties(tool)
        args = {k: _coerce(v, props.get(k, {})) for k, v in params.items()}
        return [ToolCall(new_call_id(), tool.name, args)]

    # -- answer text: fenced calls, then a reply that is only a JSON object

    def _answer_text(self, text: str) -> None:
        pos = 0
        for m in _FENCE.finditer(text):
            found = self._fenced_calls(m)
            if found is None:
                continue
            self.visible.append(text[pos : m.start()])
            self.found.extend(found)
            pos = m.end()
        self.visible.append(text[pos:])

    def _fenced_calls(self, m: re.Match[str]) -> _Found | None:
        label = (m.group("label") or "").lower()
        body, at_eof = m.group("body"), m.group("close") is None
        if label in _CALL_FENCE_LABELS:
            found = self._loose_calls(body, at_eof, report_invalid=True)
            if found is None and label == "tool_code":
                found = self._python_calls(body)
            return found
        if label in _LOOSE_FENCE_LABELS and not self.tagged_calls:
            found = self._loose_calls(body, at_eof, report_invalid=False)
            return found or (None if at_eof else self._untagged_call_with_blocks(body.strip()))
        return None

    def _bare_object(self) -> None:
        if self.found or self.tagged_calls:
            return
        text = "".join(self.visible).strip()
        for token in _CALL_PREFIX_TOKENS:
            text = text[len(token) :].lstrip() if text.startswith(token) else text
        if not text.startswith(("{", "[")):
            return
        found = self._loose_calls(text, at_eof=True, report_invalid=False)
        found = found or self._untagged_call_with_blocks(text)
        if found:
            self.found.extend(found)
            self.visible = []

    def _untagged_call_with_blocks(self, text: str) -> _Found | None:
        """`{"name": "write_file", ...}` then `<content>...</content>`: a whole call in the
        text protocol's form, only without the <tool_call> tags (small models drop them).
        Only when nothing but that tool's closed raw blocks follows the JSON."""
        if self.native or not text.startswith("{"):
            return None
        end = _json_extent(text, 0)
        name = _sniff_name(text[:end])
        tool = self.table.get(name) if name else None
        if tool is None:
            return None
        # A tool that only reads has no use for a block: one after it is an invented result.
        names = r"[A-Za-z_][\w\-]*" if tool.read_only else "|".join(
            re.escape(n) for n in tool.block_params
        )
        if not names or not re.fullmatch(rf"(?:\s*<({names})>.*?</\1>)+\s*", text[end:], re.S):
            return None
        return self._json_call(text[:end] if tool.read_only else text, closed=True)

    def _loose_calls(self, src: str, at_eof: bool, report_invalid: bool) -> _Found | None:
        """Calls from text that is only JSON; None unless every object is a call to a real tool."""
        values = _json_values(src)
        if values is None:
            return None
        found: _Found = []
        for k, value_src in enumerate(values):
            name = _sniff_name(value_src)
            try:
                value = _decode(value_src, at_eof and k == len(values) - 1)
            except _Truncated:
                return found + [_cut_off_error(name)] if name in self.table else None
            except _Invalid:
                return (
                    found + [_invalid_json_error(value_src)]
                    if report_invalid and name in self.table
                    else None
                )
            for obj in _call_objects(value):
                call = self._loose_object(obj)
                if call is None:
                    return None
                found.append(call)
        return found or None

    def _loose_object(self, obj: Any) -> ToolCall | None:
        """A call only if it names a real tool and every argument is one of its parameters."""
        if not isinstance(obj, dict):
            return None
        name, rest = _name_and_rest(obj)
        tool = self.table.get(name) if name else None
        if tool is None:
            return None
        resolved = _arguments(tool, rest)
        if resolved is None:
            return None
        args, beside = resolved
        if beside and not set(args) <= set(_properties(tool)):
            return None
        return ToolCall(new_call_id(), tool.name, args)

    def _python_calls(self, src: str) -> _Found | None:
        """`read_file(filepath="a.py")` in a tool_code fence, as some models write calls."""
        if len(src) > _LITERAL_EVAL_LIMIT:
            return None
        try:
            tree = ast.parse(src.strip())
        except Exception:  # SyntaxError, ValueError, RecursionError on junk
            return None
        found: _Found = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            tool = self.table.get(name) if isinstance(name, str) else None
            if tool is None:
                continue
            args = _python_arguments(node, tool)
            if args is None:
                return None
            found.append(ToolCall(new_call_id(), tool.name, args))
        return found or None


def _python_arguments(node: ast.Call, tool: Tool) -> dict[str, Any] | None:
    names = list(_properties(tool))
    if len(node.args) > len(names) or any(k.arg is None for k in node.keywords):
        return None
    try:
        args = {names[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
        args.update({str(k.arg): ast.literal_eval(k.value) for k in node.keywords})
    except Exception:  # a non-literal argument: not a call we can run
        return None
    return args


def _xml_params(rest: str, closed: bool) -> tuple[dict[str, str], bool]:
    """`<parameter=x>value</parameter>` pairs, and whether the last one was cut off.

    In a closed call, a value left unclosed ends at the next parameter or at
    `</function>`. Each search resumes where the last one failed or stopped, so
    many unclosed values still cost one pass.
    """
    params: dict[str, str] = {}
    pos = 0
    closes_left = True
    function_end = -1
    while True:
        m = _PARAM_TAG.search(rest, pos)
        if m is None:
            tail = rest[pos:]
            return params, not closed and _ends_in_partial_tag(tail) and FUNCTION_CLOSE not in tail
        name = _clean_name(m.group(1))
        end = rest.find(PARAM_CLOSE, m.end()) if closes_left else -1
        if end >= 0:
            params[name] = _strip_block(rest[m.end() : end])
            pos = end + len(PARAM_CLOSE)
            continue
        closes_left = False
        if not closed:
            return params, True
        if function_end < m.end():
            found = rest.find(FUNCTION_CLOSE, m.end())
            function_end = found if found >= 0 else len(rest)
        next_param = rest.find(PARAM_OPEN, m.end(), function_end)
        end = next_param if next_param >= 0 else function_end
        params[name] = _strip_block(rest[m.end() : end])
        pos = end


def _reclassify_stray_think(segments: list[_Segment]) -> list[_Segment]:
    """A `</think>` with no opening tag, before anything else: the text before it was thinking.

    Some chat templates put `<think>` into the prompt, so the reply starts inside it.
    """
    for k, segment in enumerate(segments):
        if segment.kind == "stray":
            before = "".join(s.body for s in segments[:k])
            return [_Segment("think", 0, parts=[before])] + segments[k + 1 :]
        if segment.kind != "text":
            return segments
    return segments


def parse_reply(text: str, table: ToolTable, *, native: bool = False) -> ParseResult:
    """The calls, visible answer, thinking and refusals in one model reply.

    `native=True`: the reply came from a request with native tools but carried
    no native calls; text then counts as a call only in a recognised shape that
    names a tool in the table.
    """
    return _ReplyParser(table, native).parse(text)


# ---------------------------------------------------------------- rendering

_TYPE_LABELS = {"integer": "int", "number": "number", "boolean": "bool", "object": "object"}

_PROTOCOL_RULES = """\
Rules:
- One JSON object per <tool_call>: {{"name": ..., "arguments": {{...}}}}.
- Parameters marked as blocks go after the JSON as raw blocks ({example_block}), \
written exactly as the text should be, with no escaping.
- {calls_rule}
- When you are done, answer normally, without any tags."""
_SEVERAL_CALLS = "You may make several calls in one reply; results come back as [Tool Result for 'name']."
_ONE_CALL = "Make one call, then stop: its result comes back as [Tool Result for 'name']."


def _first_sentence(description: str) -> str:
    line = next((ln.strip() for ln in description.strip().splitlines() if ln.strip()), "")
    m = re.search(r"(?<=[.!?])\s", line)
    return line[: m.start()] if m else line


def _type_label(prop: dict[str, Any]) -> str:
    branches = [
        b for b in prop.get("anyOf", []) or [] if isinstance(b, dict) and b.get("type") != "null"
    ]
    if len(branches) == 1:
        return _type_label(branches[0])
    if "enum" in prop:
        return "|".join(json.dumps(v) for v in prop["enum"])
    types = _schema_types(prop) - {"null"}
    if len(types) != 1:
        return ""
    kind = types.pop()
    if kind == "array":
        item = _type_label(prop.get("items", {})) or "str"
        return f"list[{item}]"
    return _TYPE_LABELS.get(kind, "")


def _param_label(name: str, prop: dict[str, Any], required: bool, block: bool) -> str:
    mark = "" if required else "?"
    if block:
        return f"{name}{mark}=<{name}> block"
    kind = _type_label(prop)
    return f"{name}{mark}: {kind}" if kind else f"{name}{mark}"


def _tool_line(tool: Tool) -> str:
    schema = tool.json_schema()
    required = set(schema.get("required", []))
    params = ", ".join(
        _param_label(name, prop, name in required, name in tool.block_params)
        for name, prop in schema.get("properties", {}).items()
    )
    return f"- {tool.name}({params}): {_first_sentence(tool.description)}"


def _example_value(name: str, prop: dict[str, Any]) -> Any:
    kind = _type_label(prop)
    if kind == "int":
        return 1
    if kind == "bool":
        return True
    return "hello.py" if "path" in name or "file" in name else "..."


def _example_call(table: ToolTable) -> str:
    tools = list(table)
    tool = table.get("write_file") or next((t for t in tools if t.block_params), tools[0])
    schema = tool.json_schema()
    required = schema.get("required", [])
    args: dict[str, Any] = {}
    for name in required:
        prop = schema["properties"].get(name, {})
        args[name] = 'print("hello")\n' if name in tool.block_params else _example_value(name, prop)
    return render_call_as_text(ToolCall("example", tool.name, args), table)


def render_tool_prompt(table: ToolTable, one_call: bool = False) -> str:
    """The text-protocol section of the system prompt, rendered from the table only.
    `one_call`: ask for one call per reply (a small model that sends several invents
    the results of the first ones)."""
    if not len(table):
        return ""
    block = next((t.block_params[0] for t in table if t.block_params), "content")
    lines = [
        "# Tools",
        "You can use these tools:",
        *(_tool_line(tool) for tool in table),
        "",
        "To use a tool, write a tool call like this, then stop and wait for its result:",
        _example_call(table),
        "",
        _PROTOCOL_RULES.format(
            example_block=f"<{block}>...</{block}>",
            calls_rule=_ONE_CALL if one_call else _SEVERAL_CALLS,
        ),
    ]
    return "\n".join(lines)


def _fits_block(name: str, value: Any) -> bool:
    """Text that would end its own block early goes in the JSON instead, escaped."""
    return isinstance(value, str) and f"</{name}>" not in value and CALL_CLOSE not in value


def render_call_as_text(call: ToolCall, table: ToolTable) -> str:
    """A call as the text protocol writes it: JSON, then raw blocks for the block params."""
    tool = table.get(call.name)
    block_names = tool.block_params if tool else ()
    blocks = [
        (n, call.arguments[n])
        for n in block_names
        if n in call.arguments and _fits_block(n, call.arguments[n])
    ]
    in_blocks = {n for n, _ in blocks}
    json_args = {k: v for k, v in call.arguments.items() if k not in in_blocks}
    head = json.dumps({"name": call.name, "arguments": json_args}, ensure_ascii=False, default=str)
    lines = [CALL_OPEN, head]
    lines += [f"<{name}>\n{value}</{name}>" for name, value in blocks]
    lines.append(CALL_CLOSE)
    return "\n".join(lines)


RESULT_MARKERS = ("[Tool Result for '", "[Tool Error for '")
"""How results are written back. A model that writes one itself is inventing a result:
the request stops there, and anything from there on is dropped."""


def cut_invented_results(text: str) -> str:
    """The reply up to the first line where the model starts writing a tool result itself."""
    cut = min(
        (m.start() for marker in RESULT_MARKERS
         for m in re.finditer(rf"^[ \t]*{re.escape(marker)}", text, re.M)),
        default=len(text),
    )
    return text[:cut]


def _render_result(result: ToolResult) -> str:
    label = "Tool Error" if result.is_error else "Tool Result"
    return f"[{label} for '{result.name}']\n{result.content}"


def _render_message(message: Message, table: ToolTable) -> tuple[Role, str]:
    """The role and the single text a message becomes under the text protocol."""
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, Text):
            pieces.append(part.text)
        elif isinstance(part, ToolCall):
            pieces.append(render_call_as_text(part, table))
        elif isinstance(part, ToolResult):
            pieces.append(_render_result(part))
    has_results = any(isinstance(p, ToolResult) for p in message.parts)
    role: Role = "user" if message.role == "tool" or has_results else message.role
    joiner = "\n\n" if has_results else "\n"
    return role, joiner.join(p for p in pieces if p)


def render_history_as_text(messages: Sequence[Message], table: ToolTable) -> list[Message]:
    """The same history with only Text parts, as a model without native tools reads it.

    Calls become `<tool_call>` text, results become user messages, thinking is
    dropped, and consecutive user messages are merged. The input is not changed.
    """
    rendered: list[Message] = []
    for message in messages:
        role, text = _render_message(message, table)
        if not text:
            continue
        if role == "user" and rendered and rendered[-1].role == "user":
            rendered[-1] = Message("user", [Text(rendered[-1].text + "\n\n" + text)])
        else:
            rendered.append(Message(role, [Text(text)]))
    return rendered
