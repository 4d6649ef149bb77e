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
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.status import Status
from rich.text import Text

from tether.core.messages import Evidence, ToolCall
from tether.core.ui_protocol import Decision, NoticeLevel
from tether.safety.approval import COMMAND_TEXT_PARAMS
from tether.safety.visible import visible, visible_pieces

from ..headless import describe_arguments, outcome_mark

if TYPE_CHECKING:
    from .render import MarkdownStream

LineAsker = Callable[[str], Awaitable[str]]
"""Shows a prompt and returns the line typed; raises KeyboardInterrupt/EOFError on Ctrl-C/D."""

DIFF_TOOLS = ("edit_file", "write_file")
SHOWN_ARGUMENT_LINES = 15
"""Lines of a long argument shown for approval; command text is always shown whole."""
SHOWN_RESULT_LINES = 12
LIVE_LINES = 40
TAIL_LINES = 8


@dataclass
class TerminalUI:
    console: Console
    ask_line: LineAsker
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
    _agents: dict[str, str] = field(default_factory=dict, init=False)
    """Running sub-agents by id: the live line each one has."""

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
        self._stream.feed(visible(delta))

    def thinking(self, delta: str) -> None:
        self._receiving()
        if not self.show_thinking:
            return
        self._thinking_open = True
        self.console.print(shown(delta, "thinking"), end="")

    def _close_thinking(self) -> None:
        if self._thinking_open:
            self.console.print()
            self._thinking_open = False

    def tool_start(self, call: ToolCall) -> None:
        self.settle()
        line = Text("→ ", style="tool")
        line.append_text(shown(call.name, "bold tool"))
        line.append_text(shown(" " + describe_arguments(call.arguments)))
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
        part = "".join(lines[:room])
        self._live_lines += part.count("\n")
        self._live_hidden += chunk.count("\n") - part.count("\n")
        self._live_line_ended = part.endswith("\n")
        self.console.print(shown(part, "status"), end="")

    def tool_end(self, evidence: Evidence) -> None:
        live = self._live_output
        if live:
            self._end_live_output(evidence.result)
        style = "tool.error" if evidence.error else "tool"
        line = Text(f"  {outcome_mark(evidence)} ", style=style)
        line.append_text(shown(evidence.summary or "done"))
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
            self.console.print(shown("    " + ln[:200], "status"))

    def _print_diff(self, result: str) -> None:
        lines = [ln for ln in result.splitlines() if ln[:1] in "+-@" or ln.startswith(" ")]
        for ln in lines[:40]:
            style = "diff.add" if ln.startswith("+") else "diff.del" if ln.startswith("-") else "status"
            self.console.print(shown("    " + ln, style))
        if len(lines) > 40:
            self.console.print(Text(f"    [... {len(lines) - 40} more diff lines ...]", style="status"))

    def _print_trimmed(self, result: str) -> None:
        lines = result.splitlines()
        if len(lines) > SHOWN_RESULT_LINES:
            half = SHOWN_RESULT_LINES // 2
            omitted = len(lines) - SHOWN_RESULT_LINES
            lines = [*lines[:half], f"[... {omitted} lines omitted ...]", *lines[-half:]]
        for ln in lines:
            self.console.print(shown("    " + ln[:200], "status"))

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
        header.append_text(shown(call.name, "bold"))
        header.append_text(shown(f" wants to run ({reason})" if reason else " wants to run"))
        self.console.print(header)
        diff = change_preview(call, self.root)
        if diff is not None:
            self.console.print(shown("    " + describe_arguments(call.arguments), "bold"))
            self._print_diff("\n".join(diff))
            return
        for key, value in call.arguments.items():
            self._show_argument(key, value)

    def _show_argument(self, key: str, value: object) -> None:
        """One argument, each of its lines shown: a command is shown whole, so no line of
        what runs is left out; other long values are cut, saying how much."""
        text = value if isinstance(value, str) else repr(value)
        lines = text.split("\n")  # only a newline breaks the line: `\r` is shown as an escape
        limit = len(lines) if key in COMMAND_TEXT_PARAMS else SHOWN_ARGUMENT_LINES
        self.console.print(shown(f"    {key}: ", "bold"), shown(lines[0]))
        for ln in lines[1:limit]:
            self.console.print(shown("      " + ln))
        if len(lines) > limit:
            self.console.print(Text(f"      [... {len(lines) - limit} more lines ...]", style="status"))

    def agent_event(self, event: dict[str, Any]) -> None:
        """Sub-agents: one live line per running agent (its task, its calls, its latest tool)
        under the spinner, and one summary line in the scrollback when it ends."""
        kind, name = event["type"], f"agent {event['agent_name']} [{event['agent']}]"
        if kind == "agent_tool_start":
            task = event.get("task", "")
            task = task if len(task) <= 60 else task[:59] + "…"
            self._agents[event["agent"]] = f"{name}: {task} · call {event['calls']} · {event['name']}"
            if not self.console.is_terminal:  # no live region: a line per call instead
                self.console.print(shown("  " + self._agents[event["agent"]], "status"))
        elif kind == "agent_notice":
            self.notice(f"[{name}] {event['message']}", event["level"])
        elif kind == "agent_end":
            self._agents.pop(event["agent"], None)
            self._stop_spinner()
            tokens = event["usage"]["input_tokens"] + event["usage"]["output_tokens"]
            why = f" ({event['reason']})" if event["reason"] else ""
            self.console.print(shown(f"  {name} {event['state']}{why}: {event['steps']} steps, "
                                     f"{tokens} tokens, {event['elapsed']:.1f}s", "status"))
        if kind != "agent_tool_end":
            self._show_agents()

    def _show_agents(self) -> None:
        if not self._agents or not self.console.is_terminal:
            return
        lines = shown("\n".join(self._agents.values()), "status")
        if self._spinner is None:
            self._spinner = self.console.status(lines, spinner="dots")
            self._spinner.start()
        else:
            self._spinner.update(lines)

    def notice(self, message: str, level: NoticeLevel = "info") -> None:
        self.settle()
        style = {"error": "tool.error", "warning": "notice"}.get(level, "status")
        self.console.print(shown(message, style))


def shown(text: str, style: str = "") -> Text:
    """Text that may come from the model, for the terminal: every control or invisible
    character drawn as an escape, in reverse video (see visible.py)."""
    out = Text(style=style)
    for piece, hidden in visible_pieces(text):
        out.append(piece, style="escape" if hidden else None)
    return out


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
    if call.name == "edit_file":
        lines = _edit_preview_lines(args, path, root)
        if lines is None:
            return None
        old_lines, new_lines = lines
    elif call.name == "write_file" and isinstance(args.get("content"), str):
        old_lines = _current_text(path, root).splitlines()
        new_lines = args["content"].splitlines()
    else:
        return None
    diff = difflib.unified_diff(old_lines, new_lines, path, path, lineterm="", n=2)
    return list(diff)[2:] or ["(no change)"]


PREVIEW_FILE_LIMIT = 2_000_000
"""Bytes; a bigger file is previewed by its snippet alone, to keep the diff quick."""


def _edit_preview_lines(
    args: dict[str, object], path: str, root: Path | None
) -> tuple[list[str], list[str]] | None:
    """The lines before and after an edit_file call, for the approval diff.

    The whole current file is diffed where it can be read, so the hunk headers
    carry the file's real line numbers. Otherwise, or when old_content does not
    occur exactly once, only the snippet is diffed. None: nothing to show.
    """
    raw_new = args.get("new_content", "")
    new = (raw_new if isinstance(raw_new, str) else str(raw_new)).replace("\r\n", "\n")
    old = args.get("old_content")
    current = _text_if_readable(path, root)
    # CRLF files: the tool matches the model's "\n" text against "\r\n" lines.
    text = current.replace("\r\n", "\n") if current is not None else None
    if isinstance(old, str) and old:
        old_lf = old.replace("\r\n", "\n")
        first = text.find(old_lf) if text is not None else -1
        if text is None or first == -1 or text.find(old_lf, first + 1) != -1:
            return old.splitlines(), new.splitlines()
        edited = text[:first] + new + text[first + len(old_lf) :]
        return _split_lf(text), _split_lf(edited)
    start = args.get("start_anchor")
    end = args.get("end_anchor") or start
    if text is None or not isinstance(start, str) or not isinstance(end, str):
        return None
    lines = _split_lf(text)
    first_line, last_line = _anchored_line(start, lines), _anchored_line(end, lines)
    if first_line is None or last_line is None or last_line < first_line:
        return None
    return lines, lines[: first_line - 1] + _split_lf(new) + lines[last_line:]


def _anchored_line(anchor: str, lines: list[str]) -> int | None:
    """The line number an 'N:hh' anchor names, if it is in range and not stale."""
    import re

    from tether.tools.file_text import line_hash

    match = re.match(r"\s*(\d+)\s*:\s*([0-9a-fA-F]{2})(?![0-9a-fA-F])", anchor)
    if match is None:
        return None
    number = int(match.group(1))
    # A stale anchor makes the tool refuse: better no preview than the wrong lines.
    if not 1 <= number <= len(lines) or line_hash(lines[number - 1]) != match.group(2).lower():
        return None
    return number


def _text_if_readable(path: str, root: Path | None) -> str | None:
    target = Path(path) if root is None or Path(path).is_absolute() else root / path
    try:
        if target.stat().st_size > PREVIEW_FILE_LIMIT:
            return None
        return target.read_text(errors="replace")
    except OSError:
        return None


def _split_lf(text: str) -> list[str]:
    """Lines split on "\n" only, numbered as the file tools number them."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _current_text(path: str, root: Path | None) -> str:
    target = Path(path) if root is None or Path(path).is_absolute() else root / path
    try:
        return target.read_text(errors="replace")
    except OSError:
        return ""
