"""The structural scanner: a command line cut into simple commands at bash's control
operators, with the text of substitutions kept for a separate look, and what was found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .shell_words import BLANKS, WORD_BREAKS, _line_end, normalize_whitespace

SEPARATORS = {
    ";": "';' separator",
    "&&": "'&&'",
    "||": "'||'",
    "|": "pipe '|'",
    "|&": "pipe '|&'",
    "&": "background '&'",
}
REDIRECTIONS = ("&>>", "<<<", "<<-", "&>", ">>", "<<", "<&", ">&", "<>", ">|", "<", ">")
"""Bash's redirection operators, longest first so the longest one matches."""


@dataclass
class _Findings:
    parts: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    opaque: bool = False
    seen: set[str] = field(default_factory=set)

    def note(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)

    def refuse(self, reason: str) -> None:
        self.opaque = True
        self.note(reason)

    def add_part(self, text: str) -> None:
        if text and text not in self.seen:
            self.seen.add(text)
            self.parts.append(text)


class _Scanner:
    """Walks `text` once, cutting it into raw simple-command segments at unquoted
    control operators and collecting the text of substitutions for a separate look."""

    def __init__(self, text: str, found: _Findings) -> None:
        self.text = text
        self.found = found
        self.pos = 0
        self.buf: list[str] = []
        self.segments: list[str] = []
        self.nested: list[str] = []
        self.handlers = self._handlers()
        self.word_start = True
        """Whether the next character would begin a word: only there does `#` start a comment."""

    def run(self) -> None:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            handler = self.handlers.get(c)
            if c == "#" and self.word_start:
                self._comment()
            elif text.startswith("\\\n", self.pos):
                self.pos += 2  # a line continuation vanishes, and the word goes on as before
            elif handler is not None:
                handler()
                self.word_start = c in WORD_BREAKS or c == "\n"
            else:
                self._take(1)
                self.word_start = c in BLANKS
        self._cut()

    def _comment(self) -> None:
        """Bash drops a comment up to the newline: quotes, backslashes and `$` in it mean
        nothing, so `git status #'` does not open a quote that hides the next line."""
        self.pos = _line_end(self.text, self.pos)

    def _handlers(self) -> dict[str, Callable[[], None]]:
        return {
            "\\": self._backslash,
            "'": self._single_quote,
            '"': self._double_quote,
            "$": self._dollar,
            "`": self._backtick,
            "\n": self._newline,
            ";": self._operator,
            "&": self._operator,
            "|": self._operator,
            "<": self._redirection,
            ">": self._redirection,
            "(": self._parenthesis,
            ")": self._parenthesis,
        }

    # each handler consumes at least one character

    def _take(self, count: int) -> None:
        self.buf.append(self.text[self.pos : self.pos + count])
        self.pos += count

    def _cut(self) -> None:
        segment = normalize_whitespace("".join(self.buf))
        if segment:
            self.segments.append(segment)
        self.buf = []

    def _backslash(self) -> None:
        if self.pos + 1 == len(self.text):
            self.found.refuse("a backslash at the end")
        self._take(2)

    def _single_quote(self) -> None:
        end = self.text.find("'", self.pos + 1)
        if end < 0:
            self.found.refuse("unbalanced quote")
            self._take(len(self.text) - self.pos)
        else:
            self._take(end + 1 - self.pos)

    def _double_quote(self) -> None:
        text, i = self.text, self.pos + 1
        while i < len(text) and text[i] != '"':
            if text[i] == "\\":
                i += 2
            elif text[i] == "$" and _expands(text[i + 1 : i + 2]):
                i = self._expansion_at(i)
            elif text[i] == "`":
                i = self._backtick_at(i)
            else:
                i += 1
        if i >= len(text):
            self.found.refuse("unbalanced quote")
        self._take(min(i + 1, len(text)) - self.pos)

    def _dollar(self) -> None:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt == "'":
            self.found.refuse("$'...' quoting")
            self._take(1 + self._ansi_c_quote_length(self.pos + 1))
        elif nxt == '"':
            self.found.refuse('$"..." quoting')
            self._take(1)
        elif _expands(nxt):
            end = self._expansion_at(self.pos)
            self._take(end - self.pos)
        else:
            self._take(1)

    def _ansi_c_quote_length(self, start: int) -> int:
        """Length of `$'...'` text from its opening quote; backslash escapes apply inside."""
        text, i = self.text, start + 1
        while i < len(text) and text[i] != "'":
            i += 2 if text[i] == "\\" else 1
        if i >= len(text):
            self.found.refuse("unbalanced quote")
        return min(i + 1, len(text)) - start

    def _expansion_at(self, i: int) -> int:
        """Note the expansion starting with `$` at `i`; returns the index just past it."""
        text, nxt = self.text, self.text[i + 1 : i + 2]
        if nxt == "(":
            self.found.refuse("command substitution $(...)")
            end = _closing_paren(text, i + 2)
            self.nested.append(text[i + 2 : end - 1])
            return min(end, len(text))
        if nxt == "{":
            self.found.refuse("parameter expansion ${...}")
            end = text.find("}", i + 2)
            return len(text) if end < 0 else end + 1
        self.found.refuse("variable expansion $" + nxt)
        return i + 2

    def _backtick(self) -> None:
        end = self._backtick_at(self.pos)
        self._take(end - self.pos)

    def _backtick_at(self, i: int) -> int:
        self.found.refuse("backtick substitution")
        text, j = self.text, i + 1
        while j < len(text) and text[j] != "`":
            j += 2 if text[j] == "\\" else 1
        if j >= len(text):
            self.found.refuse("unbalanced backtick")
        self.nested.append(text[i + 1 : j])
        return min(j + 1, len(text))

    def _newline(self) -> None:
        self.found.note("newline")
        self.pos += 1
        self._cut()

    def _operator(self) -> None:
        text, i = self.text, self.pos
        two = text[i : i + 2]
        if two in ("&>",):
            self._redirection()
            return
        if two in (";;", ";&"):
            self.found.refuse("case syntax " + two)
            op = two
        elif two in ("&&", "||", "|&"):
            op = two
        else:
            op = text[i]
        self.found.note(SEPARATORS.get(op, op))
        self.pos += len(op)
        self._cut()

    def _redirection(self) -> None:
        text, i = self.text, self.pos
        if text[i + 1 : i + 2] == "(" and text[i] in "<>":
            self.found.refuse("process substitution")
            end = _closing_paren(text, i + 2)
            self.nested.append(text[i + 2 : end - 1])
            self._take(min(end, len(text)) - i)
            return
        op = next(op for op in REDIRECTIONS if text.startswith(op, i))
        here = op in ("<<", "<<-")
        self.found.refuse("here-document" if here else f"redirection '{op}'")
        self._take(len(op))

    def _parenthesis(self) -> None:
        self.found.refuse("subshell or grouping ( )")
        self.pos += 1
        self._cut()


def _expands(nxt: str) -> bool:
    """Whether `$` followed by `nxt` may expand. Shells differ (zsh has `$=x`,
    `$~x`), so only a dollar before a blank, a quote or the end counts as literal."""
    return bool(nxt) and nxt not in BLANKS + "\n\"'"


def _closing_paren(text: str, start: int) -> int:
    """Index just past the `)` closing a `(` opened before `start`, skipping quoted
    text; len(text) + 1 when it never closes."""
    depth, i = 1, start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            end = text.find(c, i + 1)
            i = len(text) if end < 0 else end + 1
            continue
        depth += {"(": 1, ")": -1}.get(c, 0)
        i += 1
        if depth == 0:
            return i
    return len(text) + 1
