"""Drive the real interactive app in a pseudo-terminal and read its screen as a user would.

The app runs as `python -m tether` under pexpect with a fixed window size.
Everything it writes is fed into a pyte terminal emulator, so a test reads
what a person would see (markdown rendered, spinners and live regions
redrawn in place) rather than raw escape sequences. The emulator also
answers the cursor-position requests prompt_toolkit sends, as a real
terminal does.

    with PtyApp(openai_args(server), cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("hello")
        app.wait_for_text("Hi there")
        app.ctrl_d()
        assert app.wait_exit() == 0

Every wait is for something the app does after the last `line()` was sent,
never for a state the screen may already be in: `wait_for_text` reads from the
row that line was typed on, `wait_for_prompt` wants a new input line (the one
answered stays behind, so there is one more), `wait_for_cursor_on` a cursor
below that row. A wait that could be satisfied by the previous turn's output
would let the test type ahead of a busy app, which is timing, not behaviour.

The screen keeps the whole session, and a redraw can put old text below that row
(a warning printed above a prompt that is drawn again). `mark()` (every `line()` sets it)
remembers how much the app had written; `wait_for_output` searches only what it wrote
since, as plain text (escape sequences dropped), so nothing shown before can satisfy it.

A wait that runs out raises AssertionError with the screen in the message, so
a failing test shows what was on the terminal. The timeout only catches a
hang: it is generous so a heavily loaded machine does not fail a test.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pexpect
import pyte

from tether.ui.terminal.startup import STARTING

ROWS, COLUMNS = 40, 100
PROMPT_MARK = "›"
"""The first character of the app's input line."""
DEFAULT_TIMEOUT = 60.0
"""Seconds before a wait gives up: only a hang should reach it."""
ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erasing
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS and the other string controls
    r"|\x1b[ -/]*[0-~]"  # the two- and three-byte ones (charsets, keypad modes)
)
"""What the app writes that is not text: dropped from `output_since_mark`."""
HISTORY_LINES = 5000
"""Lines kept after they scroll off the top, so text() sees the whole session."""


def app_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment for a test app: its own TETHER_HOME, a dummy key, a real-looking terminal."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI", "OLLAMA", "TETHER", "ANTHROPIC", "GEMINI"))
        and k not in ("COLUMNS", "LINES", "NO_COLOR")
    }
    env.update(
        TETHER_HOME=str(home),
        OPENAI_API_KEY="x",
        TERM="xterm-256color",
        PYTHONUTF8="1",
        PYTHONIOENCODING="utf-8",
        TETHER_PROFILE="full",  # the fake server is local; the app tests are about the full profile
    )
    env.update(extra)
    return env


def openai_args(url: str, *extra: str) -> list[str]:
    """Flags that point the app at a fake server's OpenAI-compatible endpoint."""
    return ["--provider", "openai", "--base-url", url + "/v1", "--model", "fake", *extra]


class _AnsweringScreen(pyte.HistoryScreen):
    """A screen that keeps scrolled-off lines and answers status requests through `reply`."""

    def __init__(self, columns: int, rows: int, reply: Callable[[str], None]) -> None:
        super().__init__(columns, rows, history=HISTORY_LINES)
        self._reply = reply

    def write_process_input(self, data: str) -> None:
        self._reply(data)


def _line_text(line: Mapping[int, pyte.screens.Char], columns: int) -> str:
    return "".join(line[x].data for x in range(columns)).rstrip()


@dataclass(frozen=True)
class _Sent:
    """Where the session stood when a line was sent."""

    row: int
    """The cursor's row, counted from the session's first line (-1 before any line)."""
    prompts: int
    """Input lines in the session, the one the line was typed on included."""

    @property
    def first_row(self) -> int:
        return max(self.row, 0)


class PtyApp:
    """One run of the interactive app in a pseudo-terminal."""

    def __init__(
        self,
        args: list[str],
        cwd: Path,
        env: Mapping[str, str],
        rows: int = ROWS,
        columns: int = COLUMNS,
        python_args: Sequence[str] = ("-m", "tether"),
        program: str = sys.executable,
        status_line: bool = True,
    ) -> None:
        """`python_args` start the app (e.g. `-c` with a script that adds a tool first);
        `program` runs them (another app's interpreter, for the side-by-side benchmark);
        `status_line` says whether the app draws one under its input line (tether's chat)."""
        self.columns = columns
        self.status_line = status_line
        self.child = pexpect.spawn(
            program,
            [*python_args, *args],
            cwd=str(cwd),
            env=dict(env),
            dimensions=(rows, columns),
        )
        self.screen = _AnsweringScreen(columns, rows, self._answer)
        self.stream = pyte.ByteStream(self.screen)
        self.ended = False
        self.exit_status: int | None = None
        self._sent = _Sent(row=-1, prompts=0)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._written = ""
        """Everything the app wrote, decoded: what `mark()` and `wait_for_output` count in."""
        self._mark = 0

    # ------------------------------------------------------------ lifetime

    def __enter__(self) -> PtyApp:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int:
        return self.child.pid

    def close(self) -> None:
        """Stop the app if it is still running (only this child, by its pid)."""
        if self.child.isalive():
            self.child.terminate(force=True)
        self.child.close(force=True)

    def kill(self) -> None:
        """SIGKILL the app: no handler runs, nothing is flushed or saved on the way out."""
        os.kill(self.child.pid, signal.SIGKILL)
        self.wait_exit()

    def wait_exit(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Read until the app ends; its exit status, or -N when signal N ended it."""
        self.wait_for(lambda _: self.ended, timeout, "the app to exit")
        self.child.wait()
        status = self.child.exitstatus
        self.exit_status = -self.child.signalstatus if status is None else status
        return self.exit_status

    # ------------------------------------------------------------ typing

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def line(self, text: str) -> None:
        """Type a line and press Enter; the waits that follow look at what comes after it."""
        self._sent = _Sent(row=self._cursor_row(), prompts=self._prompts())
        self.mark()
        self.child.send(text + "\r")

    def mark(self) -> None:
        """From here on, `wait_for_output` looks only at what the app writes next."""
        self._mark = len(self._written)

    def ctrl_c(self) -> None:
        self.child.sendcontrol("c")

    def ctrl_d(self) -> None:
        self.child.sendcontrol("d")

    def _answer(self, data: str) -> None:
        if not self.ended:
            self.child.send(data)

    # ------------------------------------------------------------ reading

    def pump(self, timeout: float = 0.05) -> bool:
        """Feed whatever the app writes within `timeout` into the screen; False once it has ended."""
        if self.ended:
            return False
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            self.ended = True
            return False
        self.stream.feed(data)
        self._written += self._decoder.decode(data)
        return True

    def lines(self) -> list[str]:
        """Every line of the session so far: what scrolled off the top, then the screen."""
        scrolled = [_line_text(line, self.columns) for line in self.screen.history.top]
        return scrolled + [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def screen_text(self) -> str:
        """Only what is on the screen now."""
        return "\n".join(line.rstrip() for line in self.screen.display)

    def output_since_mark(self) -> str:
        """What the app wrote after the last mark, as plain text (cursor moves and colours
        dropped, so a redrawn line may run into the next)."""
        return ESCAPES.sub("", self._written[self._mark :]).replace("\r", "")

    def text_since_line(self) -> str:
        """The session from the row the last line was typed on (all of it before any line)."""
        return "\n".join(self.lines()[self._sent.first_row :])

    def _cursor_row(self) -> int:
        """The cursor's row counted from the session's first line, scrolled-off lines included."""
        return len(self.screen.history.top) + self.screen.cursor.y

    def _prompts(self) -> int:
        """Input lines in the session: each answered one stays, a redrawn one is erased first."""
        return sum(1 for line in self.lines() if line.startswith(PROMPT_MARK))

    def cursor_line(self) -> str:
        return self.screen.display[self.screen.cursor.y].rstrip()

    def at_prompt(self) -> bool:
        """The cursor rests on an input line (`› ...`): the app is waiting for a request."""
        return self.cursor_line().startswith(PROMPT_MARK)

    def at_new_prompt(self) -> bool:
        """At an input line drawn after the last line was sent: that line has been answered,
        and the runtime the chat builds once its first prompt is up is ready."""
        return self.at_prompt() and self._prompts() > self._sent.prompts and self.started()

    def started(self) -> bool:
        """The status line under the input line is drawn and no longer says the chat is
        starting (building its runtime and asking the provider, after the first prompt)."""
        if not self.status_line:
            return True
        below = [line for line in self.screen.display[self.screen.cursor.y + 1:] if line.strip()]
        return bool(below) and not any(STARTING in line for line in below)

    def wait_for(
        self, predicate: Callable[[str], bool], timeout: float = DEFAULT_TIMEOUT, what: str = ""
    ) -> str:
        """Read until `predicate(text())` holds; returns that text. Fails with the screen shown."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if predicate(text):
                return text
            if time.monotonic() > deadline:
                break
            if not self.pump(0.05):
                text = self.text()
                if predicate(text):
                    return text
                raise AssertionError(f"the app exited while waiting for {what}:\n{text}")
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}:\n{self.text()}")

    def wait_for_text(self, needle: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Wait until `needle` shows since the last line was sent (an earlier turn's does not count)."""
        return self.wait_for(
            lambda _: needle in self.text_since_line(), timeout, f"{needle!r} after the last line"
        )

    def wait_for_output(self, needle: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Wait until the app writes `needle` after the last mark (`line()` sets one): text
        it wrote before, wherever a redraw put it on the screen, never counts."""
        return self.wait_for(
            lambda _: needle in self.output_since_mark(), timeout, f"{needle!r} written after the mark"
        )

    def wait_for_prompt(self, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Wait until the app is idle at an input line drawn after the last line was sent.

        Until the app reads that line, the cursor still rests on the input line it was
        typed on; that one stays in the session once answered, so a new one means one more."""
        return self.wait_for(lambda _: self.at_new_prompt(), timeout, "a new input prompt")

    def wait_for_cursor_on(self, needle: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Wait until the cursor rests on a line holding `needle` (a question waiting for an
        answer) below the row the last line was sent on: not the question just answered."""
        return self.wait_for(
            lambda _: self._cursor_row() > self._sent.row and needle in self.cursor_line(),
            timeout,
            f"the cursor on a new line with {needle!r}",
        )


@contextlib.contextmanager
def gate_opened(app: PtyApp, gate: Path, timeout: float = DEFAULT_TIMEOUT) -> Iterator[None]:
    """The FIFO `gate` held open for writing while the block runs: its opening waits for the
    app to open the reading end. The app's output is read meanwhile (an app blocked on a full
    terminal never gets there), and an app that never opens it is a failure, not a hang: the
    test then opens the reading end itself so the waiting open ends."""
    opened: list[object] = []
    opener = threading.Thread(target=lambda: opened.append(gate.open("w")), daemon=True)
    opener.start()
    deadline = time.monotonic() + timeout
    while opener.is_alive() and time.monotonic() < deadline and app.pump():
        opener.join(0)
    if opener.is_alive():
        reader = os.open(gate, os.O_RDONLY | os.O_NONBLOCK)
        opener.join()
        os.close(reader)
        opened.pop().close()  # type: ignore[attr-defined]
        raise AssertionError(f"the app never opened {gate.name} for reading:\n{app.text()}")
    try:
        yield
    finally:
        opened.pop().close()  # type: ignore[attr-defined]
