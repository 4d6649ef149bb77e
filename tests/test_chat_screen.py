"""The chat screen as a new user meets it: what Ctrl-C and a change leave behind, how the
screen fits the terminal, messages typed while a turn runs, and the chat's own commands.

A real `tether` in a pseudo-terminal (ptyapp.py) against a scripted model server."""

from __future__ import annotations

from pathlib import Path

from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args

CHAT = "/v1/chat/completions"


def start_app(server: FakeServer, project: Path, home: Path, *extra: str,
              columns: int = 100, **env: str) -> PtyApp:
    app = PtyApp(openai_args(server.url, *extra), cwd=project, env=app_env(home, **env),
                 columns=columns)
    try:
        app.wait_for_prompt()
    except BaseException:
        app.close()
        raise
    return app


def squeezed(text: str) -> str:
    return "".join(text.split())


# ---------------------------------------------------------------- Ctrl-C and changes


def test_ctrl_c_in_a_turn_shows_stopped_and_the_footer(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(Reply(text="Streaming slowly " + "and on " * 200, chunk_size=5, delay=0.05),
               Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("first question")
        app.wait_for_text("Streaming slowly")
        app.ctrl_c()
        app.wait_for_text("Stopped.")
        app.wait_for_prompt()
        after = app.text_since_line().split("Stopped.", 1)[1]
    assert "0 request(s) + 1 cut off" in after, after
    assert "tool call(s)" in after and "stopped: cancelled" in after, after


def test_an_always_allowed_write_shows_its_change_after_the_call(
    server: FakeServer, project: Path, home: Path
) -> None:
    (project / "notes").mkdir()
    (project / "notes" / "a.md").write_text("old line\nkept line\n")
    server.add(Reply(tool_calls=[("write_file", {"filepath": "notes/a.md",
                                                 "content": "new line\nkept line\n"})]),
               Reply(text="Wrote it."), Reply(text="Fancy Title"))
    with start_app(server, project, home, "--allow", "write_file(notes/a.md)") as app:
        app.line("rewrite the note")
        app.wait_for_text("Wrote it.")
        app.wait_for_prompt()
        shown = app.text_since_line()
    assert "Allow?" not in shown
    assert (project / "notes" / "a.md").read_text() == "new line\nkept line\n"
    lines = [line.strip() for line in shown.splitlines()]
    assert "-old line" in lines and "+new line" in lines, shown
