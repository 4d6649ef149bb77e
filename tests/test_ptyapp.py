"""The pty driver's waits are for what the app does after a line is sent, never for a screen
that already looks done: an app that has not yet read the line shows the last answer and an
input line, and a wait satisfied by those lets a test type ahead of a busy app."""

from __future__ import annotations

import os
from pathlib import Path

from ptyapp import PtyApp, app_env, gate_opened

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


def gated(script: str, tmp_path: Path) -> tuple[PtyApp, Path]:
    """`script` run in the pty with a FIFO (its gate) as its argument."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    return PtyApp([str(gate)], cwd=tmp_path, env=app_env(tmp_path), python_args=("-c", script),
                  status_line=False), gate


def test_a_sent_line_is_waited_for_until_it_is_answered(tmp_path: Path) -> None:
    app, gate = gated(GATED_APP, tmp_path)
    with app:
        app.wait_for_prompt()
        app.line("two")
        # The line is unread: the screen is the one before it, which must not count.
        assert app.at_prompt() and "Fine." in app.text()
        assert not app.at_new_prompt()
        assert "Fine." not in app.text_since_line()
        with gate_opened(app, gate):
            pass
        app.wait_for_text("Fine.")
        app.wait_for_prompt()
        assert app.text().count("Fine.") == 2
        assert app.text_since_line().splitlines()[0] == "› two"
        app.ctrl_d()
        assert app.wait_exit() == 0


# Warns before the first input line, then redraws that line in place (cursor up, erase to the
# end of the screen) once a line is read: the warning is still on the screen, at the row
# the line was typed on, but was written before it.
WARNING_APP = r"""
import os, sys, tty
tty.setraw(0)
os.write(1, "› ".encode())
with open(sys.argv[1]):
    pass
os.write(1, "\r\x1b[Jwarning: the input history cannot be used\r\n› ".encode())
line = b""
while not line.endswith(b"\r"):
    line += os.read(0, 1)
os.write(1, "\x1b[1A\r\x1b[J› ".encode() + line[:-1] + b"\r\n\x1b[1minput 0\x1b[0m tokens\r\n" + "› ".encode())
os.read(0, 1)
"""


def test_output_since_the_mark_is_only_what_the_app_wrote_after_it(tmp_path: Path) -> None:
    app, gate = gated(WARNING_APP, tmp_path)
    with app:
        with gate_opened(app, gate):
            pass
        app.wait_for_text("warning")
        app.line("/usage")
        assert "input " not in app.output_since_mark()  # the warning came before the line
        app.wait_for_output("input ")
        assert app.output_since_mark().endswith("› /usage\ninput 0 tokens\n› ")
        app.ctrl_d()
        assert app.wait_exit() == 0
