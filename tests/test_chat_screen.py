"""The chat screen as a new user meets it: what Ctrl-C and a change leave behind, how the
screen fits the terminal, messages typed while a turn runs, and the chat's own commands.

A real `tether` in a pseudo-terminal (ptyapp.py) against a scripted model server."""

from __future__ import annotations

from pathlib import Path

from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args
from test_one_shot_sessions import without_context

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


# ---------------------------------------------------------------- fitting the terminal


def help_rows(app: PtyApp) -> list[str]:
    app.line("/help")
    app.wait_for_prompt()
    return app.text_since_line().splitlines()[1:]


def test_help_fits_80_columns_between_words(server: FakeServer, project: Path, home: Path) -> None:
    with start_app(server, project, home, columns=80) as app:
        rows = help_rows(app)
    body = "\n".join(rows)
    # Each command's help starts on its own row, beside it; none is left one word per line.
    help_line = next(row for row in rows if row.strip().startswith("/help"))
    assert "list the commands" in help_line, body
    assert "/perms [allow|deny" in body and "RULE|reload]" in body, body  # not read as markup
    table = rows[: next(i for i, row in enumerate(rows) if row.startswith("Mention a file"))]
    # A wrapped help text goes on under its own column, never back at the left edge.
    assert all(row.startswith("  ") for row in table if row.strip()), body


def test_help_at_200_columns_is_one_row_a_command(
    server: FakeServer, project: Path, home: Path
) -> None:
    with start_app(server, project, home, columns=200) as app:
        rows = help_rows(app)
    commands = [row for row in rows if row.strip().startswith("/")]
    assert len(commands) >= 20 and all(len(row) <= 200 for row in rows)
    assert any("/mcp [tools|resources|reload|prompt SERVER NAME [key=value ...]]" in row
               and "MCP servers" in row for row in commands), "\n".join(rows)


def test_the_status_line_fits_80_columns(server: FakeServer, project: Path, home: Path) -> None:
    model = "a-model-with-a-long-name-" + "x" * 30
    with start_app(server, project, home, "--model", model, columns=80) as app:
        app.line("/automode on")
        app.wait_for_prompt()
        status = app.screen_text().splitlines()[-1]
    assert len(status) <= 80 and status.rstrip().endswith("modes: auto"), status
    assert "context" in status and "a-model-with" in status, status


def test_a_long_tool_error_wraps_under_its_indent(
    server: FakeServer, project: Path, home: Path
) -> None:
    missing = "no/such/" + "deeply-nested-folder/" * 6 + "file.txt"
    server.add(Reply(tool_calls=[("read_file", {"filepath": missing})]), Reply(text="Gone."),
               Reply(text="Fancy Title"))
    with start_app(server, project, home, columns=80) as app:
        app.line("read it")
        app.wait_for_text("Gone.")
        app.wait_for_prompt()
        rows = app.text_since_line().splitlines()
    error_at = next(i for i, row in enumerate(rows) if row.lstrip().startswith("✗"))
    following = [row for row in rows[error_at + 1:] if row.strip()]
    body = following[: following.index(next(r for r in following if "Gone." in r))]
    assert body and all(row.startswith("    ") for row in body), "\n".join(rows)


def test_a_question_wraps_between_words_at_80_columns(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".permissions.json").write_text('{"allow": ["read_file(*)"]}')
    with FakeServer() as server, PtyApp(openai_args(server.url), cwd=project,
                                        env=app_env(home), columns=50) as app:
        app.wait_for_cursor_on("[y/N]")
        rows = [row for row in app.screen_text().splitlines() if row.strip()]
        app.send("n")
        app.wait_for_prompt()
    assert rows[-1].startswith("Trust this folder") and rows[-1].endswith("[y/N]"), rows
    assert all(len(row) <= 50 for row in rows), rows
    words = " ".join(rows).split()  # a word cut at the edge would be two pieces here
    assert all(word in words for word in
               "allow rules: the tool calls they name run without asking".split()), rows


def test_a_background_notice_goes_above_the_input_line(tmp_path: Path, home: Path) -> None:
    """An MCP server that becomes ready while the user is typing: its notice is printed above
    the input line, which is drawn again, marker and typed text included."""
    import os

    from mcp_helpers import fake_entry, write_config

    project = tmp_path / "project"
    project.mkdir()
    home.mkdir()
    (home / "config.toml").write_text("mcp_startup_wait = 0\n")
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    entry = fake_entry("ok")
    held = {"command": "sh", "args": ["-c", f'read _ < "{gate}"; exec "$0" "$@"',
                                      entry["command"], *entry["args"]]}
    config = write_config(tmp_path / "servers.json", {"late": held})
    with FakeServer() as server, PtyApp(openai_args(server.url, "--mcp-config", str(config)),
                                        cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.send("half typed")
        app.wait_for(lambda _: app.cursor_line() == "› half typed", what="the typed text")
        app.mark()
        with open(gate, "w") as opened:
            opened.write("go\n")
        app.wait_for_output("MCP server 'late' is ready")
        app.wait_for(lambda _: app.cursor_line() == "› half typed", what="the input drawn again")
        rows = app.screen_text().splitlines()
    notice = [row for row in rows if "is ready" in row]
    assert len(notice) == 1 and notice[0].startswith("MCP server 'late' is ready"), rows
    assert rows.index(notice[0]) < app.screen.cursor.y


# ---------------------------------------------------------------- typed while a turn runs


def user_texts(server: FakeServer) -> list[str]:
    """The last user message of each turn's first request (title requests left out)."""
    texts = []
    for body in server.bodies(CHAT):
        users = [without_context(m.get("content") or "") for m in body["messages"] if m["role"] == "user"]
        if users and not users[-1].startswith("Write a short title") and users[-1] not in texts:
            texts.append(users[-1])
    return texts


def test_lines_typed_during_a_turn_are_queued_and_sent_after_it_in_order(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(Reply(text="Streaming " * 60, chunk_size=5, delay=0.03), Reply(text="Fancy Title"),
               Reply(text="Second answer."), Reply(text="Third answer."))
    with start_app(server, project, home) as app:
        app.line("first question")
        app.wait_for_text("Streaming")
        app.send("second question\r")
        app.wait_for_text("queued: second question")
        app.send("third question\r")
        app.wait_for_text("queued: third question")
        app.wait_for_text("Third answer.")
        app.wait_for_prompt()
        shown = app.text()
    assert user_texts(server) == ["first question", "second question", "third question"]
    assert shown.index("Second answer.") < shown.index("Third answer.")


def test_a_line_typed_before_a_question_is_queued_not_its_answer(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(Reply(text="Thinking " * 40, chunk_size=5, delay=0.03,
                     tool_calls=[("write_file", {"filepath": "a.md", "content": "x\n"})]),
               Reply(text="Not written."), Reply(text="Fancy Title"), Reply(text="Queued answer."))
    with start_app(server, project, home) as app:
        app.line("write it")
        app.wait_for_text("Thinking")
        app.send("also please\r")
        app.wait_for_cursor_on("Allow?")
        app.send("n")
        app.wait_for_cursor_on("Why not?")
        app.send("\r")
        app.wait_for_text("Queued answer.")
        app.wait_for_prompt()
    assert not (project / "a.md").exists()
    assert user_texts(server)[-1] == "also please"
