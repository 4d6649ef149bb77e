"""Keys typed before a question is on the screen never answer it; they wait as the next message.

A real app in a pseudo-terminal (ptyapp.py) and a scripted model server whose replies are held
by a gate: the test types while the app waits for the model (or before it has started at all),
then lets the reply go, so the keys are in the terminal before the question is drawn. Each
question must still wait for a key pressed after it appeared.
"""

from __future__ import annotations

import io
import os
import subprocess
import threading
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys
from ptyapp import PtyApp, app_env, gate_opened, openai_args
from rich.console import Console
from test_app import CHAT, start_app, turn_bodies
from test_app_startup import HELD_BUILD

from tether.safety.trusted_folders import PROJECT_FILE as RULES_FILE
from tether.safety.trusted_folders import TrustStore
from tether.ui.terminal.asking import PLAN, Asking
from tether.ui.terminal.keyboard import Asker, Choices
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
               Reply(text="Ran it."), Reply(text="Fancy Title"), Reply(text="Queued answer."))
    with start_app(server, project, home) as app:
        app.line("run the thing\r" + TYPED)  # line() ends it with Enter too: a queued message
        wait_for_question(app, "Allow?", *ANSWERED)
        ask_again(app, "Press y, n or a", *ANSWERED)
        assert not (project / "ran.txt").exists() and not (project / RULES_FILE).exists()
        app.send("y")
        app.wait_for_text("Ran it.")
        app.wait_for_text("queued: " + TYPED)
        app.wait_for_text("Queued answer.")
    assert (project / "ran.txt").read_text() == "ran\n"
    assert turn_bodies(server)[-1]["messages"][-1] == {"role": "user", "content": TYPED}


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
            app.send("yes " + TYPED)  # before the question, which comes before the build
            wait_for_question(app, "Trust this folder", "Trusted", "Not trusted")
            ask_again(app, "Press y or n", "Trusted", "Not trusted")
            assert not TrustStore(home).is_trusted(project), "a typed-ahead y trusted the folder"
            assert app.cursor_line().startswith("Trust this folder")
            app.send("y")
            with gate_opened(app, gate):  # the runtime is built once the question is answered
                app.wait_for_text("Trusted; its configuration applies from now on.")
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
    server.add(Reply(text="Swap the operands of add", gate=gate), Reply(text="Queued answer."))
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
        app.wait_for_text("queued: yes")  # a line ended with Enter: the next message
        app.wait_for_text("Queued answer.")
    assert git(project, "log", "--format=%s") == "Swap the operands of add\nfirst\n"


def test_keys_typed_while_the_model_thinks_do_not_answer_its_question(
    server: FakeServer, project: Path, home: Path
) -> None:
    """get_user_input reads a line: a line typed ahead, Enter and all, is not its answer."""
    gate = threading.Event()
    question = {"question": "Which one?", "options": ["first", "second"]}
    server.add(Reply(tool_calls=[("get_user_input", {"questions": [question]})], gate=gate),
               Reply(text="Going with it."), Reply(text="Fancy Title"), Reply(text="Two it is."))
    with start_app(server, project, home) as app:
        app.line("pick one")
        wait_for_request(app, server, 1)
        app.send("2\r")
        gate.set()
        wait_for_question(app, "answer (a number or your own words):", "Going with it.")
        app.send("1")
        app.wait_for(lambda _: app.cursor_line() == "answer (a number or your own words): 1",
                     what="only the key typed after the question in its line")
        app.send("\r")
        app.wait_for_text("Going with it.")
        app.wait_for_text("queued: 2")  # the line typed ahead is the next message, sent after
        app.wait_for_text("Two it is.")
    assert turn_bodies(server)[-1]["messages"][-1] == {"role": "user", "content": "2"}
    results = [m["content"] for m in turn_bodies(server)[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and "first" in results[0] and "second" not in results[0]


def test_keys_typed_ahead_of_a_key_question_are_dropped_unseen(project: Path, home: Path) -> None:
    """A key pasted before /connect's key question is drawn is not the answer, and since it may
    be a secret it is neither shown nor kept for the next message."""
    ahead, typed = "sk-ant-typed-ahead-1", "sk-ant-typed-after-2"
    with FakeServer([Reply(text="Hello.")]) as server:
        env = app_env(home, ANTHROPIC_BASE_URL=server.url)
        env.pop("ANTHROPIC_API_KEY", None)
        with PtyApp(openai_args(server.url), cwd=project, env=env) as app:
            app.wait_for_prompt()
            app.line(f"/connect anthropic\r{ahead}")
            # (the question wraps between words: its last words are on the cursor's row)
            wait_for_question(app, "server needs none)", "model (number")
            app.line(typed)
            app.wait_for_text("were dropped, not taken as its answer")
            app.wait_for_text("model (number or name")
            app.line("2")
            app.wait_for_text("Connected: anthropic")
            app.wait_for_prompt()
            assert app.cursor_line() == "›", "the dropped key came back in the input line"
            screen = app.text()
            app.ctrl_d()
            assert app.wait_exit() == 0
    assert ahead not in screen and typed not in screen
    saved = (home / "credentials.json").read_text()
    assert typed in saved and ahead not in saved


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


class ScriptedAsker(Asker):
    """Answers with scripted keys and lines, recording what was asked and whether a line was
    asked fresh (keys typed before it dropped) or as the follow-up of a key."""

    def __init__(self, *answers: str) -> None:
        super().__init__(Console(file=io.StringIO()))
        self.answers = list(answers)
        self.asked: list[tuple[str, bool]] = []

    async def choose(self, choices: Choices) -> str | None:
        self.asked.append((choices.question, True))
        key = self.answers.pop(0)
        assert key in choices.answers
        return key

    async def line(self, message: str, default: str = "", secret: bool = False,
                   fresh: bool = True) -> str:
        self.asked.append((message, fresh))
        return self.answers.pop(0)


@pytest.mark.parametrize(("keys", "decision", "asked"), [
    (["y"], (True, ""), [PLAN.question]),
    (["escape"], (False, ""), [PLAN.question]),
    (["n", "smaller steps"], (False, "smaller steps"), [PLAN.question, "What should change? "]),
])
async def test_a_plan_is_approved_with_one_key(keys: list[str], decision: tuple[bool, str],
                                               asked: list[str]) -> None:
    asker = ScriptedAsker(*keys)
    assert await Asking(asker.console, lambda: None, asker).approve_plan("1. do it") == decision
    assert [question for question, _ in asker.asked] == asked
    assert all(fresh for question, fresh in asker.asked if question == PLAN.question)
    assert not any(fresh for question, fresh in asker.asked if question != PLAN.question), \
        "what follows the n is the reason, not keys typed ahead of it"
