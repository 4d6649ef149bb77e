"""ShellSessions against real subprocesses: prompts, silence, runaway output, killing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st
from leftovers import BACKGROUND_FORMS, gone, pid_written
from waiting import until, wait_until

from tether.safety import shell_session, stdin_probe
from tether.safety.shell_session import (
    OutputDecoder,
    OutputWindow,
    SessionError,
    ShellSessions,
    stdin_verdict,
)

PY = sys.executable
PROMPT = f"{PY} -c \"name=input('name? '); print('hi', name)\""
linux_only = pytest.mark.skipif(not stdin_probe.proc_usable(), reason="needs /proc")


@pytest.fixture
async def sessions(tmp_path: Path):
    shells = ShellSessions(tmp_path)
    yield shells
    await shells.close_all()


def pids_in(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"^\d+$", text, re.MULTILINE)]


# ---------------------------------------------------------------- prompts


@linux_only
async def test_prompt_waits_then_answer_finishes(sessions: ShellSessions) -> None:
    first = await sessions.run(PROMPT, timeout=10)
    assert first.state == "waiting_for_input"
    assert first.session_id == "s1" and first.exit_code is None
    assert "name? " in first.output
    assert sessions.live() == ["s1"]

    second = await sessions.send_input("s1", "bob")
    assert second.state == "exited" and second.exit_code == 0
    assert "hi bob" in second.output and "name?" not in second.output
    assert second.session_id is None
    assert sessions.live() == []


@linux_only
async def test_stdin_given_up_front_answers_prompts(sessions: ShellSessions) -> None:
    outcome = await sessions.run('read a; read b; echo "$a-$b"', stdin="x\ny", timeout=10)
    assert outcome.state == "exited"
    assert outcome.output == "x-y\n"


@linux_only
async def test_stdin_stays_open_for_later_questions(sessions: ShellSessions) -> None:
    outcome = await sessions.run('read a; echo "got $a"; read b; echo "$a-$b"', stdin="x")
    assert outcome.state == "waiting_for_input"
    assert "got x" in outcome.output
    final = await sessions.send_input(outcome.session_id or "", "y\n")
    assert final.output == "x-y\n"


@linux_only
async def test_eof_closes_input_for_programs_that_read_to_the_end(
    sessions: ShellSessions,
) -> None:
    outcome = await sessions.run("sort", stdin="pear\napple")
    assert outcome.state == "waiting_for_input"
    final = await sessions.send_input(outcome.session_id or "", "fig", eof=True)
    assert final.state == "exited"
    assert final.output == "apple\nfig\npear\n"


@linux_only
@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
async def test_prompt_read_through_epoll_is_seen(sessions: ShellSessions) -> None:
    script = (
        "const rl=require('readline').createInterface({input:process.stdin,"
        "output:process.stdout}); rl.question('color? ', a=>{console.log('got '+a); process.exit(0)})"
    )
    first = await sessions.run(f'node -e "{script}"', timeout=20)
    assert first.state == "waiting_for_input" and "color? " in first.output
    second = await sessions.send_input(first.session_id or "", "red")
    assert second.state == "exited" and "got red" in second.output


@linux_only
async def test_prompt_still_in_the_pipe_when_proc_says_reading_is_returned(
    sessions: ShellSessions, monkeypatch
) -> None:
    """The program writes its prompt and blocks reading while /proc is being read (a slow
    scan under load): the prompt is still in the pipe, unread, and must not be lost."""
    real = shell_session.stdin_verdict

    def slow_scan(leader: int, inode: int) -> str:
        # Blocking on purpose: the event loop cannot read the prompt meanwhile.
        wait_until(lambda: real(leader, inode) == "reading", "the command to block reading")
        return real(leader, inode)

    monkeypatch.setattr(shell_session, "stdin_verdict", slow_scan)
    outcome = await sessions.run("sleep 0.5; printf 'color? '; read -r x", timeout=20)
    assert outcome.state == "waiting_for_input"
    assert outcome.output == "color? "


# ---------------------------------------------------------------- silence is not a prompt


async def test_silent_sleep_is_waited_out(sessions: ShellSessions) -> None:
    outcome = await sessions.run("sleep 2; echo awake", timeout=10)
    assert outcome.state == "exited"
    assert outcome.output == "awake\n"
    assert outcome.elapsed >= 1.9


async def test_busy_silent_loop_is_waited_out(sessions: ShellSessions) -> None:
    code = "import time; t=time.time()\nwhile time.time()-t<1.5: pass\nprint('done')"
    outcome = await sessions.run(f'{PY} -c "{code}"', timeout=10)
    assert outcome.state == "exited" and outcome.exit_code == 0
    assert outcome.output == "done\n"


@linux_only
async def test_sleeping_process_is_not_reading_stdin(sessions: ShellSessions) -> None:
    task = asyncio.create_task(sessions.run("sleep 1", timeout=5))
    await asyncio.sleep(0.3)
    session = sessions._sessions["s1"]
    assert stdin_verdict(session.proc.pid, session.pipe_inode) == "not_reading"
    assert (await task).state == "exited"


async def test_idle_fallback_when_proc_is_unusable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(stdin_probe, "proc_usable", lambda: False)
    shells = ShellSessions(tmp_path, idle_fallback=0.5)
    try:
        started = time.monotonic()
        outcome = await shells.run("echo ready; read x; echo $x", timeout=10)
        assert outcome.state == "waiting_for_input" and outcome.output == "ready\n"
        assert time.monotonic() - started >= 0.5
        final = await shells.send_input(outcome.session_id or "", "on")
        assert final.output == "on\n"
    finally:
        await shells.close_all()


# ---------------------------------------------------------------- exit, output, environment


async def test_exit_code_cwd_and_environment(tmp_path: Path, sessions: ShellSessions) -> None:
    outcome = await sessions.run('pwd; echo "$PAGER $GIT_PAGER $TERM"; echo oops >&2; exit 3')
    assert outcome.state == "exited" and outcome.exit_code == 3
    assert outcome.output.splitlines() == [str(tmp_path), "cat cat dumb", "oops"]


async def test_runaway_printer_times_out_with_bounded_output(tmp_path: Path) -> None:
    seen = [0]
    shells = ShellSessions(
        tmp_path, output_cap=10_000, on_output=lambda c: seen.__setitem__(0, seen[0] + len(c))
    )
    rss_before = psutil.Process().memory_info().rss
    try:
        outcome = await shells.run("yes", timeout=2)
    finally:
        await shells.close_all()
    assert outcome.state == "timed_out"
    assert outcome.session_id is None and shells.live() == []
    assert outcome.truncated_chars > 0
    assert len(outcome.output) <= 10_000 + 100
    assert outcome.output.startswith("y\ny\n") and outcome.output.endswith("y\n")
    assert f"[... {outcome.truncated_chars} characters omitted ...]" in outcome.output
    assert seen[0] >= outcome.truncated_chars  # everything streamed live, little kept
    assert psutil.Process().memory_info().rss - rss_before < 200 * 1024 * 1024


async def test_timeout_kills_every_child(sessions: ShellSessions) -> None:
    outcome = await sessions.run("sleep 100 & echo $!; sleep 100 & echo $!; wait", timeout=1)
    assert outcome.state == "timed_out"
    children = pids_in(outcome.output)
    assert len(children) == 2
    assert all(gone(pid) for pid in children)


async def test_child_in_its_own_session_is_killed_too(sessions: ShellSessions) -> None:
    command = f'{PY} -c "import os,time; os.setsid(); print(os.getpid(), flush=True); time.sleep(100)" & wait'
    outcome = await sessions.run(command, timeout=1)
    assert outcome.state == "timed_out"
    (pid,) = pids_in(outcome.output)
    assert gone(pid)


async def test_background_child_does_not_hold_the_command(sessions: ShellSessions) -> None:
    # Held by its child, the command would run into its timeout (the child sleeps longer).
    outcome = await sessions.run("sleep 1000 & echo $!; echo started", timeout=60)
    assert outcome.state == "exited"
    (pid,) = pids_in(outcome.output)
    assert not gone(pid)
    await sessions.close_all()
    assert gone(pid)


# ---------------------------------------------------------------- what commands leave behind

needs_setsid = pytest.mark.skipif(shutil.which("setsid") is None, reason="setsid not installed")


def for_each_form(test):  # noqa: ANN001, ANN201
    """Run `test` once per background form (where /proc and setsid exist)."""
    return linux_only(needs_setsid(pytest.mark.parametrize("form", list(BACKGROUND_FORMS))(test)))


def background(form: str, tmp_path: Path) -> tuple[str, Path]:
    pidfile = tmp_path / f"{form.replace(' ', '_')}.pid"
    return BACKGROUND_FORMS[form].format(pid=pidfile), pidfile


def stop_stray(pid: int) -> None:
    """Clean up after a test that leaves a process running on purpose."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(psutil.Error):
        psutil.Process(pid).wait(10)


@for_each_form
async def test_background_processes_live_on_until_the_sessions_close(
    form: str, tmp_path: Path, sessions: ShellSessions
) -> None:
    command, pidfile = background(form, tmp_path)
    outcome = await sessions.run(command, timeout=20)
    pid = pid_written(pidfile)
    assert outcome.state == "exited" and outcome.exit_code == 0
    assert outcome.background == 1 and not outcome.kept
    assert not gone(pid)
    await sessions.close_all()
    assert gone(pid)


@for_each_form
async def test_timeout_stops_what_the_command_left_in_the_background(
    form: str, tmp_path: Path, sessions: ShellSessions
) -> None:
    command, pidfile = background(form, tmp_path)
    outcome = await sessions.run(f"{command}; sleep 100", timeout=1)
    assert outcome.state == "timed_out"
    assert gone(pid_written(pidfile))


@for_each_form
async def test_end_stops_what_a_waiting_command_left_in_the_background(
    form: str, tmp_path: Path, sessions: ShellSessions
) -> None:
    command, pidfile = background(form, tmp_path)
    first = await sessions.run(f"{command}; read x", timeout=20)
    assert first.state == "waiting_for_input"
    pid = pid_written(pidfile)
    ended = await sessions.end(first.session_id or "")
    assert ended.state == "killed" and gone(pid)


@linux_only
@needs_setsid
async def test_end_stops_what_an_exited_command_left_running(
    tmp_path: Path, sessions: ShellSessions
) -> None:
    command, pidfile = background("setsid -f", tmp_path)
    outcome = await sessions.run(command, timeout=20)
    assert outcome.state == "exited" and outcome.background == 1
    pid = pid_written(pidfile)
    with pytest.raises(SessionError, match="has exited.*end_process"):
        await sessions.send_input("s1", "hello")
    ended = await sessions.end("s1")
    assert ended.state == "killed" and gone(pid)
    with pytest.raises(SessionError, match="No shell session 's1'"):
        await sessions.end("s1")


@linux_only
@needs_setsid
@pytest.mark.parametrize("form", ["env -i setsid -f", "double fork, empty environment"])
async def test_end_of_one_session_leaves_the_others_processes_alone(
    form: str, tmp_path: Path, sessions: ShellSessions
) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    theirs.mkdir()
    first_command, first_pidfile = background(form, mine)
    first = await sessions.run(f"{first_command}; read x", timeout=20)
    first_pid = pid_written(first_pidfile)
    second_command, second_pidfile = background(form, theirs)
    second = await sessions.run(f"{second_command}; read x", timeout=20)
    second_pid = pid_written(second_pidfile)
    assert first.state == second.state == "waiting_for_input"
    ended = await sessions.end(first.session_id or "")
    assert ended.state == "killed" and gone(first_pid)
    assert not gone(second_pid), "ending one session stopped another's process"
    await sessions.end(second.session_id or "")
    assert gone(second_pid)


@linux_only
@needs_setsid
async def test_orphans_are_adopted_and_reaped(tmp_path: Path, sessions: ShellSessions) -> None:
    """tether is their subreaper: an orphan becomes its child, and is reaped when it ends."""
    fifo, pidfile = tmp_path / "release", tmp_path / "orphan.pid"
    os.mkfifo(fifo)
    command = f"setsid -f sh -c 'echo $$ > {pidfile}; read x < {fifo}' >/dev/null 2>&1"
    assert (await sessions.run(command, timeout=20)).state == "exited"
    pid = pid_written(pidfile)
    assert psutil.Process(pid).ppid() == os.getpid()
    with open(fifo, "w"):  # opening and closing the FIFO lets the orphan's read end
        pass
    await until(lambda: not psutil.pid_exists(pid), f"the orphan {pid} to be reaped, not left a zombie")


@linux_only
@needs_setsid
async def test_keep_running_outlives_the_sessions(tmp_path: Path, sessions: ShellSessions) -> None:
    command, pidfile = background("setsid -f", tmp_path)
    outcome = await sessions.run(command, timeout=20, keep_running=True)
    pid = pid_written(pidfile)
    try:
        assert outcome.background == 1 and outcome.kept
        await sessions.close_all()
        assert not gone(pid)
    finally:
        stop_stray(pid)


@linux_only
async def test_processes_marked_by_another_run_are_left_alone(
    tmp_path: Path, sessions: ShellSessions
) -> None:
    marker = sessions.processes.environment("s1")
    (name, value), = marker.items()
    others = [
        subprocess.Popen(["sleep", "100"], env={**os.environ, name: "0123456789abcdef.s1"}),
        subprocess.Popen(["sleep", "100"], env={**os.environ, name: value + "x"}),
    ]
    try:
        command, pidfile = background("ampersand", tmp_path)
        await sessions.run(command, timeout=20)
        await sessions.close_all()
        assert gone(pid_written(pidfile))
        assert all(p.poll() is None for p in others)
    finally:
        for proc in others:
            proc.kill()
            proc.wait()


async def test_non_utf8_output_is_decoded(sessions: ShellSessions) -> None:
    outcome = await sessions.run(r"printf 'caf\351 ok\n'; printf 'na\303\257ve\n'")
    assert outcome.state == "exited"
    lines = outcome.output.splitlines()
    assert lines[0].startswith("caf") and lines[0].endswith(" ok")
    assert lines[1] == "naïve"


# ---------------------------------------------------------------- sessions


@linux_only
async def test_max_sessions_and_end(tmp_path: Path) -> None:
    shells = ShellSessions(tmp_path, max_sessions=2)
    try:
        for _ in range(2):
            assert (await shells.run("read x")).state == "waiting_for_input"
        with pytest.raises(SessionError) as err:
            await shells.run("echo no room")
        assert "s1, s2" in str(err.value) and "end_process" in str(err.value)

        pid = shells._sessions["s1"].proc.pid
        ended = await shells.end("s1")
        assert ended.state == "killed" and ended.exit_code is not None and ended.exit_code < 0
        assert gone(pid) and shells.live() == ["s2"]
        assert (await shells.run("echo room")).output == "room\n"
    finally:
        await shells.close_all()


async def test_unknown_session_lists_live_ones(sessions: ShellSessions) -> None:
    with pytest.raises(KeyError) as err:
        await sessions.send_input("s9", "hello")
    assert str(err.value) == "No shell session 's9'. Live sessions: none."
    with pytest.raises(SessionError):
        await sessions.end("s9")


async def test_a_command_line_given_as_the_session_says_to_start_it_with_run_cmd(sessions: ShellSessions) -> None:
    with pytest.raises(SessionError) as err:
        await sessions.send_input("python guess.py", "10")
    assert "Start the program first with run_cmd" in str(err.value)
    assert '{"command": "python guess.py"}' in str(err.value)


async def test_a_bare_word_given_as_the_session_is_offered_as_no_command(sessions: ShellSessions) -> None:
    """rename_function (s9-f): send_input to session "checkout" was told to try run_cmd
    {"command": "checkout"}, and the model ran `checkout` three times."""
    with pytest.raises(SessionError) as err:
        await sessions.send_input("checkout", "compute_order_total")
    assert "Start the program first with run_cmd; when it waits" in str(err.value)
    assert '"command"' not in str(err.value)


@linux_only
async def test_close_all_kills_waiting_sessions(sessions: ShellSessions) -> None:
    await sessions.run("read x")
    pid = sessions._sessions["s1"].proc.pid
    await sessions.close_all()
    assert sessions.live() == [] and gone(pid)


async def test_cancellation_kills_the_group(sessions: ShellSessions) -> None:
    printed: list[str] = []
    sessions.on_output = printed.append
    task = asyncio.create_task(sessions.run("sleep 100 & echo $!; wait", timeout=30))
    for _ in range(100):
        if pids_in("".join(printed)):
            break
        await asyncio.sleep(0.05)
    (child,) = pids_in("".join(printed))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(child)
    assert sessions.live() == []


# ---------------------------------------------------------------- the pieces


@given(st.lists(st.text(max_size=300), max_size=40), st.integers(min_value=2, max_value=500))
def test_output_window_keeps_head_and_tail_within_cap(chunks: list[str], cap: int) -> None:
    window = OutputWindow(cap)
    for chunk in chunks:
        window.append(chunk)
    whole = "".join(chunks)
    text, dropped = window.take()
    if dropped == 0:
        assert text == whole
    else:
        assert len(whole) - dropped <= cap
        head, tail = text.split(f"\n[... {dropped} characters omitted ...]\n")
        assert whole.startswith(head) and whole.endswith(tail)
        assert len(head) + len(tail) + dropped == len(whole)
    assert window.take() == ("", 0)


def test_decoder_joins_split_characters_and_survives_bad_bytes() -> None:
    decoder = OutputDecoder()
    data = "żółw\n".encode()
    assert decoder.decode(data[:1]) + decoder.decode(data[1:]) == "żółw\n"
    text = decoder.decode(b"caf\xe9\n")
    assert text.startswith("caf") and text.endswith("\n")
    assert decoder.decode("ok ✓".encode()) == "ok ✓"


def test_session_error_reads_cleanly() -> None:
    assert str(SessionError("No shell session 'x'.")) == "No shell session 'x'."
