"""The chat's start: the prompt is drawn before the runtime is built, a request typed
meanwhile waits for it, and a build that fails ends the app with one line. A real pty; the
build is held (or broken) by a script that wraps `runtime.build_runtime`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args

from tether.ui.terminal.startup import STARTING

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

BROKEN_BUILD = """
import sys
from tether import cli, runtime

def broken(*args, **kwargs):
    raise {error}

runtime.build_runtime = broken
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("rules", [[], ["--allow", "run_cmd(pytest*)", "--deny", "run_cmd(rm*)"]])
def test_the_prompt_is_up_before_the_runtime_is_built(
    project: Path, home: Path, tmp_path: Path, rules: list[str]
) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    with FakeServer([Reply(text="Built and answered."), Reply(text="Title")]) as server:
        app = PtyApp([str(gate), *openai_args(server.url), *rules], cwd=project, env=app_env(home),
                     python_args=("-c", HELD_BUILD))
        with app:
            app.wait_for(lambda text: app.at_prompt() and STARTING in text, what="the prompt, starting")
            app.line("hello")  # typed while the build is held: the request waits for it
            with gate.open("w"):
                pass
            app.wait_for_text("Built and answered.")
            app.wait_for_prompt()
            app.ctrl_d()
            assert app.wait_exit() == 0
            shown = app.text()
        asked = server.bodies("/v1/chat/completions")
    assert shown.index("Type a request") < shown.index("› hello") < shown.index("Built and answered.")
    assert asked and asked[0]["messages"][-1]["content"] == "hello"


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
