"""Words as bash reads them: quoting, line continuations, comments, blanks.

What `lex_words` returns is the argv bash would build for one simple command, as long
as nothing in it expands (the scanner makes any command holding an expansion opaque).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BLANKS = " \t"
"""What bash itself splits words on; a carriage return is part of a word."""
WORD_BREAKS = ";&|()<>"
"""Bash's metacharacters besides blanks and newline: each ends a word, so a `#` after
one starts a comment."""
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


def normalize_whitespace(text: str) -> str:
    """Collapse unquoted blank runs to one space and blank runs holding a newline
    to one newline; quoted text is kept as written. Newlines survive because
    they separate commands: `a\\nb` must never equal `a b`."""
    out: list[str] = []
    pending = ""
    quote = ""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            step = 2 if quote == '"' and c == "\\" else 1
            out.append(text[i : i + step])
            quote = "" if c == quote else quote
            i += step
            continue
        if c == "\\" and text[i + 1 : i + 2] == "\n":
            i += 2  # a line continuation vanishes: `a\<newline>b` is the word `ab`
        elif c == "#" and (not out or pending or (len(out[-1]) == 1 and out[-1] in WORD_BREAKS)):
            end = _line_end(text, i)  # a comment: its quotes open nothing
            if pending and out:
                out.append(pending)
            pending = ""
            out.append(text[i:end])
            i = end
        elif c in BLANKS or c == "\n":
            pending = "\n" if "\n" in (c, pending) else " "
            i += 1
        else:
            if pending and out:
                out.append(pending)
            pending = ""
            step = 2 if c == "\\" else 1
            quote = c if c in "'\"" else ""
            out.append(text[i : i + step])
            i += step
    return "".join(out)


@dataclass
class Word:
    """One word of a simple command as bash reads it."""

    text: str = ""
    """The word after quote removal: what the program gets in its argv."""
    raw: str = ""
    """The word as written."""
    unquoted: str = ""
    """Its unquoted characters only, in order (quoted ones are left out)."""
    started: bool = False
    """Whether anything (even an empty `''`) was written: `''` is a word, a blank is not."""
    assignment: bool = False
    """NAME=... with NAME and `=` unquoted, the form bash treats as an assignment."""

    def add(self, raw: str, text: str, *, quoted: bool) -> None:
        self.raw += raw
        self.text += text
        if not quoted:
            self.unquoted += text
        self.started = True


def lex_words(text: str) -> list[Word] | None:
    """Split one simple command into words with bash's quoting rules; None when a
    quote is left open. Expansions are not performed (the scanner makes any command
    holding one opaque), so `$x` is kept as the two characters."""
    words: list[Word] = []
    word = Word()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in BLANKS or c == "\n":
            if word.started:
                words.append(_finished(word))
            word = Word()
            i += 1
        elif c == "\\":
            escaped = text[i + 1 : i + 2]
            if escaped != "\n":  # a line continuation vanishes
                word.add(text[i : i + 2], escaped or "\\", quoted=bool(escaped))
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return None
            word.add(text[i : end + 1], text[i + 1 : end], quoted=True)
            i = end + 1
        elif c == '"':
            end = _double_quoted_end(text, i)
            if end < 0:
                return None
            word.add(text[i : end + 1], _double_quoted_text(text[i + 1 : end]), quoted=True)
            i = end + 1
        else:
            word.add(c, c, quoted=False)
            i += 1
    if word.started:
        words.append(_finished(word))
    return words


def _finished(word: Word) -> Word:
    word.assignment = bool(ASSIGNMENT.match(word.raw))
    return word


def _double_quoted_end(text: str, start: int) -> int:
    """Index of the `"` closing the one at `start`, or -1."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i
        else:
            i += 1
    return -1


DOUBLE_QUOTE_ESCAPES = '$`"\\\n'
"""The only characters a backslash escapes inside double quotes; before any other
it stays a backslash."""


def _double_quoted_text(inner: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(inner):
        if inner[i] == "\\" and inner[i + 1 : i + 2] and inner[i + 1] in DOUBLE_QUOTE_ESCAPES:
            if inner[i + 1] != "\n":
                out.append(inner[i + 1])
            i += 2
        else:
            out.append(inner[i])
            i += 1
    return "".join(out)


def _line_end(text: str, start: int) -> int:
    """Index of the newline ending the line `start` is on (len(text) on the last line)."""
    end = text.find("\n", start)
    return len(text) if end < 0 else end
