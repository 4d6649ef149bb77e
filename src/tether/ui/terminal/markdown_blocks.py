"""A markdown stream cut into blocks as it arrives, at the boundaries markdown itself has,
and an open block kept bounded by printing its head ahead of the rest."""

from __future__ import annotations

import re

from .markdown_lines import (
    _ATX_HEADING,
    _BLOCK_QUOTE,
    _QUOTE_MARKERS,
    _SETEXT_UNDERLINE,
    _THEMATIC_BREAK,
    _closes_fence,
    _fence_opener,
    _html_interrupts_paragraph,
    _html_start,
    _HtmlStart,
    _is_blank,
    _is_code_indented,
    _list_interrupts_paragraph,
    _list_item,
    _starts_indented,
    _starts_other_block,
    _starts_table,
)

MAX_OPEN_LINES = 60
"""An open block longer than this has its first lines printed ahead of the rest."""
MAX_OPEN_CHARS = 4096
"""The same bound in characters."""
HEAD_BATCH_LINES = 30
"""How many lines of an oversized block are printed ahead at a time..."""
HEAD_BATCH_CHARS = 2048
"""...or how many characters, whichever comes first."""


class _ContainerState:
    """Enough of a list's or quote's inside to know whether an unmarked line continues it.

    A line that is neither indented into a list item nor marked with ">" still
    continues it only while its last element is a paragraph (a "lazy" line).
    """

    def __init__(self) -> None:
        self.in_paragraph = False
        self.content_indent = 0  # where the current list item's text starts
        self._fence: tuple[str, int] | None = None

    def take(self, inner: str) -> None:
        """Note one line of the container's content, its markers removed."""
        if self._fence is not None:
            if _closes_fence(inner, *self._fence):
                self._fence = None
            return
        fence = _fence_opener(inner)
        if fence is not None:
            self._fence, self.in_paragraph = (fence[0], fence[1]), False
            return
        if _is_blank(inner) or _ATX_HEADING.match(inner) or _THEMATIC_BREAK.match(inner):
            self.in_paragraph = False
        elif self.in_paragraph:  # what cannot interrupt a paragraph continues it
            self.in_paragraph = not (
                _SETEXT_UNDERLINE.match(inner) or _html_interrupts_paragraph(inner)
            )
        else:
            self.in_paragraph = not (_is_code_indented(inner) or _html_start(inner))

    def take_quote_line(self, line: str) -> None:
        self.take(_QUOTE_MARKERS.sub("", line, count=1))

    def take_list_line(self, line: str) -> None:
        line = line.expandtabs(4)  # a tab indents to the next multiple of four columns
        item = _list_item(line)
        if item is None:
            spaces = len(line) - len(line.lstrip(" "))
            self.take(line[min(spaces, self.content_indent) :])
            return
        indent = len(item.group(1))
        if indent < self.content_indent:
            self._fence = None  # a new item at this depth ends any code inside the last one
        content = item.group(3) or ""
        self.content_indent = len(line) - len(content) if content else len(line) + 1
        self.take(content)


class BlockSplitter:
    """Splits streamed markdown into blocks, one complete line at a time.

    Each complete line is looked at once, so splitting costs time linear in the
    text. A block is finished when the line that starts the next one arrives (or
    a blank line, for blocks a blank line always ends). The last, unfinished line
    always belongs to the open block.
    """

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._blanks: list[str] = []  # blank lines that may still belong to a list or code
        self._kind: str | None = None
        self._fence: tuple[str, int] | None = None
        self._html_end: re.Pattern[str] | None = None  # for HTML blocks that run to a marker
        self._container = _ContainerState()  # for lists and quotes
        self._partial: list[str] = []
        self._finished: list[str] = []

    def feed(self, delta: str) -> list[str]:
        """Take more text; return the blocks it finished, in order."""
        pieces = delta.replace("\r", "").split("\n")
        for piece in pieces[:-1]:
            self._partial.append(piece)
            line = "".join(self._partial)
            self._partial.clear()
            self._take_line(line)
        if pieces[-1]:
            self._partial.append(pieces[-1])
        return self._drain()

    def close(self) -> list[str]:
        """The text is complete: return every block not returned yet."""
        if self._partial:
            line = "".join(self._partial)
            self._partial.clear()
            self._take_line(line)
        self._finish()
        return self._drain()

    @property
    def open_lines(self) -> list[str]:
        """The complete lines of the open block (not counting trailing blank lines)."""
        return self._lines

    @property
    def open_text(self) -> str:
        """Everything not yet returned as a finished block, unfinished line included."""
        complete = "".join(line + "\n" for line in self._lines + self._blanks)
        return complete + "".join(self._partial)

    def drop_open_lines(self, start: int, stop: int) -> None:
        """Forget lines [start:stop) of the open block, once they have been printed."""
        del self._lines[start:stop]

    def _drain(self) -> list[str]:
        finished, self._finished = self._finished, []
        return finished

    def _finish(self) -> None:
        if self._lines:
            self._finished.append("\n".join(self._lines))
        self._lines = []
        self._blanks = []
        self._kind = None
        self._fence = None
        self._html_end = None

    def _take_line(self, line: str) -> None:
        if self._kind == "fence":
            self._lines.append(line)
            if self._fence is not None and _closes_fence(line, *self._fence):
                self._finish()
            return
        if self._html_end is not None:
            self._lines.append(line)
            if self._html_end.search(line):
                self._finish()
            return
        if _is_blank(line):
            self._take_blank(line)
            return
        if self._kind is not None and self._absorb(line):
            return
        self._finish()
        self._start(line)

    def _take_blank(self, line: str) -> None:
        if self._kind in ("list", "indented"):
            self._blanks.append(line)  # the next line decides whether the block goes on
        else:
            self._finish()

    def _start(self, line: str) -> None:
        fence = _fence_opener(line)
        if fence is not None:
            self._kind, self._fence = "fence", (fence[0], fence[1])
        elif _ATX_HEADING.match(line) or _THEMATIC_BREAK.match(line):
            self._finished.append(line)  # one line, complete in itself
            return
        elif _list_item(line):
            self._kind, self._container = "list", _ContainerState()
            self._container.take_list_line(line)
        elif _BLOCK_QUOTE.match(line):
            self._kind, self._container = "quote", _ContainerState()
            self._container.take_quote_line(line)
        elif _is_code_indented(line):
            self._kind = "indented"
        elif (html := _html_start(line)) is not None:
            self._start_html(line, html)
            return
        else:
            self._kind = "paragraph"
        self._lines = [line]

    def _start_html(self, line: str, html: _HtmlStart) -> None:
        self._kind, self._lines = "html", [line]
        if html.end is not None:
            if html.end.search(line.lstrip(" ")[1:]):
                self._finish()  # opened and closed on one line
            else:
                self._html_end = html.end

    def _absorb(self, line: str) -> bool:
        """Add a non-blank line to the open block if it belongs there; False starts a new one."""
        if self._blanks:
            if not self._continues_after_blank(line):
                return False
            self._lines.extend(self._blanks)
            self._blanks = []
            if self._kind == "list":
                self._container.take("")
                self._container.take_list_line(line)
        elif not self._belongs(line):
            return False
        elif self._kind == "paragraph" and self._turns_paragraph_into_something_else(line):
            return True
        self._lines.append(line)
        return True

    def _continues_after_blank(self, line: str) -> bool:
        if self._kind == "list":
            return _starts_indented(line) or _list_item(line) is not None
        return _is_code_indented(line)

    def _belongs(self, line: str) -> bool:
        """Whether a line right after the open block's last line continues it."""
        if self._kind == "indented":
            return _is_code_indented(line)
        if self._kind == "html":
            return True  # an HTML block runs to the next blank line
        if self._kind == "list":
            return self._belongs_to_list(line)
        if self._kind == "quote":
            return self._belongs_to_quote(line)
        if self._kind == "table":
            return not (_starts_other_block(line) or _list_item(line) or _is_code_indented(line))
        if self._kind == "paragraph" and _SETEXT_UNDERLINE.match(line):
            return True  # "Title\n---" is a heading, not a rule
        return not (_starts_other_block(line) or _list_interrupts_paragraph(line))

    def _belongs_to_list(self, line: str) -> bool:
        if _starts_indented(line) or _list_item(line):
            self._container.take_list_line(line)
            return True
        # a lazy line: the paragraph goes on, so the container's state stays as it is
        return self._container.in_paragraph and not _starts_other_block(line)

    def _belongs_to_quote(self, line: str) -> bool:
        if _BLOCK_QUOTE.match(line):
            self._container.take_quote_line(line)
            return True
        # markdown-it, unlike CommonMark, lets any list item end a quote's paragraph
        return self._container.in_paragraph and not (_starts_other_block(line) or _list_item(line))

    def _turns_paragraph_into_something_else(self, line: str) -> bool:
        """Handle a line that changes what the paragraph so far is; True when it was taken."""
        if _SETEXT_UNDERLINE.match(line):
            self._lines.append(line)
            self._finish()  # a setext heading is complete with its underline
            return True
        if _starts_table(self._lines[-1], line):
            header = self._lines.pop()  # the last line was a table header all along
            self._finish()
            self._kind = "table"
            self._lines = [header, line]
            return True
        return False


def split_blocks(text: str, splitter: BlockSplitter | None = None) -> tuple[list[str], str]:
    """Split markdown into (finished blocks, open block).

    Pass the same `splitter` again with the next piece of text to split
    incrementally; the finished blocks returned are the new ones only.
    """
    splitter = splitter if splitter is not None else BlockSplitter()
    finished = splitter.feed(text)
    return finished, splitter.open_text


# --- keeping the open block bounded ---------------------------------------------


def _is_closed_fence(lines: list[str]) -> bool:
    fence = _fence_opener(lines[0])
    return fence is not None and len(lines) > 1 and _closes_fence(lines[-1], fence[0], fence[1])


def _repeated_header_length(lines: list[str]) -> int:
    """Lines every printed piece of a block starts with: a fence opener or a table head."""
    if _fence_opener(lines[0]):
        return 1
    if len(lines) > 1 and _starts_table(lines[0], lines[1]):
        return 2
    return 0


def _batch_end(lines: list[str], start: int) -> int:
    chars = 0
    for index in range(start, len(lines)):
        chars += len(lines[index]) + 1
        if index + 1 - start >= HEAD_BATCH_LINES or chars >= HEAD_BATCH_CHARS:
            return index + 1
    return len(lines)


def _last_item_start(lines: list[str], start: int, stop: int) -> int:
    """The last top-level list item at or before `stop`: a list is only cut between items."""
    first = _list_item(lines[0])
    indent = len(first.group(1)) if first else 0
    for index in range(stop, start, -1):
        match = _list_item(lines[index])
        if match and len(match.group(1)) <= indent:
            return index
    return start


def _is_oversized(lines: list[str]) -> bool:
    return len(lines) > MAX_OPEN_LINES or sum(map(len, lines)) + len(lines) > MAX_OPEN_CHARS


def head_cut(lines: list[str]) -> tuple[int, int] | None:
    """Lines [start:stop) of an oversized block that may be printed ahead of the rest.

    None when the block is small enough or cannot be cut yet. The cut depends
    only on the lines up to `stop`, so a block cut while it streams is cut at the
    same places as the same block seen whole.
    """
    if not lines or not _is_oversized(lines):
        return None
    start = _repeated_header_length(lines)
    stop = _batch_end(lines, start)
    cuttable = len(lines) - 1 if _is_closed_fence(lines) else len(lines)
    if stop >= cuttable:
        return None
    if _list_item(lines[0]):
        stop = _last_item_start(lines, start, stop)
    return (start, stop) if stop > start else None
