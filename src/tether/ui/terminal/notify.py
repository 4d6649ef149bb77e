"""Telling a user who looked away: a long turn ended, or a question waits (setting `notify`).

`bell` rings the terminal's bell (BEL; the terminal decides what it does: a sound, a flash,
an urgent window). `desktop` rings it and also shows a notification through `notify-send`
(Linux) or `osascript` (macOS) when one is installed; when neither is, the bell alone, and
never an error. The notification's text is fixed here: no model text reaches a program's
arguments. A question waits only while a turn runs (an approval, the model's question, a
plan): a question right after the user typed a command needs no alarm.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

BELL = b"\a"
DESKTOP_TIMEOUT = 10.0
"""Seconds a notification program may take before it is left to itself."""


def desktop_command(message: str, which: Callable[[str], str | None] = shutil.which,
                    platform: str = sys.platform) -> list[str] | None:
    """The argv that shows `message` as a desktop notification here, None without a program."""
    if platform == "darwin" and which("osascript"):
        quoted = '"' + message.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return ["osascript", "-e", f'display notification {quoted} with title "tether"']
    if which("notify-send"):
        return ["notify-send", "tether", message]
    return None


def run_quietly(argv: list[str]) -> None:
    """Start `argv` in a thread, its output and failures ignored: a notification is a nicety."""
    def run() -> None:
        try:
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=DESKTOP_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError):
            pass

    threading.Thread(target=run, name="notify", daemon=True).start()


def ring_bell() -> None:
    """BEL to the terminal, straight to its file descriptor (the console would show it as an
    escaped control character); nothing when stdout is no terminal."""
    try:
        if os.isatty(1):
            os.write(1, BELL)
    except OSError:
        pass


@dataclass
class Notifier:
    mode: str = "off"
    """The setting: off, bell or desktop."""
    after: float = 15.0
    """Seconds a turn must have run for its end to be told."""
    bell: Callable[[], None] = ring_bell
    desktop: Callable[[str], list[str] | None] = desktop_command
    run: Callable[[list[str]], None] = run_quietly
    clock: Callable[[], float] = time.monotonic
    _turn_started: float | None = field(default=None, init=False)

    def turn_started(self) -> None:
        self._turn_started = self.clock()

    def turn_ended(self) -> None:
        started, self._turn_started = self._turn_started, None
        if started is not None and self.clock() - started >= self.after:
            self.tell(f"The answer is ready ({self.clock() - started:.0f}s).")

    def question_opened(self) -> None:
        if self._turn_started is not None:
            self.tell("A question waits for your answer.")

    def tell(self, message: str) -> None:
        if self.mode == "off":
            return
        self.bell()
        argv = self.desktop(message) if self.mode == "desktop" else None
        if argv is not None:
            self.run(argv)
