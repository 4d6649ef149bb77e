"""The chat's start: the prompt is drawn before the runtime is built, a request typed
meanwhile waits for it, and a build that fails ends the app with one line. A real pty; the
build is held (or broken) by a script that wraps `runtime.build_runtime`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, gate_opened, openai_args

from tether.core.messages import Message, Text
from tether.safety.trusted_folders import PROJECT_FILE as RULES_FILE
from tether.safety.trusted_folders import TrustStore
from tether.store.session import SessionStore
from tether.ui.terminal.startup import STARTING, WAITING_FOR_START

HELD_BUILD = """
import sys
from tether import cli, runtime

GATE = sys.argv.pop(1)

def held(*args, **kwargs):
    with open(GATE):  # a FIFO: opening it waits until the test opens the other end
        pass
    return original(*args, **kwargs)

original, runtime.build_runtime = runtime.build_runtime, held
sys.exit(cli.main(sys.argv[1:]))
"""

HELD_START_AND_BUILD = """
import sys
from tether import cli, runtime

START, BUILD = sys.argv.pop(1), sys.argv.pop(1)

def held(*args, **kwargs):
    with open(BUILD):
        pass
    return original(*args, **kwargs)

original, runtime.build_runtime = runtime.build_runtime, held
with open(START):  # FIFOs: each waits until the test opens the other end
    pass
sys.exit(cli.main(sys.argv[1:]))
"""

BROKEN_BUILD = """
import sys
from tether import cli, runtime

def broken(*args, **kwargs):
    raise {error}

runtime.build_runtime = broken
sys.exit(cli.main(sys.argv[1:]))
"""


def held_start(project: Path, home: Path, tmp_path: Path, url: str,
               *flags: str) -> tuple[PtyApp, Path]:
    """The chat started with its build held until the returned FIFO is opened for writing."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    app = PtyApp([str(gate), *openai_args(url), *flags], cwd=project, env=app_env(home),
                 python_args=("-c", HELD_BUILD))
    return app, gate


def ask_while_held(app: PtyApp, gate: Path, line: str, answer: str) -> tuple[str, str]:
    """At the prompt drawn before the build: type `line` (before the build is let go, so the
    request waits for it), let the build go, wait for `answer`, exit. (The screen at the
    first prompt, the whole screen.)"""
    app.wait_for(lambda text: app.at_prompt() and STARTING in text, what="the prompt, starting")
    before = app.text()
    app.line(line)
    with gate_opened(app, gate):
        pass
    app.wait_for_text(answer)
    app.wait_for_prompt()
    app.ctrl_d()
    assert app.wait_exit() == 0
    return before, app.text()


@pytest.mark.parametrize("rules", [[], ["--allow", "run_cmd(pytest*)", "--deny", "run_cmd(rm*)"]])
def test_the_prompt_is_up_before_the_runtime_is_built(
    project: Path, home: Path, tmp_path: Path, rules: list[str]
) -> None:
    with FakeServer([Reply(text="Built and answered."), Reply(text="Title")]) as server:
        app, gate = held_start(project, home, tmp_path, server.url, *rules)
        with app:
            _, shown = ask_while_held(app, gate, "hello", "Built and answered.")
        asked = server.bodies("/v1/chat/completions")
    assert shown.index("Type a request") < shown.index("› hello") < shown.index("Built and answered.")
    assert asked and asked[0]["messages"][-1]["content"].endswith("# Request\nhello")


def test_a_request_typed_at_once_waits_visibly_and_is_sent_once_ready(
    project: Path, home: Path, tmp_path: Path
) -> None:
    """Typed the moment the prompt is drawn, long before the runtime is: it is not lost, it
    says it waits, and it goes out once, when the runtime is ready."""
    with FakeServer([Reply(text="Sent after the start."), Reply(text="Title")]) as server:
        app, gate = held_start(project, home, tmp_path, server.url)
        with app:
            app.wait_for(lambda _: app.at_prompt(), what="the first prompt")
            app.line("typed before the runtime was built")
            app.wait_for_text(WAITING_FOR_START)
            assert not server.bodies("/v1/chat/completions"), "nothing is sent before the build"
            with gate_opened(app, gate):
                pass
            app.wait_for_text("Sent after the start.")
            app.wait_for_prompt()
            app.ctrl_d()
            assert app.wait_exit() == 0
            shown = app.text()
        asked = server.bodies("/v1/chat/completions")
    sent_once_after_a_wait(asked, shown, "typed before the runtime was built", "Sent after the start.")


def sent_once_after_a_wait(asked: list[dict], shown: str, request: str, answer: str) -> None:
    """`request` went to the model once, shown at its prompt, then as waiting, then answered."""
    typed = [body for body in asked if body["messages"][-1]["content"].endswith("# Request\n" + request)]
    assert len(typed) == 1
    assert shown.index("› " + request) < shown.index(WAITING_FOR_START) < shown.index(answer)


def test_keys_typed_before_the_first_prompt_is_drawn_are_sent_once_ready(
    project: Path, home: Path, tmp_path: Path
) -> None:
    """Typed (with Enter) while the app has not even begun to start: the terminal was still in
    line mode, so the Enter came as a line feed; the request is still sent, once, after a
    visible wait, and what followed the Enter waits in the next input line."""
    with FakeServer([Reply(text="Answered the early request."), Reply(text="Title")]) as server:
        gate, build = tmp_path / "start", tmp_path / "build"
        os.mkfifo(gate)
        os.mkfifo(build)
        app = PtyApp([str(gate), str(build), *openai_args(server.url)], cwd=project,
                     env=app_env(home), python_args=("-c", HELD_START_AND_BUILD))
        with app:
            app.send("typed before the prompt\rand more")
            with gate_opened(app, gate):
                pass
            # the build held until the line has been taken: it waits, whatever the machine's load
            app.wait_for_text(WAITING_FOR_START)
            with gate_opened(app, build):
                pass
            app.wait_for_text("Answered the early request.")
            app.wait_for(lambda _: app.at_prompt() and app.started(), what="the next prompt")
            shown = app.text()
            next_line = app.cursor_line()
            app.send("\x15")  # Ctrl-U empties the line, so Ctrl-D exits
            app.ctrl_d()
            assert app.wait_exit() == 0
        asked = server.bodies("/v1/chat/completions")
    sent_once_after_a_wait(asked, shown, "typed before the prompt", "Answered the early request.")
    assert next_line == "› and more"


def test_a_continued_session_shows_where_it_left_off_before_the_runtime_is_built(
    project: Path, home: Path, tmp_path: Path
) -> None:
    store = SessionStore(home)
    record = store.new(project, "openai", "fake")
    record.title = "port question"
    record.messages = [Message.user("which port does it use?"),
                       Message("assistant", [Text("It listens on 8080.")])]
    store.save(record)
    with FakeServer([Reply(text="Still 8080.")]) as server:
        app, gate = held_start(project, home, tmp_path, server.url, "-c")
        with app:
            before, _ = ask_while_held(app, gate, "and now?", "Still 8080.")
        asked = server.bodies("/v1/chat/completions")
    assert "Continuing session port question (2 messages)." in before
    assert "› which port does it use?" in before and "It listens on 8080." in before
    sent = [m["content"] for m in asked[0]["messages"] if m["role"] != "system"]
    # the project context opens the conversation's first request
    assert sent[0].endswith("# Request\nwhich port does it use?") and sent[-1] == "and now?"
    assert len(store.load(record.id).messages) == 4, "the exchange is saved to the same session"


def test_a_trusted_folder_with_rules_asks_nothing_so_its_prompt_comes_first(
    project: Path, home: Path, tmp_path: Path
) -> None:
    (project / RULES_FILE).write_text('{"allow": ["run_cmd(pytest*)"]}\n')
    TrustStore(home).trust(project)
    with FakeServer([Reply(text="Ready.")]) as server:
        app, gate = held_start(project, home, tmp_path, server.url)
        with app:
            _, shown = ask_while_held(app, gate, "hi", "Ready.")
    assert "Trust this folder" not in shown


def test_an_untrusted_folder_with_rules_is_asked_before_its_prompt(project: Path, home: Path) -> None:
    (project / RULES_FILE).write_text('{"allow": ["run_cmd(pytest*)"]}\n')
    with FakeServer() as server:
        with PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
            app.wait_for_text("Trust this folder")
            assert STARTING not in app.text()
            app.send("n")  # one key, no Enter
            app.wait_for_prompt()
            app.ctrl_d()
            assert app.wait_exit() == 0
            shown = app.text()
    assert shown.index("Trust this folder") < shown.index("Not trusted")


def test_a_bad_command_line_rule_stops_the_chat_before_its_prompt(project: Path, home: Path) -> None:
    with FakeServer() as server:
        app = PtyApp([*openai_args(server.url), "--allow", "write_file()"], cwd=project, env=app_env(home))
        with app:
            assert app.wait_exit() == 2
            shown = app.text()
    assert "--allow 'write_file()'" in shown and "Type a request" not in shown
    assert "Traceback" not in shown


@pytest.mark.parametrize(("error", "code", "said"), [
    ("ValueError('the rules file cannot be read')", 2, "tether: the rules file cannot be read"),
    ("RuntimeError('no way')", 1, "tether: stopped by an unexpected RuntimeError: no way"),
])
def test_a_build_that_fails_after_the_prompt_ends_the_app_with_one_line(
    project: Path, home: Path, error: str, code: int, said: str
) -> None:
    with FakeServer() as server:
        app = PtyApp(openai_args(server.url), cwd=project, env=app_env(home),
                     python_args=("-c", BROKEN_BUILD.format(error=error)))
        with app:
            assert app.wait_exit() == code
            shown = app.text()
    assert said in shown.splitlines(), shown
    assert "Traceback" not in shown
