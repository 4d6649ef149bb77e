"""Keys typed before a question is on the screen never answer it; they wait as the next message.

A real app in a pseudo-terminal (ptyapp.py) and a scripted model server whose replies are held
by a gate: the test types while the app waits for the model (or before it has started at all),
then lets the reply go, so the keys are in the terminal before the question is drawn. Each
question must still wait for a key pressed after it appeared.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from fakeserver import FakeServer, Reply
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys
from ptyapp import PtyApp, app_env, openai_args
from test_app import CHAT, start_app, turn_bodies
from test_app_startup import HELD_BUILD

from tether.safety.trusted_folders import PROJECT_FILE as RULES_FILE
from tether.safety.trusted_folders import TrustStore
from tether.ui.terminal.typed_ahead import TypedAhead, typed_text

TYPED = "also yes, run some things"
"""Holds a, y and n: each answers some question, and none of them may."""
KEPT = "(kept for your next message)"
ANSWERED = ("Ran it.", "(Esc: no) yes", "(Esc: no) always", "(Esc: no) no", "Why not?")
"""Signs that the approval question was answered."""
"""What the question says about keys it did not take."""


def wait_for_request(app: PtyApp, server: FakeServer, count: int) -> None:
    """Until the app has sent its `count`th chat request (the model is 'thinking')."""
    app.wait_for(lambda _: len(server.bodies(CHAT)) >= count, what=f"chat request {count}")


def wait_for_question(app: PtyApp, question: str, *gone_wrong: str) -> None:
    """Until the cursor rests on `question`; fails at once if any of `gone_wrong` shows (the
    question was answered before the test could look)."""
    def waiting(text: str) -> bool:
        assert not any(sign in text for sign in gone_wrong), text
        return question in app.cursor_line()

    app.wait_for(waiting, what=f"the cursor on {question!r}")


def ask_again(app: PtyApp, again: str, *gone_wrong: str) -> None:
    """Press a key that answers nothing and wait for the question to say which keys do: every
    key before it has been read by then. Ends at once (failing) if any of `gone_wrong` shows."""
    app.mark()
    app.send("x")

    def settled(_: str) -> bool:
        written = app.output_since_mark()
        assert not any(sign in app.text() for sign in gone_wrong), app.text()
        return again in written

    app.wait_for(settled, what=f"{again!r} after a key that answers nothing")


def test_keys_typed_while_the_model_thinks_do_not_answer_the_approval(
    server: FakeServer, project: Path, home: Path
) -> None:
    gate = threading.Event()
    command = "echo ran > ran.txt"
    server.add(Reply(tool_calls=[("run_cmd", {"command": command})], gate=gate),
               Reply(text="Ran it."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("run the thing")
        wait_for_request(app, server, 1)  # the reply is held: the app waits for the model
        app.send(TYPED)
        gate.set()
        wait_for_question(app, "Allow?", *ANSWERED)
        ask_again(app, "Press y, n or a", *ANSWERED)
        assert app.cursor_line().startswith("Allow?"), "the question no longer waits"
        assert not (project / "ran.txt").exists(), "a typed-ahead key ran the command"
        assert not (project / RULES_FILE).exists(), "a typed-ahead key saved an allow rule"
        assert KEPT in app.text_since_line()
        app.send("y")
        app.wait_for_text("Ran it.")
        app.wait_for(lambda _: app.cursor_line() == "› " + TYPED, what="the typed-ahead text")
        shown = app.text_since_line()
    assert (project / "ran.txt").read_text() == "ran\n"
    assert not (project / RULES_FILE).exists()
    assert "(Esc: no) yes" in shown
    results = [m["content"] for m in turn_bodies(server)[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and "refused" not in results[0]


def test_keys_sent_with_the_request_in_one_write_do_not_answer_the_approval(
    server: FakeServer, project: Path, home: Path
) -> None:
    """The input line may read the keys after its Enter in the same read(): prompt_toolkit
    keeps those for the next question, which must not take them either."""
    server.add(Reply(tool_calls=[("run_cmd", {"command": "echo ran > ran.txt"})]),
               Reply(text="Ran it."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("run the thing\r" + TYPED)
        wait_for_question(app, "Allow?", *ANSWERED)
        ask_again(app, "Press y, n or a", *ANSWERED)
        assert not (project / "ran.txt").exists() and not (project / RULES_FILE).exists()
        app.send("y")
        app.wait_for_text("Ran it.")
        app.wait_for(lambda _: app.cursor_line() == "› " + TYPED, what="the typed-ahead text")
    assert (project / "ran.txt").read_text() == "ran\n"


def test_keys_typed_before_the_trust_question_do_not_trust_the_folder(
    project: Path, home: Path, tmp_path: Path
) -> None:
    (project / RULES_FILE).write_text('{"allow": ["run_cmd(*)"]}\n')
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    with FakeServer() as server:
        app = PtyApp([str(gate), *openai_args(server.url)], cwd=project, env=app_env(home),
                     python_args=("-c", HELD_BUILD))
        with app:
            app.send("yes " + TYPED)  # before the build, so before the question
            # the gate stays open: the runtime is built again once the folder is trusted
            with gate.open("w"):
                wait_for_question(app, "Trust this folder", "Trusted", "Not trusted")
                ask_again(app, "Press y or n", "Trusted", "Not trusted")
                assert not TrustStore(home).is_trusted(project), "a typed-ahead y trusted the folder"
                assert app.cursor_line().startswith("Trust this folder")
                app.send("y")
                app.wait_for_text("Trusted; its rules apply from now on.")
                app.wait_for(lambda _: app.cursor_line() == "› yes " + TYPED,
                             what="the typed-ahead text in the input line")
                app.ctrl_c()  # clears the line
                app.ctrl_d()
                assert app.wait_exit() == 0
            shown = app.text()
    assert TrustStore(home).is_trusted(project)
    assert f"not an answer: “yes {TYPED}” {KEPT}" in " ".join(shown.split())


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def test_keys_typed_while_the_commit_message_is_drafted_do_not_commit(
    server: FakeServer, project: Path, home: Path
) -> None:
    git(project, "init", "-q", "-b", "main")
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(project, "add", "calc.py")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    (project / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    gate = threading.Event()
    server.add(Reply(text="Swap the operands of add", gate=gate))
    with start_app(server, project, home) as app:
        app.line("/commit")
        wait_for_request(app, server, 1)
        app.send("yes\r")  # what answered the question when it read a line
        gate.set()
        wait_for_question(app, "Commit with this message?", "Committed", "Not committed")
        ask_again(app, "Press y, n or e", "Committed", "Not committed")
        assert git(project, "log", "--format=%s") == "first\n"
        app.send("y")  # one key, no Enter
        app.wait_for_text("Committed ")
        app.wait_for(lambda _: app.cursor_line() == "› yes", what="the typed-ahead text")
    assert git(project, "log", "--format=%s") == "Swap the operands of add\nfirst\n"


def test_typed_text_keeps_characters_line_ends_and_pastes_and_applies_backspace() -> None:
    presses = [KeyPress(c) for c in "fiz"] + [KeyPress(Keys.ControlH), KeyPress("x"),
                                              KeyPress(Keys.Up, "\x1b[A"), KeyPress(Keys.ControlM, "\r"),
                                              KeyPress(Keys.BracketedPaste, "pasted\nlines"),
                                              KeyPress(Keys.ControlX, "\x18")]
    assert typed_text(presses, "a ") == "a fix\npasted\nlines"


def test_kept_text_is_mentioned_once_and_taken_for_the_next_line() -> None:
    kept = TypedAhead()
    kept.keep([KeyPress(c) for c in "go on"] + [KeyPress(Keys.ControlM, "\r")])
    assert kept.pending() == "go on" and kept.news() == "go on"
    assert kept.news() == "" and kept.pending() == ""  # said once
    kept.keep([])
    assert kept.news() == ""  # nothing new: nothing to say
    assert kept.take() == "go on" and kept.take() == ""
