"""Decoding almost-JSON: what is safe to repair is repaired, what may be cut off is refused.

Closing the brackets after a half-written string would let write_file replace a real
file with a partial one, so text that stops mid-value raises `_Truncated`.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_LITERAL_EVAL_LIMIT = 200_000
_STRING_STOPS = re.compile(r'["\\]')


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


def _skip_space(s: str, i: int, also: str = "") -> int:
    while i < len(s) and (s[i].isspace() or s[i] in also):
        i += 1
    return i
