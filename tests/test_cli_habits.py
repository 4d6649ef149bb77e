"""Habits users bring from other agents: `tether "REQUEST"`, `tether exec`, every one-shot run
saved so `-c` continues it, and `-r` without a session (a picker in the chat, a clear error
elsewhere). One-shot runs in a subprocess, the chat in a pty, both against the fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args
from test_one_shot_sessions import texts

from tether.core.messages import Message, Text
from tether.store.session import SessionStore

CHAT = "/v1/chat/completions"


def run_cli(args: list[str], cwd: Path, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "TETHER"))}
    environment.update(TETHER_HOME=str(home), OPENAI_API_KEY="sk-test", TETHER_PROFILE="full")
    return subprocess.run(
        [sys.executable, "-m", "tether", *args], cwd=cwd, env=environment, input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60,
    )


def saved_session(store: SessionStore, project: Path, title: str, request: str) -> str:
    record = store.new(project, "openai", "fake")
    record.title = title
    record.messages = [Message.user(request), Message("assistant", [Text(f"answer to {request}")])]
    store.save(record)
    return record.id


# ---------------------------------------------------------------- every -p run is saved


def test_a_plain_print_run_is_saved_and_continue_picks_it_up(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="Noted: 8080."), Reply(text="It was 8080.")]) as server:
        first = run_cli(["-p", "remember port 8080", "--output-format", "json",
                         *openai_args(server.url)], project, home)
        second = run_cli(["-c", "-p", "which port?", *openai_args(server.url)], project, home)
        bodies = server.bodies(CHAT)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    [saved] = SessionStore(home).list(project)
    assert json.loads(first.stdout)["session_id"] == saved.id
    assert texts(bodies[-1]) == [("user", "remember port 8080"), ("assistant", "Noted: 8080."),
                                 ("user", "which port?")]
    assert "No earlier session" not in second.stderr
    assert saved.messages == 4 and saved.first_request == "remember port 8080"


# ---------------------------------------------------------------- tether exec


def test_exec_is_print_and_takes_every_flag_after_it(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="Paris."), Reply(text="Still Paris.")]) as server:
        first = run_cli(["exec", "capital of France?", "--output-format", "json",
                         *openai_args(server.url)], project, home)
        second = run_cli(["exec", "-c", *openai_args(server.url), "sure?"], project, home)
        bodies = server.bodies(CHAT)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["result"] == "Paris."
    assert second.returncode == 0 and second.stdout == "Still Paris.\n", second.stderr
    assert texts(bodies[-1])[0] == ("user", "capital of France?")


def test_exec_without_a_request_reads_stdin(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="Piped.")]) as server:
        proc = run_cli(["exec", *openai_args(server.url)], project, home, stdin="from the pipe\n")
        bodies = server.bodies(CHAT)
    assert proc.returncode == 0 and proc.stdout == "Piped.\n", proc.stderr
    assert texts(bodies[-1]) == [("user", "from the pipe")]


def test_a_request_given_twice_or_without_a_terminal_is_a_usage_error(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="never asked")]) as server:
        both = run_cli(["exec", "one", "-p", "two", *openai_args(server.url)], project, home)
        no_chat = run_cli(["fix it", *openai_args(server.url)], project, home)
        asked = server.bodies(CHAT)
    assert both.returncode == 2 and "give the request once" in both.stderr, both.stderr
    assert no_chat.returncode == 2 and 'tether exec "fix it"' in no_chat.stderr, no_chat.stderr
    assert "Traceback" not in both.stderr + no_chat.stderr
    assert not asked


# ---------------------------------------------------------------- -r without a session


def test_resume_without_a_session_and_no_terminal_lists_the_ids_to_pass(project: Path, home: Path) -> None:
    store = SessionStore(home)
    billing = saved_session(store, project, "Billing bug", "the bug is in invoice.py")
    with FakeServer([Reply(text="never asked")]) as server:
        proc = run_cli(["-r", "-p", "where?", *openai_args(server.url)], project, home)
        asked = server.bodies(CHAT)
    assert proc.returncode == 2, proc.stderr
    assert "tether -r ID" in proc.stderr and f"{billing}  Billing bug" in proc.stderr
    assert "Traceback" not in proc.stderr and not asked


def test_resume_without_a_session_picks_one_in_the_chat(project: Path, home: Path) -> None:
    store = SessionStore(home)
    saved_session(store, project, "Older work", "the older request")
    newer = saved_session(store, project, "Billing bug", "the bug is in invoice.py")
    record = store.load(newer)
    record.updated += 10  # newest first: listed as 1
    store.save(record)
    with FakeServer([Reply(text="invoice.py, as you said.")]) as server, PtyApp(
            openai_args(server.url, "-r"), cwd=project, env=app_env(home)) as app:
        app.wait_for_text("Continue which? [1-2]")
        app.send("1")
        app.wait_for_prompt()
        app.line("where is the bug?")
        app.wait_for_text("invoice.py, as you said.")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        screen = app.text()
        body = server.bodies(CHAT)[-1]
    assert "1  Billing bug" in screen and "2  Older work" in screen
    assert "Continuing session Billing bug" in screen
    assert texts(body)[0] == ("user", "the bug is in invoice.py")


# ---------------------------------------------------------------- tether "REQUEST"


def test_a_request_on_the_command_line_opens_the_chat_with_it(project: Path, home: Path) -> None:
    replies = [Reply(text="Done: it is fixed."), Reply(text="Fixing it"), Reply(text="You are welcome.")]
    with FakeServer(replies) as server, \
            PtyApp(["fix it", *openai_args(server.url)], cwd=project, env=app_env(home)) as app:
        app.wait_for_text("Done: it is fixed.")
        app.wait_for_prompt()
        app.line("thanks")
        app.wait_for_text("You are welcome.")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        screen = app.text()
        bodies = server.bodies(CHAT)
    assert "› fix it" in screen
    assert texts(bodies[0]) == [("user", "fix it")]
    assert texts(bodies[-1])[-1] == ("user", "thanks")
