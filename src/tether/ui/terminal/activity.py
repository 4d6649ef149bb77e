"""Signs of life: what is under way during a turn, drawn in one live region at the bottom.

`Activity` knows what the turn is waiting for: the model (how long, and how fast text
streams), each running job (a tool call, a sub-agent; later an MCP server), with its own
clock and latest detail (a command's newest output line). Anything that wants to be seen
while it works reports through `begin`, `detail` and `end` under a key of its own.

`LiveRegion` draws it on a terminal: the open block of a streaming reply (the
`MarkdownStream` hands its view over), the activity line(s) and the status line, in one
transient rich `Live`. rich erases the region before every `console.print` and draws it
again below, so the scrollback only ever holds finished lines; a ticker redraws it a few
times a second so clocks move while nothing arrives. Off a terminal nothing of this runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.segment import Segment
from rich.text import Text

from .shown import shown

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.2
"""Seconds between redraws while nothing else draws: enough for a moving clock."""
CHARS_PER_TOKEN = 4
"""For the rate shown while a reply streams; the provider's count comes only at its end."""
MAX_JOB_LINES = 6


def seconds(value: float) -> str:
    """4.2s, 59.0s, 1m 05s: short, and one shape while it counts."""
    if value < 60:
        return f"{value:.1f}s"
    minutes, rest = divmod(int(value), 60)
    return f"{minutes}m {rest:02d}s"


@dataclass
class Job:
    """One thing under way besides the model request: a tool call, a sub-agent."""

    label: str
    started: float
    detail: str = ""
    output: str = ""
    """The newest output line of the command it runs (a sub-agent's), shown under its line."""


class Activity:
    """What the turn is doing now, as the lines of the live region (text for `shown`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.jobs: dict[str, Job] = {}
        self._request_started: float | None = None
        self._first_text: float | None = None
        self._chars = 0

    # ------------------------------------------------------------ the model request

    def request_started(self) -> None:
        self._request_started = self.clock()
        self._first_text = None
        self._chars = 0

    def received(self, text: str) -> None:
        """Reply text (or thinking) arrived: the wait became a stream."""
        if self._first_text is None:
            self._first_text = self.clock()
        self._chars += len(text)

    def idle(self) -> None:
        """Nothing is under way any more (the turn ended)."""
        self._request_started = None
        self.jobs.clear()

    # ------------------------------------------------------------ jobs

    def begin(self, key: str, label: str, detail: str = "") -> None:
        self.jobs[key] = Job(label, self.clock(), detail)

    def detail(self, key: str, text: str) -> None:
        """What the job does now; output shown under it belonged to what it did before."""
        job = self.jobs.get(key)
        if job is not None:
            job.detail, job.output = text, ""

    def output(self, key: str, line: str) -> None:
        job = self.jobs.get(key)
        if job is not None and line:
            job.output = line

    def restart(self, key: str) -> None:
        """Start a job's clock again (it waited for the user, which is not its time)."""
        job = self.jobs.get(key)
        if job is not None:
            job.started = self.clock()

    def end(self, key: str) -> None:
        self.jobs.pop(key, None)

    # ------------------------------------------------------------ what is shown

    def lines(self) -> list[str]:
        now = self.clock()
        spin = SPINNER[int(now / 0.1) % len(SPINNER)]
        if self.jobs:
            shown = list(self.jobs.values())[:MAX_JOB_LINES]
            lines = [line for job in shown for line in self._job_lines(spin, job, now)]
            if len(self.jobs) > len(shown):
                lines.append(f"  … {len(self.jobs) - len(shown)} more running")
            return lines
        if self._request_started is None:
            return []
        return [f"{spin} {self._model_line(now)}"]

    def _job_lines(self, spin: str, job: Job, now: float) -> list[str]:
        line = f"{spin} {job.label} · {seconds(now - job.started)}"
        lines = [f"{line} · {job.detail}" if job.detail else line]
        return lines + [f"  └ {job.output}"] if job.output else lines

    def _model_line(self, now: float) -> str:
        assert self._request_started is not None
        waited = seconds(now - self._request_started)
        if self._first_text is None:
            return f"waiting for the model · {waited}"
        streaming = now - self._first_text
        rate = self._chars / CHARS_PER_TOKEN / streaming if streaming > 0.2 else 0.0
        shown_rate = f" · ~{rate:.0f} tok/s" if rate else ""
        return f"receiving the reply · {waited}{shown_rate}"


def last_line(text: str, limit: int = 160) -> str:
    """The newest non-blank line of some output, cut to `limit` characters; of a line a
    progress bar redraws with carriage returns, its newest state."""
    for line in reversed(text.split("\n")):
        line = next((part.strip() for part in reversed(line.split("\r")) if part.strip()), "")
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def one_row(line: str, style: str) -> Text:
    """A line of model or command text on one row: escaped (`shown`), cut at the edge."""
    out = shown(line, style)
    out.no_wrap, out.overflow = True, "ellipsis"
    return out


class LiveRegion:
    """The bottom of the terminal during a turn: the open reply block, activity, status."""

    def __init__(self, console: Console, activity: Activity, status: Callable[[], str]) -> None:
        self.console = console
        self.activity = activity
        self.status = status
        self.enabled = console.is_terminal and not console.is_dumb_terminal
        self._view: RenderableType | None = None
        self._live: Live | None = None
        self._ticker: asyncio.Task[None] | None = None

    @property
    def drawing(self) -> bool:
        return self._live is not None

    def start(self) -> None:
        """Draw the region (a terminal only) and keep its clocks moving."""
        if not self.enabled or self._live is not None:
            return
        self._live = Live(self, console=self.console, transient=True, auto_refresh=False,
                          redirect_stdout=False, redirect_stderr=False)
        self._live.start(refresh=True)
        with contextlib.suppress(RuntimeError):  # no running loop: redrawn on events only
            self._ticker = asyncio.get_running_loop().create_task(self._tick())

    def stop(self) -> None:
        """Erase the region: a question or the prompt takes the screen."""
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK)
            self.refresh()

    # ------------------------------------------------------------ the reply's open block

    def show(self, view: RenderableType) -> None:
        """Draw a streaming reply's open block above the activity line."""
        self._view = view
        self.start()

    def hide(self) -> None:
        self._view = None

    @property
    def lines_below(self) -> int:
        """Rows the region draws under the open block (so the block leaves room for them)."""
        return len(self.activity.lines()) + (1 if self.status() else 0)

    # ------------------------------------------------------------ drawing

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self._view is not None:
            yield self._view
        for line in self.activity.lines():
            yield one_row(line, "status")
        status = self.status()
        if status:
            bar = one_row(status, "statusbar")
            bar.pad_right(max(0, options.max_width - bar.cell_len))
            yield bar
        if self._view is None and not self.activity.lines() and not status:
            yield Segment("")
