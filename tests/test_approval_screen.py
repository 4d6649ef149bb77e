"""What the approval screen shows is what runs: in a real pseudo-terminal, a command cannot
redraw its own approval line, hide a line, or reorder its letters."""

from __future__ import annotations

from pathlib import Path

from fakeserver import FakeServer, Reply
from test_app import start_app

REDRAW = "touch PWNED #\x1b[2K\x1b[1G    command: ls -la"
"""Erases the approval line and draws a harmless command where it was."""


def asks_to_run(server: FakeServer, command: str) -> None:
    server.add(Reply(tool_calls=[("run_cmd", {"command": command})]), Reply(text="Ran it."),
               Reply(text="Fancy Title"))


def approval_lines(screen: str) -> list[str]:
    """The screen from the approval question on."""
    lines = screen.splitlines()
    start = max(i for i, line in enumerate(lines) if "wants to run" in line)
    return lines[start:]


def test_a_command_cannot_redraw_its_approval_line(
    server: FakeServer, project: Path, home: Path
) -> None:
    asks_to_run(server, REDRAW)
    with start_app(server, project, home) as app:
        app.line("list the files")
        shown = approval_lines(app.wait_for_cursor_on("Allow?"))
        command_line = next(line for line in shown if "command:" in line)
        # The escape sequence is drawn, not obeyed: the real command is on the line.
        key, _, value = command_line.strip().partition(" ")
        assert key == "command:"
        assert value.strip() == "touch PWNED #\\x1b[2K\\x1b[1G    command: ls -la"
        assert not (project / "PWNED").exists()
        app.send("y")
        app.wait_for_text("Ran it.")
        app.wait_for_prompt()
        # The tool line drawn as the command starts shows the same text.
        assert "→ run_cmd touch PWNED #\\x1b[2K\\x1b[1G" in app.text()
    assert (project / "PWNED").exists()  # what was shown is what ran


def test_every_line_of_a_long_command_is_shown(server: FakeServer, project: Path, home: Path) -> None:
    command = "\n".join([f"echo step{i}" for i in range(30)] + ["touch LAST"])
    asks_to_run(server, command)
    with start_app(server, project, home) as app:
        app.line("run the steps")
        app.wait_for_cursor_on("Allow?")
        shown = approval_lines(app.text())
        for i in range(30):
            assert any(line.strip().endswith(f"echo step{i}") for line in shown), i
        assert any(line.strip() == "touch LAST" for line in shown)
        assert not any("more lines" in line for line in shown)
        app.send("n")
        app.wait_for_cursor_on("Why not?")
        app.line("")
        app.wait_for_prompt()
    assert not (project / "LAST").exists()


HIDDEN = {"\u202e": "\\u202e", "\u2066": "\\u2066", "\u200b": "\\u200b", "\r": "\\r", "\b": "\\b",
          "\x9b": "\\x9b", "\ufeff": "\\ufeff", "\x7f": "\\x7f", "\u061c": "\\u061c"}
"""Bidi overrides and isolates, zero-width characters, carriage return, backspace, a C1
control, DEL: each hides or reorders what is drawn around it."""


def test_bidi_zero_width_and_overwriting_characters_are_drawn_as_escapes(
    server: FakeServer, project: Path, home: Path
) -> None:
    command = "touch " + " ".join(f"safe{hidden}rm{i}" for i, hidden in enumerate(HIDDEN))
    asks_to_run(server, command)
    with start_app(server, project, home) as app:
        app.line("make files")
        shown = approval_lines(app.wait_for_cursor_on("Allow?"))
        wrapped = "".join(shown[1 : next(i for i, ln in enumerate(shown) if "Allow?" in ln)])
        for i, escape in enumerate(HIDDEN.values()):
            assert f"safe{escape}rm{i}" in wrapped, wrapped
        app.send("n")
        app.wait_for_cursor_on("Why not?")
        app.line("")
        app.wait_for_prompt()


def test_a_reply_shows_where_its_links_lead_and_cannot_write_the_clipboard(
    server: FakeServer, project: Path, home: Path
) -> None:
    reply = ("Read [https://docs.python.org](https://evil.example/x) first."
             "\x1b]52;c;cm0gLXJmIH4K\x07 \x1b]0;owned\x07 done")
    server.add(Reply(text=reply), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("where are the docs")
        app.wait_for_text("done")
        app.wait_for_prompt()
        screen = app.text()
        assert "https://evil.example/x" in screen  # a hyperlink would show only its text
        assert "\\x1b]52;c;cm0gLXJmIH4K\\x07" in screen and "\\x1b]0;owned\\x07" in screen
