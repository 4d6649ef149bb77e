"""The interactive app end to end: a real `tether` in a pseudo-terminal, a scripted model server.

Each test types into the app as a person would and reads the emulated screen
(see ptyapp.py); the fake server records every request body, so a test can
check what the model was actually sent.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from leftovers import until_gone
from ptyapp import PtyApp, app_env, openai_args

from tether.store.memory import MemoryStore
from tether.store.session import SessionStore
from tether.ui.terminal.slash.handlers import COMMANDS
from tether.ui.terminal.terminal_ui import keys_not_echoed

CHAT = "/v1/chat/completions"
TITLE_REQUEST = "Write a short title"
"""How the app's session-title request begins (session.title_prompt)."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes").mkdir()
    return root


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def start_app(server: FakeServer, project: Path, home: Path, *extra: str) -> PtyApp:
    app = PtyApp(openai_args(server.url, *extra), cwd=project, env=app_env(home))
    try:
        app.wait_for_prompt()
    except BaseException:
        app.close()
        raise
    return app


def turn_bodies(server: FakeServer) -> list[dict]:
    """The chat requests of turns, leaving out the app's session-title requests."""
    return [b for b in server.bodies(CHAT) if not _last_content(b).startswith(TITLE_REQUEST)]


def _last_content(body: dict) -> str:
    content = body["messages"][-1].get("content")
    return content if isinstance(content, str) else ""


def roles_and_texts(body: dict) -> list[tuple[str, str]]:
    """(role, content) of each non-system message of a request, the project context that
    opens the first request message left out."""
    return [(m["role"], (m.get("content") or "").split("# Request\n", 1)[-1])
            for m in body["messages"] if m["role"] != "system"]


def ask(app: PtyApp, text: str, done: str, timeout: float = 10) -> None:
    """Send a request and wait until `done` is on screen and the prompt is back."""
    app.line(text)
    app.wait_for_text(done, timeout)
    app.wait_for_prompt()


# ---------------------------------------------------------------- output


def test_text_streams_onto_the_screen_before_the_reply_ends(
    server: FakeServer, project: Path, home: Path
) -> None:
    text = "Beginning" + " step" * 44 + " Finale now"
    assert len(text) == 60 * 4  # 60 chunks of 4 characters, 50 ms apart
    server.add(Reply(text=text, chunk_size=4, delay=0.05), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("tell me a story")
        app.wait_for_text("Beginning")
        first_seen = time.monotonic()
        assert "Finale" not in app.text(), "the whole reply arrived at once"
        app.wait_for_text("Finale now")
        # The last ~55 chunks were still on their way (~2.7 s) when the first word showed.
        assert time.monotonic() - first_seen > 1.0
        app.wait_for_prompt()


def test_an_empty_answer_is_said_above_the_footer(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(Reply(text=""), Reply(text="Greeting"))
    with start_app(server, project, home) as app:
        ask(app, "hello", "with an empty reply")
        assert "(no answer: the model ended its turn with an empty reply)" in app.text()


def test_markdown_is_rendered(server: FakeServer, project: Path, home: Path) -> None:
    answer = (
        "# Release Notes\n\n"
        "Some **bold** words.\n\n"
        "- apples\n- pears\n\n"
        "```python\nprint('fenced code')\n```\n\n"
        "| Fruit | Count |\n|-------|-------|\n| kiwi  | 7     |\n"
    )
    server.add(Reply(text=answer, chunk_size=16), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        ask(app, "release notes please", "tool call(s)")
        shown = app.text()
    assert "Release Notes" in shown and "# Release" not in shown
    assert "Some bold words." in shown and "**" not in shown
    assert "• apples" in shown and "• pears" in shown and "- apples" not in shown
    assert "print('fenced code')" in shown and "```" not in shown
    table = [line for line in shown.splitlines() if "Fruit" in line or "kiwi" in line]
    assert len(table) == 2 and not any("|" in line for line in table), table
    assert "─" in shown  # the table's header rule, drawn instead of |-------|


# ---------------------------------------------------------------- Ctrl-C


def test_ctrl_c_stops_a_slow_stream_and_keeps_history(
    server: FakeServer, project: Path, home: Path
) -> None:
    slow = "Streaming slowly " + "and on " * 200
    server.add(
        Reply(text=slow, chunk_size=5, delay=0.05),
        Reply(text="Fancy Title"),
        Reply(text="Second answer."),
    )
    with start_app(server, project, home) as app:
        app.line("first question")
        app.wait_for_text("Streaming slowly")
        app.ctrl_c()
        app.wait_for_text("Stopped.")
        app.wait_for_prompt()
        before_stop = app.text().split("Stopped.")[0]
        # The partial text stays on screen, once: the echoed ^C must not break the live region.
        assert before_stop.count("Streaming slowly") == 1, before_stop
        assert "^C" not in app.text()
        ask(app, "second question", "Second answer.")
    first, second = turn_bodies(server)
    assert roles_and_texts(first) == [("user", "first question")]
    history = roles_and_texts(second)
    assert [role for role, _ in history] == ["user", "assistant", "user"]
    assert history[0] == ("user", "first question")
    partial = history[1][1]
    assert partial.startswith("Streaming slowly") and len(partial) < len(slow.strip())
    assert history[2] == ("user", "second question")


def test_keys_typed_during_a_reply_are_not_echoed_into_it_and_wait_at_the_prompt(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(Reply(text="Streaming " * 30, chunk_size=5, delay=0.02), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("first question")
        app.wait_for_text("Streaming")
        app.send("typed ahead")
        app.wait_for_text("tool call(s)")
        app.wait_for(lambda _: app.cursor_line() == "› typed ahead", what="the typed-ahead text")
        reply = app.text().split("› first question")[1].split("1 request(s)")[0]
    # An echoed key would have broken the live region and left a stray copy of a line behind.
    assert reply.split() == ["Streaming"] * 30, reply


def test_keys_not_echoed_switches_echo_off_and_back(tmp_path: Path) -> None:
    termios = pytest.importorskip("termios")
    leader, follower = os.openpty()
    with os.fdopen(follower, "r") as terminal:
        before = termios.tcgetattr(follower)
        assert before[3] & termios.ECHO
        with keys_not_echoed(terminal):
            assert not termios.tcgetattr(follower)[3] & (termios.ECHO | termios.ECHOCTL)
            assert termios.tcgetattr(follower)[3] & termios.ISIG, "Ctrl-C must still interrupt"
        assert termios.tcgetattr(follower) == before
    os.close(leader)
    with (tmp_path / "not-a-terminal").open("w+") as plain, keys_not_echoed(plain):
        pass  # a file or pipe is left alone


def test_ctrl_c_stops_a_running_command_and_its_processes(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(Reply(tool_calls=[("run_cmd", {"command": "echo $$ > shell.pid; sleep 1000"})]))
    # Unsandboxed: the shell must report its host pid (inside the sandbox's pid namespace it is 2).
    with start_app(server, project, home, "--auto", "--sandbox", "off") as app:
        app.line("wait a while")
        pid_file = project / "shell.pid"
        app.wait_for(
            lambda _: pid_file.exists() and pid_file.read_text().strip() != "",
            what="the command to start",
        )
        pid = int(pid_file.read_text())
        app.ctrl_c()
        # The command sleeps far longer than any wait: the prompt is back because it stopped.
        app.wait_for_text("Stopped.")
        app.wait_for_prompt()
        assert until_gone(pid), f"the command's shell {pid} outlived Ctrl-C"


# ---------------------------------------------------------------- approvals


def write_call(content: str = "hello\n") -> Reply:
    return Reply(tool_calls=[("write_file", {"filepath": "notes/a.md", "content": content})])


def test_approval_yes_writes_the_file(server: FakeServer, project: Path, home: Path) -> None:
    server.add(write_call(), Reply(text="Wrote it."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        assert (project / "notes" / "a.md").exists() is False, "it wrote before asking"
        app.send("y")
        app.wait_for_text("Wrote it.")
        app.wait_for_prompt()
    assert (project / "notes" / "a.md").read_text() == "hello\n"


def test_approval_no_with_a_reason_tells_the_model_why(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(write_call(), Reply(text="Understood."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        app.send("n")
        app.wait_for_cursor_on("Why not?")
        app.line("put notes in the docs folder")
        app.wait_for_text("Understood.")
        app.wait_for_prompt()
    assert not (project / "notes" / "a.md").exists()
    results = [m for m in turn_bodies(server)[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and "put notes in the docs folder" in results[0]["content"]


def test_ctrl_c_at_the_approval_question_refuses_the_call(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(write_call(), Reply(text="Not written, then."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        app.ctrl_c()
        app.wait_for_text("Not written, then.")
        app.wait_for_prompt()
    assert not (project / "notes" / "a.md").exists()
    results = [m for m in turn_bodies(server)[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and "refused" in results[0]["content"]


def test_approval_always_saves_a_rule_and_stops_asking(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(
        write_call(),
        Reply(text="Wrote it."),
        Reply(text="Fancy Title"),
        write_call(),
        Reply(text="Wrote it again."),
    )
    with start_app(server, project, home) as app:
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        app.send("a")
        app.wait_for_text("Wrote it.")
        app.wait_for_prompt()
        assert (project / "notes" / "a.md").read_text() == "hello\n"
        rules = json.loads((project / ".permissions.json").read_text())
        assert "write_file(notes/a.md)" in rules["allow"]
        ask(app, "write it again", "Wrote it again.")
        assert app.text().count("Allow?") == 1, "the second identical call asked again"
    last = turn_bodies(server)[-1]
    results = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert results[-1].startswith("Unchanged: notes/a.md"), "it ran, unasked (the same content)"


def test_always_in_the_home_folder_trusts_nothing_and_says_where_the_rule_went(
    server: FakeServer, tmp_path: Path, home: Path
) -> None:
    """Started in $HOME, [a]lways must not make $HOME trusted: a repository made there
    later would have its own allow rules honoured without a question."""
    me = tmp_path / "me"
    (me / "notes").mkdir(parents=True)
    server.add(write_call(), Reply(text="Wrote it."))
    with PtyApp(openai_args(server.url), cwd=me, env=app_env(home, HOME=str(me))) as app:
        app.wait_for_prompt()
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        app.send("a")
        app.wait_for_text("Wrote it.")
        app.wait_for_prompt()
        text = app.text()
    assert not (me / ".permissions.json").exists()
    assert "write_file(notes/a.md)" in json.loads((home / "permissions.json").read_text())["allow"]
    assert "it is your home folder" in text
    squeezed = "".join(text.split())  # the terminal wraps the long path
    assert f"saved allow rule write_file(notes/a.md) in {home / 'permissions.json'}".replace(" ", "") in squeezed
    assert not (home / "trusted.json").exists()
    repo = me / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".permissions.json").write_text('{"allow": ["run_cmd"]}\n')
    with PtyApp(openai_args(server.url), cwd=repo, env=app_env(home, HOME=str(me))) as app:
        app.wait_for_cursor_on("[y/N]")  # the repository's rules are not honoured unasked
        app.line("n")
        app.wait_for_prompt()
        app.ctrl_d()


# ---------------------------------------------------------------- sessions


def test_load_by_title_and_continue_restore_the_conversation(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(Reply(text="The capital is Paris."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        ask(app, "capital of France?", "The capital is Paris.")
        app.ctrl_d()
        assert app.wait_exit() == 0
    [saved] = SessionStore(home).list(project)
    assert saved.title == "Fancy Title"
    earlier = [("user", "capital of France?"), ("assistant", "The capital is Paris.")]

    server.add(Reply(text="About two million."))
    with start_app(server, project, home) as app:
        app.line("/load fancy title")
        app.wait_for_text("Loaded Fancy Title (2 messages)")
        app.wait_for_prompt()
        ask(app, "and its population?", "About two million.")
    assert roles_and_texts(turn_bodies(server)[-1]) == [*earlier, ("user", "and its population?")]

    server.add(Reply(text="Yes, the Louvre."))
    with start_app(server, project, home, "-c") as app:
        assert "Continuing session Fancy Title (4 messages)" in app.text()
        ask(app, "any museums?", "Yes, the Louvre.")
    assert roles_and_texts(turn_bodies(server)[-1]) == [
        *earlier,
        ("user", "and its population?"),
        ("assistant", "About two million."),
        ("user", "any museums?"),
    ]


def test_a_killed_app_leaves_session_and_memory_files_whole(
    server: FakeServer, project: Path, home: Path
) -> None:
    remember = Reply(
        tool_calls=[("write_memory", {"name": "editor", "content": "The user likes vim."})]
    )
    server.add(
        remember,
        Reply(text="Noted."),
        Reply(text="Fancy Title"),
        Reply(text="Long answer " * 300, chunk_size=5, delay=0.02),
    )
    with start_app(server, project, home) as app:
        app.line("remember that I like vim")
        app.wait_for_cursor_on("Allow?")
        app.send("y")
        assert "✓ saved editor" in app.wait_for_text("Noted.")
        app.wait_for_prompt()
        app.line("now write a long answer")
        app.wait_for_text("Long answer Long answer")
        app.kill()
        assert app.exit_status == -9
    [saved] = SessionStore(home).list(project)
    record = SessionStore(home).load(saved.id)
    assert record.title == "Fancy Title"
    assert [m.role for m in record.messages] == ["user", "assistant", "tool", "assistant"]
    assert MemoryStore(home / "memory.json").read("editor") == "The user likes vim."
    json.loads((home / "memory.json").read_text())
    leftovers = [p.name for p in (home / "sessions").iterdir() if p.name.startswith(".")]
    assert leftovers == []


# ---------------------------------------------------------------- commands and exits


def test_unknown_command_suggests_the_nearest_and_help_lists_all(
    server: FakeServer, project: Path, home: Path
) -> None:
    with start_app(server, project, home) as app:
        app.line("/evid")
        app.wait_for_text("Unknown command /evid. Did you mean /evidence?")
        app.wait_for_prompt()
        app.line("/help")
        app.wait_for_text("Mention a file with @path")
        shown = app.text()
    rows = [line for line in shown.splitlines() if line.startswith("  /")]
    assert {row.split()[0] for row in rows} == {"/" + c.name for c in COMMANDS.all()}
    # Each help text starts after a gap of two or more spaces, at the same column on every row.
    help_columns = {help_column(row) for row in rows}
    assert len(help_columns) == 1, "the help texts do not line up"
    assert server.bodies(CHAT) == [], "a slash command reached the model"


def help_column(row: str) -> int:
    """Where the help text of a /help row starts; -1 when no gap of two spaces sets it apart."""
    gap = re.match(r"  \S+(?: \S+)*\s{2,}", row)
    return gap.end() if gap else -1


def test_ctrl_d_at_an_empty_prompt_exits_0(server: FakeServer, project: Path, home: Path) -> None:
    with start_app(server, project, home) as app:
        app.ctrl_d()
        assert app.wait_exit() == 0


def test_ctrl_c_twice_at_an_empty_prompt_exits(
    server: FakeServer, project: Path, home: Path
) -> None:
    with start_app(server, project, home) as app:
        app.ctrl_c()
        app.wait_for_text("Ctrl-C again, or Ctrl-D, to exit")
        app.wait_for_prompt()
        app.ctrl_c()
        assert app.wait_exit() == 0
        assert "Traceback" not in app.text()


def test_ctrl_c_clears_a_typed_line_instead_of_exiting(
    server: FakeServer, project: Path, home: Path
) -> None:
    with start_app(server, project, home) as app:
        app.send("half a thought")
        app.wait_for(lambda _: "half a thought" in app.cursor_line(), what="the typed text")
        app.ctrl_c()
        app.wait_for(lambda _: app.cursor_line().rstrip() == "›", what="an empty input line")
        app.ctrl_d()
        assert app.wait_exit() == 0
    assert server.bodies(CHAT) == []


def test_connect_saves_a_typed_key_owner_only_and_switches(project: Path, home: Path) -> None:
    """/connect anthropic: the key is asked once (hidden), saved 0600 under TETHER_HOME only,
    a model is picked from the provider's own list, and the choice is remembered."""
    with FakeServer([Reply(text="Hello from the other side.")]) as server:
        url = server.url
        env = app_env(home, ANTHROPIC_BASE_URL=url)
        env.pop("ANTHROPIC_API_KEY", None)
        with PtyApp(openai_args(server.url), cwd=project, env=env) as app:
            app.wait_for_prompt()
            app.line("/connect status")
            app.wait_for_text("gemini")
            app.wait_for_prompt()
            app.line("/connect anthropic")
            app.wait_for_text("API key for anthropic")
            app.line("sk-ant-typed-secret-123")
            app.wait_for_text("model (number or name")
            app.line("2")
            app.wait_for_text("Connected: anthropic")
            app.wait_for_prompt()
            ask(app, "hi there", "Hello from the other side.")
            screen = app.text()
            app.ctrl_d()
            assert app.wait_exit() == 0
        sent = [b for p, b in server.requests if p == "/v1/messages"]
    assert "sk-ant-typed-secret-123" not in screen
    credentials = home / "credentials.json"
    assert oct(credentials.stat().st_mode & 0o777) == "0o600"
    assert "sk-ant-typed-secret-123" in credentials.read_text()
    assert not list(project.rglob("credentials.json"))
    assert sent and sent[0]["model"] == "fake-coder:7b"
    remembered = json.loads((home / "connection.json").read_text())
    # a server other than Anthropic's own: its URL is remembered too (the key never is)
    assert remembered == {"provider": "anthropic", "model": "fake-coder:7b", "base_url": url}
    for path in [*home.rglob("*.json"), home / "history"]:
        if path != credentials and path.exists():
            assert "sk-ant-typed-secret-123" not in path.read_text(), path
