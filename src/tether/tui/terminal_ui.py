"""The terminal implementation of the UI protocol: scrollback output, approvals, spinner.

Output goes into the normal scrollback (no alternate screen). Reply text streams
through `MarkdownStream`; each tool call gets one line as it starts and one
with its outcome; a file change is shown as a coloured diff.
"""

from __future__ import annotations

import contextlib
import difflib
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.status import Status
from rich.text import Text

from ..headless import describe_arguments, outcome_mark
from ..messages import Evidence, ToolCall
from ..ui import Decision, NoticeLevel

if TYPE_CHECKING:
    from .render import MarkdownStream

Asker = Callable[[str], Awaitable[str]]
"""Shows a prompt and returns the line typed; raises KeyboardInterrupt/EOFError on Ctrl-C/D."""

DIFF_TOOLS = ("edit_file", "write_file")
SHOWN_RESULT_LINES = 12
LIVE_LINES = 40
TAIL_LINES = 8


@dataclass
class TerminalUI:
    console: Console
    ask_line: Asker
    on_always: Callable[[ToolCall], str] = lambda call: ""
    """Called when the user answers "always"; returns the rule it saved, for the message."""
    show_thinking: bool = False
    root: Path | None = None
    """The project root, to show the diff a write would make."""
    can_ask: bool = True
    _stream: MarkdownStream | None = field(default=None, init=False)
    _spinner: Status | None = field(default=None, init=False)
    _thinking_open: bool = field(default=False, init=False)
    _reply_started: float | None = field(default=None, init=False)
    _live_output: bool = field(default=False, init=False)
    _live_lines: int = field(default=0, init=False)
    _live_hidden: int = field(default=0, init=False)
    _live_line_ended: bool = field(default=True, init=False)
    streaming_seconds: float = field(default=0.0, init=False)
    """Time spent receiving reply text in this turn, for tokens per second."""

    # ------------------------------------------------------------ turn framing

    def waiting(self) -> None:
        """A request is under way and nothing has arrived yet: show a spinner."""
        self.streaming_seconds = 0.0
        if self.console.is_terminal and self._spinner is None:
            self._spinner = self.console.status("thinking…", spinner="dots")
            self._spinner.start()

    def settle(self) -> None:
        """End of a reply or a turn: stop the spinner, flush open text."""
        self._stop_spinner()
        self._reply_done()
        self._close_thinking()
        if self._stream is not None:
            self._stream.finish()
            self._stream = None

    def _stop_spinner(self) -> None:
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None

    def _receiving(self) -> None:
        self._stop_spinner()
        if self._reply_started is None:
            self._reply_started = time.monotonic()

    def _reply_done(self) -> None:
        if self._reply_started is not None:
            self.streaming_seconds += time.monotonic() - self._reply_started
            self._reply_started = None

    # ------------------------------------------------------------ UI protocol

    def text(self, delta: str) -> None:
        self._receiving()
        self._close_thinking()
        if self._stream is None:
            from .render import MarkdownStream  # markdown and highlighting load on first use

            self._stream = MarkdownStream(self.console)
        self._stream.feed(delta)

    def thinking(self, delta: str) -> None:
        self._receiving()
        if not self.show_thinking:
            return
        self._thinking_open = True
        self.console.print(Text(delta, style="thinking"), end="")

    def _close_thinking(self) -> None:
        if self._thinking_open:
            self.console.print()
            self._thinking_open = False

    def tool_start(self, call: ToolCall) -> None:
        self.settle()
        line = Text("→ ", style="tool")
        line.append(call.name, style="bold tool")
        line.append(" " + describe_arguments(call.arguments))
        self.console.print(line)
        self._live_output = False
        self._live_lines = self._live_hidden = 0

    def command_output(self, chunk: str) -> None:
        """A running command's output, shown as it appears, up to LIVE_LINES lines: the
        scrollback is for the conversation, and the tail is shown when the command ends."""
        self._live_output = True
        room = LIVE_LINES - self._live_lines
        if room <= 0:
            self._live_hidden += chunk.count("\n")
            return
        lines = chunk.splitlines(keepends=True)
        shown = "".join(lines[:room])
        self._live_lines += shown.count("\n")
        self._live_hidden += chunk.count("\n") - shown.count("\n")
        self._live_line_ended = shown.endswith("\n")
        self.console.print(Text(shown, style="status"), end="")

    def tool_end(self, evidence: Evidence) -> None:
        live = self._live_output
        if live:
            self._end_live_output(evidence.result)
        style = "tool.error" if evidence.error else "tool"
        line = Text(f"  {outcome_mark(evidence)} ", style=style)
        line.append(evidence.summary or "done")
        line.append(f"  {evidence.elapsed:.1f}s", style="status")
        self.console.print(line)
        if not evidence.error and evidence.call.name in DIFF_TOOLS:
            self._print_diff(evidence.result)
        elif evidence.error or (evidence.call.name == "run_cmd" and not live):
            self._print_trimmed(evidence.result)

    def _end_live_output(self, result: str) -> None:
        if not self._live_line_ended:
            self.console.print()  # the output stopped mid-line
        if self._live_hidden:
            self._print_tail(result)
        self._live_output = False

    def _print_tail(self, result: str) -> None:
        self.console.print(Text(f"    [... {self._live_hidden} lines not shown; the last ones:]",
                                style="status"))
        for ln in result.splitlines()[-TAIL_LINES:]:
            self.console.print(Text("    " + ln[:200], style="status"))

    def _print_diff(self, result: str) -> None:
        lines = [ln for ln in result.splitlines() if ln[:1] in "+-@" or ln.startswith(" ")]
        for ln in lines[:40]:
            style = "diff.add" if ln.startswith("+") else "diff.del" if ln.startswith("-") else "status"
            self.console.print(Text("    " + ln, style=style))
        if len(lines) > 40:
            self.console.print(Text(f"    [... {len(lines) - 40} more diff lines ...]", style="status"))

    def _print_trimmed(self, result: str) -> None:
        lines = result.splitlines()
        if len(lines) > SHOWN_RESULT_LINES:
            half = SHOWN_RESULT_LINES // 2
            omitted = len(lines) - SHOWN_RESULT_LINES
            lines = [*lines[:half], f"[... {omitted} lines omitted ...]", *lines[-half:]]
        for ln in lines:
            self.console.print(Text("    " + ln[:200], style="status"))

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.settle()
        self._show_request(call, reason)
        try:
            answer = (await self.ask_line("Allow? [y]es / [n]o / [a]lways: ")).strip().lower()
        except (KeyboardInterrupt, EOFError):
            self.console.print(Text("  refused", style="tool.error"))
            return Decision(False, "")
        if answer in ("y", "yes"):
            return Decision(True)
        if answer in ("a", "always"):
            rule = self.on_always(call)
            if rule:
                self.notice(f"saved allow rule {rule}")
            return Decision(True, remember=True)
        return await self._refusal()

    async def _refusal(self) -> Decision:
        try:
            why = await self.ask_line("Why not? (optional, Enter to skip): ")
        except (KeyboardInterrupt, EOFError):
            why = ""
        return Decision(False, why.strip())

    def _show_request(self, call: ToolCall, reason: str) -> None:
        header = Text("? ", style="notice")
        header.append(f"{call.name}", style="bold")
        header.append(f" wants to run ({reason})" if reason else " wants to run")
        self.console.print(header)
        diff = change_preview(call, self.root)
        if diff is not None:
            self.console.print(Text("    " + describe_arguments(call.arguments), style="bold"))
            self._print_diff("\n".join(diff))
            return
        for key, value in call.arguments.items():
            text = value if isinstance(value, str) else repr(value)
            lines = text.splitlines() or [""]
            shown = lines[:15]
            self.console.print(Text(f"    {key}: ", style="bold"), Text(shown[0]))
            for ln in shown[1:]:
                self.console.print(Text("      " + ln))
            if len(lines) > 15:
                self.console.print(Text(f"      [... {len(lines) - 15} more lines ...]", style="status"))

    def notice(self, message: str, level: NoticeLevel = "info") -> None:
        self.settle()
        style = {"error": "tool.error", "warning": "notice"}.get(level, "status")
        self.console.print(Text(message, style=style))


@contextlib.contextmanager
def keys_not_echoed(stream: TextIO | None = None) -> Iterator[None]:
    """While a request runs, the terminal does not echo what is typed.

    The live region of a streaming reply fills whole lines, so an echoed `^C`
    (or any key) wraps onto a new line; the region is then erased one line
    short and a copy of it stays behind. Typed-ahead keys are still buffered
    for the next prompt, and Ctrl-C still interrupts.
    """
    try:
        import termios
    except ImportError:  # no POSIX terminal control here: nothing to quieten
        yield
        return
    stream = sys.stdin if stream is None else stream
    try:
        fd = stream.fileno()
        saved = termios.tcgetattr(fd) if stream.isatty() else None
    except (OSError, ValueError, termios.error):
        saved = None
    if saved is None:
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | getattr(termios, "ECHOCTL", 0))
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def change_preview(call: ToolCall, root: Path | None) -> list[str] | None:
    """The unified diff an edit_file or write_file call would make, when it can be known."""
    args = call.arguments
    path = args.get("filepath")
    if not isinstance(path, str):
        return None
    if call.name == "edit_file" and isinstance(args.get("old_content"), str) and args["old_content"]:
        old, new = args["old_content"], str(args.get("new_content", ""))
    elif call.name == "write_file" and isinstance(args.get("content"), str):
        old, new = _current_text(path, root), args["content"]
    else:
        return None
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), path, path, lineterm="", n=2)
    return list(diff)[2:] or ["(no change)"]


def _current_text(path: str, root: Path | None) -> str:
    target = Path(path) if root is None or Path(path).is_absolute() else root / path
    try:
        return target.read_text(errors="replace")
    except OSError:
        return ""
