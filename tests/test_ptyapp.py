"""The pty driver's waits are for what the app does after a line is sent, never for a screen
that already looks done: an app that has not yet read the line shows the last answer and an
input line, and a wait satisfied by those lets a test type ahead of a busy app."""

from __future__ import annotations

import os
from pathlib import Path

from ptyapp import PtyApp, app_env

# Answers like the app does (`Fine.` then an input line), but each line only once the gate
# (a FIFO) is opened: until then the line sent sits unread in the terminal.
GATED_APP = r"""
import os, sys, tty
tty.setraw(0)  # keys arrive unechoed, as the real input line reads them
os.write(1, "Fine.\r\n› ".encode())
with open(sys.argv[1]):
    pass
line = b""
while not line.endswith(b"\r"):
    line += os.read(0, 1)
os.write(1, line[:-1] + "\r\nFine.\r\n› ".encode())
os.read(0, 1)
"""


def test_a_sent_line_is_waited_for_until_it_is_answered(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    with PtyApp([str(gate)], cwd=tmp_path, env=app_env(tmp_path),
                python_args=("-c", GATED_APP)) as app:
        app.wait_for_prompt()
        app.line("two")
        # The line is unread: the screen is the one before it, which must not count.
        assert app.at_prompt() and "Fine." in app.text()
        assert not app.at_new_prompt()
        assert "Fine." not in app.text_since_line()
        with gate.open("w"):
            pass
        app.wait_for_text("Fine.")
        app.wait_for_prompt()
        assert app.text().count("Fine.") == 2
        assert app.text_since_line().splitlines()[0] == "› two"
        app.ctrl_d()
        assert app.wait_exit() == 0
