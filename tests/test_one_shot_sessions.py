"""Scripts continue sessions and pipes behave: `-c`/`-r` with `-p` (in a subprocess), `-c` in
the chat (in a pty) showing where the conversation left off, and a chat whose stdin is a pipe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args

from tether.core.messages import Message, Text
from tether.engine.prompts import CONTEXT_END
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


def said(text: str) -> Message:
    return Message("assistant", [Text(text)])


def texts(body: dict) -> list[tuple[str, str]]:
    """The conversation's messages, the first without the project context that opens it."""
    sent = [(m["role"], m.get("content") or "") for m in body["messages"] if m["role"] != "system"]
    if sent:
        sent[0] = (sent[0][0], without_context(sent[0][1]))
    return sent


def without_context(text: str) -> str:
    context, heading, request = text.partition(f"\n\n{CONTEXT_END}\n")
    return request if heading else context


# ---------------------------------------------------------------- -c and -r with -p


def test_continue_with_print_carries_the_conversation_and_saves_it(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="Noted: the port is 8080."), Reply(text="It was 8080.")]) as server:
        first = run_cli(["-p", "remember port 8080", "-c", *openai_args(server.url)], project, home)
        second = run_cli(["-p", "which port?", "-c", *openai_args(server.url)], project, home)
        bodies = server.bodies(CHAT)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "No earlier session for this folder; starting a new one." in first.stderr
    assert texts(bodies[-1]) == [("user", "remember port 8080"), ("assistant", "Noted: the port is 8080."),
                                 ("user", "which port?")]
    [saved] = SessionStore(home).list(project)
    assert saved.messages == 4
    assert second.stdout == "It was 8080.\n"


def test_resume_with_print_continues_the_named_session(project: Path, home: Path) -> None:
    store = SessionStore(home)
    record = store.new(project, "openai", "fake")
    record.title = "Billing bug"
    record.messages = [Message.user("the bug is in invoice.py"), said("Understood.")]
    store.save(record)
    other = store.new(project, "openai", "fake")  # newer: -c would pick it, -r must not
    other.messages = [Message.user("unrelated"), said("ok")]
    store.save(other)
    with FakeServer([Reply(text="invoice.py, as you said.")]) as server:
        proc = run_cli(["-p", "where is the bug?", "-r", "billing", "--output-format", "json",
                        *openai_args(server.url)], project, home)
        body = server.bodies(CHAT)[-1]
    assert proc.returncode == 0, proc.stderr
    assert texts(body)[0] == ("user", "the bug is in invoice.py")
    assert json.loads(proc.stdout)["result"] == "invoice.py, as you said."
    assert len(store.load(record.id).messages) == 4
    assert len(store.load(other.id).messages) == 2


def test_resume_of_a_session_that_does_not_exist_is_a_usage_error(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="never asked")]) as server:
        proc = run_cli(["-p", "hi", "-r", "nosuch", *openai_args(server.url)], project, home)
        asked = server.bodies(CHAT)
    assert proc.returncode == 2
    assert "No session matches 'nosuch'" in proc.stderr and "Traceback" not in proc.stderr
    assert not asked


def test_a_failed_request_still_saves_the_request_to_the_session(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="The first half of an answer", chunk_size=5, drop_after=4)]) as server:
        proc = run_cli(["-p", "explain", "-c", *openai_args(server.url)], project, home)
    assert proc.returncode == 1
    [saved] = SessionStore(home).list(project)
    assert saved.messages >= 1  # the request is not lost: a later -c can retry it


# ---------------------------------------------------------------- -c in the chat


def long_session(store: SessionStore, project: Path) -> str:
    record = store.new(project, "openai", "fake")
    record.title = "Refactor"
    for n in range(16):
        record.messages += [Message.user(f"request number {n}"), said(f"answer number {n}")]
    record.messages.append(Message.user("request number 16"))
    store.save(record)
    return record.id


def test_continue_in_the_chat_shows_the_last_exchanges_and_the_context_in_use(
    project: Path, home: Path
) -> None:
    long_session(SessionStore(home), project)
    with FakeServer() as server, PtyApp(openai_args(server.url, "-c"), cwd=project,
                                        env=app_env(home)) as app:
        app.wait_for_prompt()
        screen = app.wait_for(lambda text: "profile  │  context" in text, what="the status line")
        app.ctrl_d()
        assert app.wait_exit() == 0
    assert "Continuing session Refactor (33 messages)" in screen
    assert "› request number 14" in screen and "answer number 14" in screen
    assert "› request number 16" in screen
    assert "request number 13" not in screen  # only the last few exchanges
    assert "context empty" not in screen
    assert "context ~" in screen


# ---------------------------------------------------------------- pipes


def test_a_chat_whose_stdin_is_a_pipe_runs_the_piped_text_as_one_request(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="Paris.")]) as server:
        proc = run_cli(openai_args(server.url), project, home, stdin="capital of France?\n")
        bodies = server.bodies(CHAT)
    assert proc.returncode == 0, proc.stderr
    assert texts(bodies[-1]) == [("user", "capital of France?")]
    assert proc.stdout == "Paris.\n"
    assert "stdin is not a terminal" in proc.stderr and "tether -p -" in proc.stderr


@pytest.mark.parametrize(("stdin", "says"), [
    ("", "held no request"),
    ("/help\n", "/help: slash commands work in the chat only"),
])
def test_a_piped_chat_without_a_request_is_a_usage_error(
    project: Path, home: Path, stdin: str, says: str
) -> None:
    with FakeServer([Reply(text="never asked")]) as server:
        proc = run_cli(openai_args(server.url), project, home, stdin=stdin)
        asked = server.bodies(CHAT)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert not asked


def test_ctrl_c_after_the_reader_left_ends_quietly(project: Path, home: Path) -> None:
    # `tether -p ... --output-format stream-json | head`: Ctrl-C reaches both, the reader goes first.
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "TETHER"))}
    environment.update(TETHER_HOME=str(home), OPENAI_API_KEY="k", TETHER_PROFILE="full")
    with FakeServer([Reply(text="slow " * 2000, chunk_size=5, delay=0.05)]) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether", "-p", "hi", "--output-format", "stream-json",
             *openai_args(server.url)],
            cwd=project, env=environment, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        try:
            line = b"{}"
            while line and b'"type": "text"' not in line:
                line = proc.stdout.readline()
            assert line, "the stream ended before any text"
            proc.stdout.close()
            proc.send_signal(signal.SIGINT)
            err = proc.stderr.read().decode()
            code = proc.wait(timeout=60)
        finally:
            proc.kill()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert code == 128 + signal.SIGPIPE, err
