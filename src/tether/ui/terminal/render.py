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
(oversized blocks aside, which are printed in pieces). The cutting is done in
`markdown_blocks` (with `markdown_lines` reading single lines); this module draws.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.syntax import Syntax

from .markdown_blocks import MAX_OPEN_CHARS, BlockSplitter, _is_closed_fence, head_cut
from .markdown_lines import _fence_opener
from .theme import CODE_THEME


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


class LiveHost(Protocol):
    """A live region that draws the open block among other things (the chat's activity
    line and status line, see activity.py) instead of the stream owning a `Live`."""

    enabled: bool
    """Whether it draws at all (a terminal)."""

    @property
    def lines_below(self) -> int:
        """Rows it draws under the open block."""
        ...

    def show(self, view: RenderableType) -> None: ...
    def hide(self) -> None: ...
    def refresh(self) -> None: ...


class _OpenBlockView:
    """The live region's content: the tail of the open block, as it is right now.

    rich draws it on every refresh and below every print while the region is live,
    so it always shows the current state without being told about changes.
    """

    def __init__(self, draw: Callable[[], list[Segment]], below: Callable[[], int] = lambda: 0) -> None:
        self._draw = draw
        self._below = below

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        segments = self._draw()
        lines = list(Segment.split_lines(segments))
        # the newest lines matter; older ones scroll off (and the host's lines need room)
        height = max(1, console.height - 1 - self._below())
        for line in lines[-height:]:
            yield from line
            yield Segment.line()


class MarkdownStream:
    """Prints a streamed markdown reply to the scrollback, block by block.

    On a terminal the open block is shown in a transient live region, redrawn at
    most once per `min_interval` seconds. Elsewhere (a pipe, a file) finished
    blocks are printed as they complete and the rest at `finish`. After `finish`
    the stream is ready for the next reply. With a `host`, the open block is drawn in the
    host's region instead of a `Live` of its own.
    """

    def __init__(
        self,
        console: Console,
        *,
        min_interval: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        host: LiveHost | None = None,
        code_theme: str = CODE_THEME,
    ) -> None:
        self.console = console
        self.host = host
        self.code_theme = code_theme
        """The Pygments theme of code blocks (the chat's palette picks it)."""
        self._hosted = False
        self.min_interval = max(0.0, min_interval)
        self.repaints = 0
        """How many times the live region has been drawn."""
        self._clock = clock
        self._live_enabled = (host.enabled if host is not None
                              else console.is_terminal and not console.is_dumb_terminal)
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
        markdown = Markdown(text, code_theme=self.code_theme, hyperlinks=False)
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
            theme=self.code_theme,
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
        if self.host is not None:
            self._repaint_hosted(self.host)
        elif self._live is None:
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
        if self._live is not None:
            self._live.refresh()
        self._last_repaint = now
        self._dirty = False

    def _repaint_hosted(self, host: LiveHost) -> None:
        if not self._hosted:
            if not self._splitter.open_text.strip():
                return
            host.show(_OpenBlockView(self._draw_open_block, lambda: host.lines_below))
            self._hosted = True
        host.refresh()

    def _stop_live(self) -> None:
        if self._hosted and self.host is not None:
            self.host.hide()
            self._hosted = False
        if self._live is not None:
            self._live.stop()
            self._live = None
