"""Folder trust without noise: the chat asks first and says what trusting enables, its warnings
that depend on the answer come after it (none that the answer resolved), and a folder trusted in
the chat is trusted by `-p` runs too. The chat in a pty, `-p` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args

from tether.safety.trusted_folders import TrustStore

IGNORED = "allow rule(s) ignored because this folder is not trusted"
HOOKS_OFF = "not trusted, so its hooks do not run"


def folder_with_configuration(project: Path) -> Path:
    (project / ".permissions.json").write_text(json.dumps({"allow": ["write_file(notes.txt)",
                                                                     "run_cmd(pytest*)"]}))
    (project / ".tether").mkdir()
    hook = {"matcher": "run_cmd", "hooks": [{"type": "command", "command": "true"}]}
    (project / ".tether" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [hook]}}))
    (project / "AGENTS.md").write_text("Answer briefly.\n")
    return project


def start_and_answer(project: Path, home: Path, key: str) -> str:
    with FakeServer() as server, PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_text("Trust this folder?")
        before = app.text()
        app.send(key)
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        return " ".join(before.split()) + "\n=====\n" + " ".join(app.text().split())  # unwrapped


def test_the_trust_question_comes_first_and_says_what_trusting_enables(project: Path, home: Path) -> None:
    folder_with_configuration(project)
    shown = start_and_answer(project, home, "y")
    before, after = shown.split("\n=====\n")
    question = before[: before.index("Trust this folder?")]
    assert IGNORED not in question and HOOKS_OFF not in question  # no warning before it
    assert ".permissions.json: allow rules" in question
    assert ".tether/settings.json: hooks" in question
    assert "AGENTS.md: instructions" in question
    assert "Trusted; its configuration applies from now on." in after
    assert IGNORED not in after and HOOKS_OFF not in after  # the yes resolved them


def test_a_no_shows_the_warnings_it_causes_after_the_question(project: Path, home: Path) -> None:
    folder_with_configuration(project)
    after = start_and_answer(project, home, "n").split("\n=====\n")[1]
    assert after.index("Trust this folder?") < after.index(IGNORED)
    assert after.index("Trust this folder?") < after.index(HOOKS_OFF)


def test_a_folder_trusted_in_the_chat_is_trusted_by_print_runs(project: Path, home: Path) -> None:
    (project / ".permissions.json").write_text(json.dumps({"allow": ["write_file(notes.txt)",
                                                                     "run_cmd(pytest*)"]}))
    TrustStore(home).trust(project)  # what a yes to the chat's question records
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "TETHER"))}
    environment.update(TETHER_HOME=str(home), OPENAI_API_KEY="sk-test", TETHER_PROFILE="full")
    script = [Reply(tool_calls=[("write_file", {"filepath": "notes.txt", "content": "kept\n"})]),
              Reply(text="Written.")]
    with FakeServer(script) as server:
        proc = subprocess.run([sys.executable, "-m", "tether", "-p", "write the note",
                               *openai_args(server.url)], cwd=project, env=environment,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert IGNORED not in proc.stderr
    assert (project / "notes.txt").read_text() == "kept\n"  # the project's allow rule counted
