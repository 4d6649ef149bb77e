"""`tether -p` in text mode says how it ended: the answer streams on a terminal, Ctrl-C keeps
the partial answer with a note, the step cap and a cut-off reply are told on stderr, and a
run without an answer does not leave stdout empty. Real subprocesses; a real pty where the
answer must be seen as it arrives."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

from fakeserver import FakeServer, Reply
from test_cli import openai_args, run_cli

HEAD, TAIL = "Partial-answer-here|", "Final-tail"
"""One chunk each: the server holds the tail until the test lets it go."""


def held_reply(gate: threading.Event) -> Reply:
    # Frames: the role-only one, HEAD, then (held) TAIL.
    return Reply(text=HEAD + TAIL, chunk_size=len(HEAD), gate=gate, gate_after=2)


class OnATerminal:
    """`tether -p` with stdout on a pseudo-terminal (read here) and stderr on a pipe."""

    def __init__(self, args: list[str], cwd: Path, home: Path) -> None:
        self.leader, follower = os.openpty()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "TETHER"))}
        env.update(TETHER_HOME=str(home), OPENAI_API_KEY="k", TETHER_PROFILE="full")
        self.proc = subprocess.Popen([sys.executable, "-m", "tether", *args], cwd=cwd, env=env,
                                     stdin=subprocess.DEVNULL, stdout=follower,
                                     stderr=subprocess.PIPE, text=True)
        os.close(follower)
        self.seen = b""

    def read_until(self, needle: str, timeout: float = 60) -> str:
        """Read stdout until `needle` shows; the timeout only catches a hang."""
        while needle.encode() not in self.seen:
            ready, _, _ = select.select([self.leader], [], [], timeout)
            assert ready, f"no {needle!r} on stdout: {self.seen!r}"
            self.seen += self._read()
        return self.seen.decode()

    def finish(self) -> tuple[int, str, str]:
        """(exit status, all of stdout, all of stderr)."""
        err = self.proc.communicate(timeout=60)[1]
        while chunk := self._read():
            self.seen += chunk
        os.close(self.leader)
        return self.proc.returncode, self.seen.decode().replace("\r\n", "\n"), err

    def _read(self) -> bytes:
        try:
            return os.read(self.leader, 65536)
        except OSError:  # the other end closed
            return b""


def test_on_a_terminal_the_answer_streams_as_it_arrives(project: Path, home: Path) -> None:
    gate = threading.Event()
    with FakeServer([held_reply(gate)]) as server:
        run = OnATerminal(["-p", "hi", *openai_args(server)], project, home)
        shown = run.read_until(HEAD)
        assert TAIL not in shown  # the server still holds it: this part came as it arrived
        gate.set()
        code, out, err = run.finish()
    assert code == 0, err
    assert out == HEAD + TAIL + "\n"  # once, and ended with a newline


def test_ctrl_c_keeps_the_partial_answer_and_says_so(project: Path, home: Path) -> None:
    gate = threading.Event()  # never set: the answer stays partial
    with FakeServer([held_reply(gate)]) as server:
        run = OnATerminal(["-p", "hi", *openai_args(server)], project, home)
        run.read_until(HEAD)
        run.proc.send_signal(signal.SIGINT)
        code, out, err = run.finish()
    assert code == 130, err
    assert out == HEAD + "\n"
    assert "interrupted: the answer above is incomplete" in err and "Traceback" not in err


def test_the_step_cap_is_told_and_a_call_only_reply_leaves_stdout_not_empty(
    project: Path, home: Path
) -> None:
    with FakeServer() as server:
        server.default_reply = Reply(tool_calls=[("list_dir", {"path": "."})])
        proc = run_cli(["-p", "loop", "--max-steps", "2", *openai_args(server)], project, home)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.startswith("(no answer: the step cap was reached")
    notes = [line for line in proc.stderr.splitlines() if "step cap" in line]
    assert "asked for list_dir instead of answering" in notes[0]
    assert notes[-1] == ("stopped at the step cap (2 steps): the answer may be incomplete; "
                         "--max-steps raises the cap")


def test_an_empty_last_reply_is_told_on_stdout_instead_of_a_blank(
    project: Path, home: Path
) -> None:
    script = [Reply(tool_calls=[("list_dir", {"path": "."})]), Reply(text="")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "look", *openai_args(server)], project, home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("(no answer: the model ended its turn with an empty reply; "
                           "it made 1 tool call(s))\n")


def test_a_reply_cut_off_at_the_token_limit_is_flagged(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="The list goes on and", finish_reason="length")]) as server:
        proc = run_cli(["-p", "list", *openai_args(server)], project, home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The list goes on and\n"  # a pipe gets exactly the answer
    assert "cut off at the output token limit" in proc.stderr


def test_a_command_line_shows_one_duration(project: Path, home: Path) -> None:
    script = [Reply(tool_calls=[("run_cmd", {"command": "true"})]), Reply(text="ok")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "run it", "--auto", "--sandbox", "off", *openai_args(server)],
                       project, home)
    outcome = next(line for line in proc.stderr.splitlines() if "✓ exit 0" in line)
    assert len(re.findall(r"\d+\.\ds", outcome)) == 1, outcome


def test_ctrl_c_in_a_pipeline_ends_the_stream_with_the_result_object(
    project: Path, home: Path
) -> None:
    # `tether -p ... --output-format stream-json | cat`, SIGINT to tether alone: the reader
    # stays, so the stream must still end with a result object (the partial run's) and 130.
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "TETHER"))}
    env.update(TETHER_HOME=str(home), OPENAI_API_KEY="k", TETHER_PROFILE="full")
    gate = threading.Event()  # never set: the answer stays partial
    with FakeServer([held_reply(gate)]) as server:
        tether = subprocess.Popen(
            [sys.executable, "-m", "tether", "-p", "hi", "--output-format", "stream-json",
             *openai_args(server)],
            cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        assert tether.stdout is not None and tether.stderr is not None
        cat = subprocess.Popen(["cat"], stdin=tether.stdout, stdout=subprocess.PIPE)
        tether.stdout.close()  # cat holds the pipe now, as a shell's pipeline does
        assert cat.stdout is not None
        try:
            lines = []
            while not lines or HEAD not in lines[-1]:
                line = cat.stdout.readline().decode()
                assert line, f"the stream ended before the partial answer: {lines}"
                lines.append(line)
            tether.send_signal(signal.SIGINT)
            lines += cat.stdout.read().decode().splitlines(keepends=True)
            err = tether.stderr.read().decode()
            code = tether.wait(timeout=60)
            assert cat.wait(timeout=60) == 0
        finally:
            tether.kill()
            cat.kill()
    assert code == 130, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    events = [json.loads(line) for line in lines]
    result = events[-1]
    assert result["type"] == "result" and result["stop_reason"] == "cancelled", result
    assert result["is_error"] is True and result["result"] == "interrupted"
    assert [e for e in events if e["type"] == "result"] == [result]  # one, at the end
    streamed = "".join(e.get("text", "") for e in events if e["type"] == "text")
    assert streamed.startswith(HEAD) and TAIL not in streamed
