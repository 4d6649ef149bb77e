"""Streaming markdown into the normal terminal scrollback.

A reply arrives a few characters at a time. Re-rendering the whole reply on
every delta would cost time quadratic in its length, so the text is split into
markdown blocks as it streams: a block is finished once the next one has begun,
and a finished block is rendered exactly once and printed to the scrollback.
Only the open block is drawn in a small live region, and that block is kept
bounded: when it grows past `MAX_OPEN_LINES` or `MAX_OPEN_CHARS`, its first
lines are printed ahead of the rest.

Block boundaries are only placed where markdown itself has one, so printing the
blocks one after another gives the same output as rendering the reply at once
(oversized blocks aside, which are printed in pieces).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.syntax import Syntax

from .theme import CODE_THEME

MAX_OPEN_LINES = 60
"""An open block longer than this has its first lines printed ahead of the rest."""
MAX_OPEN_CHARS = 4096
"""The same bound in characters."""
HEAD_BATCH_LINES = 30
"""How many lines of an oversized block are printed ahead at a time..."""
HEAD_BATCH_CHARS = 2048
"""...or how many characters, whichever comes first."""

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_THEMATIC_BREAK = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_LIST_ITEM = re.compile(r"^( {0,3})([-+*]|\d{1,9}[.)])(?:[ \t]+(.*))?$")
_BLOCK_QUOTE = re.compile(r"^ {0,3}>")
_QUOTE_MARKERS = re.compile(r"^(?: {0,3}> ?)+")
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_ESCAPED_PIPE = re.compile(r"\\\|")

# HTML blocks, as CommonMark defines them: the first five kinds run to an end
# marker (blank lines included), the last two to the next blank line.
_HTML_BLOCK_NAMES = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|"
    "h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|"
    "noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|"
    "thead|title|tr|track|ul"
)
_HTML_ATTRIBUTE = (
    r"""(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*(?:[^"'=<>`\x00-\x20]+|'[^']*'|"[^"]*"))?)"""
)
_HTML_RUNS_TO_MARKER = (
    (
        re.compile(r"^<(?:script|pre|style|textarea)(?=\s|>|$)", re.IGNORECASE),
        re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE),
    ),
    (re.compile(r"^<!--"), re.compile(r"-->")),
    (re.compile(r"^<\?"), re.compile(r"\?>")),
    (re.compile(r"^<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"^<!\[CDATA\["), re.compile(r"\]\]>")),
)
_HTML_BLOCK_TAG = re.compile(rf"^</?(?:{_HTML_BLOCK_NAMES})(?=\s|/?>|$)", re.IGNORECASE)
_HTML_LONE_TAG = re.compile(
    rf"^(?:<[A-Za-z][A-Za-z0-9-]*{_HTML_ATTRIBUTE}*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*$"
)


# --- reading single lines -------------------------------------------------------


def _is_blank(line: str) -> bool:
    return not line.strip()


def _is_code_indented(line: str) -> bool:
    return line.startswith(("    ", "\t"))


def _starts_indented(line: str) -> bool:
    return line[:1] in (" ", "\t")


def _fence_opener(line: str) -> tuple[str, int, int, str] | None:
    """(fence character, fence length, indent, info string) when `line` opens a fence."""
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    indent, fence, info = match.groups()
    if fence[0] == "`" and "`" in info:
        return None  # markdown allows no backtick in the info string of a backtick fence
    return fence[0], len(fence), len(indent), info.strip()


def _closes_fence(line: str, char: str, length: int) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= length
        and stripped == char * len(stripped)
    )


def _list_item(line: str) -> re.Match[str] | None:
    if _THEMATIC_BREAK.match(line):
        return None  # "* * *" is a rule, not a list
    return _LIST_ITEM.match(line)


def _list_interrupts_paragraph(line: str) -> bool:
    """Markdown lets a list cut a paragraph short only with a bullet or "1." and some text."""
    match = _list_item(line)
    if match is None or not (match.group(3) or "").strip():
        return False
    marker = match.group(2)
    return marker in "-+*" or marker[:-1] == "1"


def _starts_other_block(line: str) -> bool:
    """A fence, heading, rule, quote or HTML block, each of which ends a paragraph, table or list."""
    return bool(
        _fence_opener(line)
        or _ATX_HEADING.match(line)
        or _THEMATIC_BREAK.match(line)
        or _BLOCK_QUOTE.match(line)
        or _html_interrupts_paragraph(line)
    )


@dataclass(frozen=True)
class _HtmlStart:
    end: re.Pattern[str] | None
    """What ends the block; None: the next blank line."""
    interrupts_paragraph: bool


def _html_start(line: str) -> _HtmlStart | None:
    text = line.lstrip(" ")
    if len(line) - len(text) > 3 or not text.startswith("<"):
        return None
    for start, end in _HTML_RUNS_TO_MARKER:
        if start.search(text):
            return _HtmlStart(end, True)
    if _HTML_BLOCK_TAG.search(text):
        return _HtmlStart(None, True)
    if _HTML_LONE_TAG.search(text):
        return _HtmlStart(None, False)
    return None


def _html_interrupts_paragraph(line: str) -> bool:
    start = _html_start(line)
    return start is not None and start.interrupts_paragraph


def _table_cell_count(line: str) -> int:
    cells = _ESCAPED_PIPE.sub("", line).strip()
    if cells.startswith("|"):
        cells = cells[1:]
    if cells.endswith("|"):
        cells = cells[:-1]
    return cells.count("|") + 1


def _starts_table(header: str, delimiter: str) -> bool:
    return (
        "|" in header
        and "|" in delimiter
        and bool(_TABLE_DELIMITER.match(delimiter))
        and _table_cell_count(header) == _table_cell_count(delimiter)
    )


# --- splitting a stream into blocks -----------------------------------------------


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


# --- drawing ----------------------------------------------------------------------


@dataclass
class _Rendered:
    segments: list[Segment]
    leading_break: bool = False
    """rich starts a lone list, quote or table with a blank line; it serves as the separator."""
    ends_with_rule: bool = False
    """rich puts no blank line after a horizontal rule."""


def _fence_code(lines: list[str]) -> tuple[str, list[str]]:
    """(lexer name, code lines) of a fenced block's body, fence indent removed as markdown does."""
    fence = _fence_opener(lines[0])
    indent, info = (fence[2], fence[3]) if fence else (0, "")
    lexer = info.split()[0] if info else "text"
    body = [line[min(indent, len(line) - len(line.lstrip(" "))) :] for line in lines[1:]]
    return lexer, body


class _OpenBlockView:
    """The live region's content: the tail of the open block, as it is right now.

    rich draws it on every refresh and below every print while the region is live,
    so it always shows the current state without being told about changes.
    """

    def __init__(self, draw: Callable[[], list[Segment]]) -> None:
        self._draw = draw

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        segments = self._draw()
        lines = list(Segment.split_lines(segments))
        height = max(1, console.height - 1)  # the newest lines matter; older ones scroll off
        for line in lines[-height:]:
            yield from line
            yield Segment.line()


class MarkdownStream:
    """Prints a streamed markdown reply to the scrollback, block by block.

    On a terminal the open block is shown in a transient live region, redrawn at
    most once per `min_interval` seconds. Elsewhere (a pipe, a file) finished
    blocks are printed as they complete and the rest at `finish`. After `finish`
    the stream is ready for the next reply.
    """

    def __init__(
        self,
        console: Console,
        *,
        min_interval: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.min_interval = max(0.0, min_interval)
        self.repaints = 0
        """How many times the live region has been drawn."""
        self._clock = clock
        self._live_enabled = console.is_terminal and not console.is_dumb_terminal
        self._live: Live | None = None
        self._reset()

    def __enter__(self) -> MarkdownStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.finish()

    def feed(self, delta: str) -> None:
        """Take text as it arrives from the model."""
        if not delta:
            return
        self._print_blocks(self._splitter.feed(delta))
        if "\n" in delta:
            self._print_head_of_open_block()
        self._dirty = True
        self._repaint_if_due()

    def refresh(self) -> None:
        """Redraw the open block now if it changed (e.g. from an idle timer)."""
        if self._dirty and self._live_enabled:
            self._repaint(self._clock())

    def finish(self) -> None:
        """The reply is complete: print what is still open and stop the live region."""
        remaining = self._splitter.close()
        self._stop_live()
        self._print_blocks(remaining)
        self._reset()

    # --- state ---

    def _reset(self) -> None:
        self._splitter = BlockSplitter()
        self._printed_any = False
        self._after_rule = False
        self._open_continued = False  # the open block's head is already in the scrollback
        self._dirty = False
        self._last_repaint = -math.inf

    # --- the scrollback ---

    def _print_blocks(self, blocks: list[str]) -> None:
        for block in blocks:
            continued, self._open_continued = self._open_continued, False
            self._print_block(block.split("\n"), continued=continued)

    def _print_block(self, lines: list[str], *, continued: bool) -> None:
        while (cut := head_cut(lines)) is not None:
            start, stop = cut
            self._print(self._render_head(lines, stop, continued=continued), continued)
            lines = lines[:start] + lines[stop:]
            continued = True
        self._print(self._render_rest(lines, continued=continued), continued)

    def _print_head_of_open_block(self) -> None:
        """Print the first lines of an oversized open block so the live part stays small.

        The last complete line is left out of the decision: the next line may still
        change what it is (a paragraph's last line can become a table header).
        """
        lines = self._splitter.open_lines
        while (cut := head_cut(lines[:-1])) is not None:
            start, stop = cut
            rendered = self._render_head(lines, stop, continued=self._open_continued)
            self._print(rendered, self._open_continued)
            self._splitter.drop_open_lines(start, stop)
            self._open_continued = True

    def _print(self, rendered: _Rendered, continued: bool) -> None:
        self.console.print(Segments(self._with_separator(rendered, continued)))
        self._printed_any = True
        self._after_rule = rendered.ends_with_rule

    def _with_separator(self, rendered: _Rendered, continued: bool) -> list[Segment]:
        """One blank line between blocks, placed exactly where rich puts it in a whole document."""
        wants_break = (
            self._printed_any and not continued and (rendered.leading_break or not self._after_rule)
        )
        return [Segment.line(), *rendered.segments] if wants_break else rendered.segments

    # --- rendering pieces ---

    def _render_markdown(self, text: str) -> _Rendered:
        # No terminal hyperlinks: an OSC 8 link shows only its text, which need not be where
        # it leads; without them a link is drawn as "text (url)".
        markdown = Markdown(text, code_theme=CODE_THEME, hyperlinks=False)
        segments = list(self.console.render(markdown))
        leading_break = bool(segments) and segments[0].text == "\n"
        ends_with_rule = bool(markdown.parsed) and markdown.parsed[-1].type == "hr"
        return _Rendered(segments[1:] if leading_break else segments, leading_break, ends_with_rule)

    def _render_code(self, lines: list[str], *, top: bool, bottom: bool) -> _Rendered:
        """Part of a fenced block, drawn as rich draws a whole one, padding where it belongs."""
        lexer, body = _fence_code(lines)
        code = "\n".join(body)
        syntax = Syntax(
            code.rstrip() if bottom else code,
            lexer,
            theme=CODE_THEME,
            word_wrap=True,
            padding=(int(top), 1, int(bottom), 1),
        )
        return _Rendered(list(self.console.render(syntax)))

    def _render_head(self, lines: list[str], stop: int, *, continued: bool) -> _Rendered:
        """The first `stop` lines of an oversized block (its repeated header included)."""
        if _fence_opener(lines[0]):
            return self._render_code(lines[:stop], top=not continued, bottom=False)
        return self._render_markdown("\n".join(lines[:stop]))

    def _render_rest(self, lines: list[str], *, continued: bool) -> _Rendered:
        if continued and _fence_opener(lines[0]):
            body = lines[:-1] if _is_closed_fence(lines) else lines
            return self._render_code(body, top=False, bottom=True)
        return self._render_markdown("\n".join(lines))

    # --- the live region ---

    def _draw_open_block(self) -> list[Segment]:
        self.repaints += 1
        text = self._splitter.open_text
        if not text.strip():
            return []
        if len(text) > 2 * MAX_OPEN_CHARS:
            # a block that could not be cut (one enormous line, or a list item holding
            # a long code block): keep its structure and newest text, drop the middle
            text = text[: MAX_OPEN_CHARS // 2] + " … " + text[-MAX_OPEN_CHARS:]
        lines = text.rstrip("\n").split("\n")
        if self._open_continued and _fence_opener(lines[0]):
            rendered = self._render_code(lines, top=False, bottom=False)
        else:
            rendered = self._render_markdown(text)
        return self._with_separator(rendered, self._open_continued)

    def _repaint_if_due(self) -> None:
        if not self._live_enabled:
            return
        now = self._clock()
        if now - self._last_repaint >= self.min_interval:
            self._repaint(now)

    def _repaint(self, now: float) -> None:
        if self._live is None:
            if not self._splitter.open_text.strip():
                return
            self._live = Live(
                _OpenBlockView(self._draw_open_block),
                console=self.console,
                transient=True,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        self._live.refresh()
        self._last_repaint = now
        self._dirty = False

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
