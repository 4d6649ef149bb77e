"""The terminal implementation of the UI protocol: scrollback output, approvals, activity.

Output goes into the normal scrollback (no alternate screen). Reply text streams
through `MarkdownStream`; each tool call gets one line as it starts and one
with its outcome; a file change is shown as a coloured diff, once. While a turn
runs, the bottom of the screen is a live region (activity.py): the open reply
block, what is under way, and the status line.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.text import Text

from tether.core.messages import Evidence, ToolCall
from tether.core.textclip import clip_words
from tether.core.ui_protocol import Decision, NoticeLevel
from tether.safety.visible import visible

from ..headless import describe_arguments, outcome_mark
from .activity import Activity, LiveRegion, last_line
from .approval_question import ApprovalQuestion, print_diff
from .keyboard import Asker
from .preview import change_preview
from .shown import hanging, indented, shown
from .theme import CODE_THEME

if TYPE_CHECKING:
    from .render import MarkdownStream

__all__ = ["TerminalUI", "keys_not_echoed", "shown"]

DIFF_TOOLS = ("edit_file", "write_file")
SHOWN_RESULT_LINES = 12
LIVE_LINES = 40
TAIL_LINES = 8
LONGEST_PARTIAL_LINE = 2000
"""Characters of command output without a newline kept back; past it they are a line."""


@dataclass
class TerminalUI:
    console: Console
    asker: Asker | None = None
    """Asks the approval question (None: one of its own, keeping typed-ahead keys to itself)."""
    on_always: Callable[[ToolCall], str] = lambda call: ""
    """Called when the user answers "always"; returns the rule it saved, for the message."""
    show_thinking: bool = False
    root: Path | None = None
    """The project root, to show the diff a write would make."""
    can_ask: bool = True
    status: Callable[[], str] = lambda: ""
    """The status line (the prompt's toolbar), kept on the screen while a turn runs."""
    print_above_input: Callable[[Callable[[], None]], None] = lambda show: show()
    """Prints with its argument above the input line or a question on the screen
    (`fit.print_above_input`); directly when none is."""
    code_theme: str = CODE_THEME
    """The Pygments theme of code blocks in replies (the `theme` setting's palette)."""
    activity: Activity = field(default_factory=Activity, init=False)
    region: LiveRegion = field(init=False)
    question: ApprovalQuestion = field(init=False)
    _turn_on: bool = field(default=False, init=False)
    _stream: MarkdownStream | None = field(default=None, init=False)
    _thinking: str | None = field(default=None, init=False)
    """The thinking line being received (None: no thinking shown since the last text)."""
    _reply_started: float | None = field(default=None, init=False)
    _output_key: str = field(default="", init=False)
    """The call whose command output arrives (shell calls run one at a time)."""
    _live_output: bool = field(default=False, init=False)
    _live_lines: int = field(default=0, init=False)
    _live_hidden: int = field(default=0, init=False)
    _partial: str = field(default="", init=False)
    _diff_shown: set[str] = field(default_factory=set, init=False)
    """Calls whose change was shown as a diff in their approval question."""
    _changes: dict[str, tuple[ToolCall, list[str] | None]] = field(default_factory=dict, init=False)
    """The diff each running file change will make, worked out before it runs (the file
    holds the new text once it has): shown after a call that needed no question."""
    streaming_seconds: float = field(default=0.0, init=False)
    """Time spent receiving reply text in this turn, for tokens per second."""

    def __post_init__(self) -> None:
        self.region = LiveRegion(self.console, self.activity, lambda: self.status())
        asker = Asker(self.console) if self.asker is None else self.asker
        self.question = ApprovalQuestion(self.console, asker, self.root)

    # ------------------------------------------------------------ turn framing

    def waiting(self) -> None:
        """A turn starts with a request under way: show what it waits for."""
        self.streaming_seconds = 0.0
        self._turn_on = True
        self.activity.request_started()
        self._draw()

    def request_started(self) -> None:
        """The loop sends a request to the model (RequestEvents)."""
        self._reply_done()
        self.activity.request_started()
        self._draw()

    def pause(self) -> None:
        """A question takes the screen: flush open text and erase the live region."""
        self.region.stop()
        self._end_reply_text()

    def settle(self) -> None:
        """End of a turn: flush open text, nothing is under way any more."""
        self.pause()
        self.activity.idle()
        self._turn_on = False

    def _draw(self) -> None:
        if self._turn_on:
            self.region.start()
            self.region.refresh()

    def _end_reply_text(self) -> None:
        self._reply_done()
        self._close_thinking()
        if self._stream is not None:
            self._stream.finish()
            self._stream = None

    def _receiving(self, delta: str) -> None:
        self.activity.received(delta)
        if self._reply_started is None:
            self._reply_started = time.monotonic()

    def _reply_done(self) -> None:
        if self._reply_started is not None:
            self.streaming_seconds += time.monotonic() - self._reply_started
            self._reply_started = None

    # ------------------------------------------------------------ UI protocol

    def text(self, delta: str) -> None:
        self._receiving(delta)
        self._close_thinking()
        if self._stream is None:
            from .render import MarkdownStream  # markdown and highlighting load on first use

            self._stream = MarkdownStream(self.console, host=self.region if self._turn_on else None,
                                          code_theme=self.code_theme)
        self._stream.feed(visible(delta))
        self._draw()

    def thinking(self, delta: str) -> None:
        """Shown (with /think) a whole line at a time: a part line would sit where the
        live region is drawn."""
        self._receiving(delta)
        if self.show_thinking:
            done, newline, self._thinking = ((self._thinking or "") + delta).rpartition("\n")
            if newline:
                self.console.print(shown(done, "thinking"))
        self._draw()

    def _close_thinking(self) -> None:
        if self._thinking:
            self.console.print(shown(self._thinking, "thinking"))
        self._thinking = None

    def tool_start(self, call: ToolCall) -> None:
        self._end_reply_text()
        line = Text("→ ", style="tool")
        line.append_text(shown(call.name, "bold tool"))
        line.append_text(shown(" " + describe_arguments(call.arguments)))
        self.console.print(line)
        self.activity.begin(call.id, call.name)
        if call.name in DIFF_TOOLS:
            self._changes[call.id] = (call, change_preview(call, self.root))
        self._output_key = call.id
        self._live_output = False
        self._live_lines = self._live_hidden = 0
        self._partial = ""
        self._draw()

    def command_output(self, chunk: str) -> None:
        """A running command's output: its newest line on the activity line, and its
        lines in the scrollback as they end, up to LIVE_LINES of them (the scrollback is
        for the conversation; the tail is shown when the command ends)."""
        self._live_output = True
        text = self._partial + chunk
        latest = last_line(text)
        if latest:
            self.activity.detail(self._output_key, latest)
        done, newline, self._partial = text.rpartition("\n")
        if len(self._partial) > LONGEST_PARTIAL_LINE:
            done, newline, self._partial = text, "\n", ""
        if newline:
            self._print_output_lines(done.split("\n"))
        self._draw()

    def _print_output_lines(self, lines: list[str]) -> None:
        room = max(0, LIVE_LINES - self._live_lines)
        self._live_hidden += max(0, len(lines) - room)
        if room and lines:
            self.console.print(shown("\n".join(lines[:room]), "status"))
            self._live_lines += min(room, len(lines))

    def tool_end(self, evidence: Evidence) -> None:
        call = evidence.call
        self.activity.end(call.id)
        live = self._live_output
        if live:
            self._end_live_output(evidence.result)
        style = "tool.error" if evidence.error else "tool"
        summary = shown(evidence.summary or "done", style)
        if evidence.command is None:  # a command's summary has its own time
            summary.append(f"  {evidence.elapsed:.1f}s", style="status")
        self.console.print(hanging(Text(f"  {outcome_mark(evidence)} ", style=style), summary))
        previewed = self._changes.pop(call.id, None)
        if not evidence.error and call.name in DIFF_TOOLS and call.id not in self._diff_shown:
            print_diff(self.console, made_change(evidence, previewed))
        elif evidence.error or (call.name == "run_cmd" and not live):
            self._print_trimmed(evidence.result)
        self._diff_shown.discard(call.id)
        if not self.activity.jobs:  # the results go back to the model next
            self.activity.request_started()
        self._draw()

    def _end_live_output(self, result: str) -> None:
        if self._partial:  # the output stopped mid-line
            self._print_output_lines([self._partial])
            self._partial = ""
        if self._live_hidden:
            self._print_tail(result)
        self._live_output = False

    def _print_tail(self, result: str) -> None:
        self.console.print(Text(f"    [... {self._live_hidden} lines not shown; the last ones:]",
                                style="status"))
        for ln in result.splitlines()[-TAIL_LINES:]:
            self.console.print(indented(shown(ln[:200], "status"), 4))

    def _print_trimmed(self, result: str) -> None:
        lines = result.splitlines()
        if len(lines) > SHOWN_RESULT_LINES:
            half = SHOWN_RESULT_LINES // 2
            omitted = len(lines) - SHOWN_RESULT_LINES
            lines = [*lines[:half], f"[... {omitted} lines omitted ...]", *lines[-half:]]
        for ln in lines:
            self.console.print(indented(shown(ln[:200], "status"), 4))

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        """The question with one key for the answer; the call's clock starts again after it,
        so its time leaves out the wait for the user."""
        self.pause()
        if self.question.show(call, reason):
            self._diff_shown.add(call.id)
        key = await self.question.answer()
        self.activity.restart(call.id)
        if key == "n":
            decision = await self.question.why_not()
        elif key in ("y", "a"):
            decision = Decision(True, remember=key == "a")
            rule = self.on_always(call) if key == "a" else ""
            if rule:
                self.notice(f"saved allow rule {rule}")
        else:
            decision = Decision(False, "")
        self._draw()
        return decision

    def agent_event(self, event: dict[str, Any]) -> None:
        """Sub-agents: a line per running agent (its task, its calls, its latest tool) in the
        live region, under it its command's newest output line, and one summary line in the
        scrollback when it ends."""
        kind, name = event["type"], f"agent {event['agent_name']} [{event['agent']}]"
        key = "agent " + event["agent"]
        if kind == "agent_tool_start":
            task = event.get("task", "")
            task = clip_words(task, 60)
            detail = f"call {event['calls']} · {event['name']}"
            if key not in self.activity.jobs:
                self.activity.begin(key, f"{name}: {task}")
            self.activity.detail(key, detail)
            if not self.region.enabled:  # no live region: a line per call instead
                self.console.print(shown(f"  {name}: {task} · {detail}", "status"))
        elif kind == "agent_output":
            self.activity.output(key, last_line(event["text"]))
        elif kind == "agent_notice":
            self.notice(f"[{name}] {event['message']}", event["level"])
        elif kind == "agent_end":
            self.activity.end(key)
            tokens = event["usage"]["input_tokens"] + event["usage"]["output_tokens"]
            why = f" ({event['reason']})" if event["reason"] else ""
            self.console.print(shown(f"  {name} {event['state']}{why}: {event['steps']} steps, "
                                     f"{tokens} tokens, {event['elapsed']:.1f}s", "status"))
        self._draw()

    def answer_checks(self, warnings: list[str]) -> None:
        """After the answer, one dimmed line per thing the answer checks found."""
        self.settle()
        for warning in warnings:
            self.console.print(shown(f"check: {warning}", "status"))

    def notice(self, message: str, level: NoticeLevel = "info") -> None:
        """A line from the loop, or from the background (an MCP server ready or stopped) while
        the input line is up: then it goes above that line, which is drawn again under it."""
        self._end_reply_text()
        style = {"error": "tool.error", "warning": "notice"}.get(level, "status")
        self.print_above_input(lambda: self.console.print(shown(message, style)))


def made_change(evidence: Evidence, previewed: tuple[ToolCall, list[str] | None] | None) -> list[str]:
    """The diff a finished file change made: the one worked out before it ran, when what ran
    is what was previewed (a hook may have rewritten the arguments), else what its result
    says (edit_file's result holds its diff; write_file's only names the file)."""
    if previewed is not None:
        call, diff = previewed
        if diff is not None and call.arguments == evidence.call.arguments:
            return diff
    return evidence.result.splitlines()


WAIT_KEY = "the start"
"""The activity job of a wait before a turn can begin."""


@contextlib.contextmanager
def live_wait(ui: TerminalUI, label: str) -> Iterator[None]:
    """A wait before a turn can begin (the runtime still starting: MCP servers, the questions
    to the provider) as an activity line with a moving clock, erased when it ends."""
    ui.activity.begin(WAIT_KEY, label)
    ui.region.start()
    ui.region.refresh()
    try:
        yield
    finally:
        ui.activity.end(WAIT_KEY)
        ui.region.stop()


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
