"""Commands that can be answered: run a shell command, notice when it waits for input.

An assistant that runs commands must never hang on a program waiting for
input. Each command runs in its own process group with a stdin pipe we keep
open. We return when the command exits, when it times out (everything it
started is stopped), or when it is blocked reading the stdin pipe we gave it;
in that last case the caller gets a session id and may answer with `send_input`.

What a command leaves running in the background (`&`, nohup, setsid) is found
through `processes.CommandProcesses` and stopped at end_process, at the
timeout and by `close_all` when tether exits, unless the command was started
with `keep_running`.

"Blocked reading our stdin" is decided from /proc on Linux: a task of any
process in the command's group (or among its descendants) that sleeps in
`read` on a descriptor that is our pipe, or in `epoll_wait` on a set that
watches our pipe for input. `/proc/PID/syscall` names the syscall and its
descriptor; `/proc/PID/wchan` is the fallback when it cannot be read. A silent
busy program (running, or sleeping in anything but a read of our pipe) is
waited out. Only when /proc tells us nothing do we fall back to guessing from
silence (`idle_fallback` seconds without output).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fcntl
import itertools
import os
import re
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ..host import host_program
from .command_output import OutputDecoder, OutputWindow
from .processes import (
    CommandProcesses,
    stop_processes,
)
from .stdin_probe import stdin_verdict

OutcomeState = Literal["exited", "waiting_for_input", "timed_out", "killed"]
QUIET_PERIOD = 0.25
"""Seconds of silence before a reader counts as waiting, so we never return mid-burst."""
POLL_INTERVAL = 0.05
SWEEP_INTERVAL = 1.0
"""Seconds between scans that remember every command's processes and reap adopted orphans."""
DRAIN_GRACE = 0.3
"""How long to wait for the rest of the output once the command has exited."""


class SessionError(KeyError):
    """An unknown session id, or no room for another live session."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass
class CommandOutcome:
    session_id: str | None
    """Set when the process is still alive (waiting for input), else None."""
    output: str
    """Output since the last call, stdout and stderr interleaved, windowed if huge."""
    exit_code: int | None
    """None while running; negative (the signal) when killed."""
    state: OutcomeState
    elapsed: float
    truncated_chars: int
    """How many characters were dropped from the middle of `output`."""
    background: int = 0
    """Processes the command left running when it exited (end_process still stops them)."""
    kept: bool = False
    """Started with keep_running: what it left running outlives tether."""


@dataclass
class Launch:
    """What is really started for one command line."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    release: Callable[[], None] = lambda: None
    """Called once the command has exited (a sandbox cleans up after it)."""


class Launcher(Protocol):
    """Turns a command line and its environment into what is started (e.g. inside a sandbox)."""

    def launch(self, argv: list[str], env: dict[str, str]) -> AbstractContextManager[Launch]: ...


@contextlib.contextmanager
def _as_it_is(argv: list[str], env: dict[str, str]) -> Iterator[Launch]:
    yield Launch(argv, env)


# ---------------------------------------------------------------- one session


class _OutputPipe(asyncio.Protocol):
    def __init__(self, session: _Session) -> None:
        self._session = session

    def data_received(self, data: bytes) -> None:
        self._session.feed(data)

    def eof_received(self) -> bool:
        self._session.finish_output()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._session.finish_output()


class _Session:
    """One running command: the process, its pipes and the output not yet handed back."""

    def __init__(self, sid: str, proc: subprocess.Popen[bytes], cap: int) -> None:
        self.id = sid
        self.proc = proc
        self.window = OutputWindow(cap)
        self.decoder = OutputDecoder()
        self.pipe_inode = os.fstat(proc.stdin.fileno()).st_ino if proc.stdin else 0
        self.last_output = time.monotonic()
        self.activity = asyncio.Event()
        self.eof = asyncio.Event()
        self.lock = asyncio.Lock()
        self.on_output: Callable[[str], None] | None = None
        self.release: Callable[[], None] = lambda: None
        self.unconfined = False
        """Started outside the launcher's confinement (run_cmd with unsandboxed: true)."""
        self.stdin: asyncio.WriteTransport | None = None
        self.stdout: asyncio.ReadTransport | None = None

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, self.proc.stdin)
        self.stdout, _ = await loop.connect_read_pipe(lambda: _OutputPipe(self), self.proc.stdout)

    def feed(self, data: bytes) -> None:
        self._emit(self.decoder.decode(data))

    def finish_output(self) -> None:
        if not self.eof.is_set():
            self._emit(self.decoder.decode(b"", final=True))
            self.eof.set()
            self.activity.set()

    def _emit(self, text: str) -> None:
        if not text:
            return
        self.last_output = time.monotonic()
        self.activity.set()
        self.window.append(text)
        if self.on_output is not None:
            try:
                self.on_output(text)
            except Exception:  # a failing viewer must not stop the command's output
                self.on_output = None

    def write(self, text: str, close: bool = False) -> None:
        if self.stdin is None or self.stdin.is_closing():
            return
        if text:
            self.stdin.write(text.encode("utf-8"))
        if close:
            self.stdin.close()

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def unread(self) -> int:
        """Bytes of output waiting in the pipe that the event loop has not read yet."""
        try:
            assert self.proc.stdout is not None
            raw = fcntl.ioctl(self.proc.stdout.fileno(), termios.FIONREAD, b"\0" * 4)
        except (OSError, ValueError, AssertionError):  # closed: nothing more to read
            return 0
        return int(struct.unpack("i", raw)[0])

    def close(self) -> None:
        for transport in (self.stdin, self.stdout):
            if transport is not None:
                transport.close()

    async def watch(self, deadline: float, idle_fallback: float) -> OutcomeState:
        """Poll until the command exits, the deadline passes, or it sits waiting for input."""
        waiting_since = time.monotonic()
        while True:
            if self.exited():
                return "exited"
            now = time.monotonic()
            if now >= deadline:
                return "timed_out"
            quiet = now - max(self.last_output, waiting_since)
            # A program blocked reading its input wrote its prompt before it blocked, but that
            # prompt may still sit in the pipe (written while /proc was being read): only once
            # the pipe is empty has the prompt been seen.
            if (
                quiet >= QUIET_PERIOD
                and self._waits_for_input(quiet, idle_fallback)
                and not self.unread()
            ):
                return "waiting_for_input"
            self.activity.clear()
            # EOF usually means the exit is a moment away: look again soon.
            pause = 0.005 if self.eof.is_set() else POLL_INTERVAL
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.activity.wait(), min(pause, deadline - now))

    def _waits_for_input(self, quiet: float, idle_fallback: float) -> bool:
        verdict = stdin_verdict(self.proc.pid, self.pipe_inode)
        if verdict == "unknown":
            return quiet >= idle_fallback
        return verdict == "reading"


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _shell(root: Path) -> str:
    return host_program("bash", root) or host_program("sh", root) or "/bin/sh"


def _environment(marker: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    # No pagers or terminal tricks, and python prompts flushed as soon as printed.
    env.update(PAGER="cat", GIT_PAGER="cat", TERM="dumb", PYTHONUNBUFFERED="1")
    env.update(marker)
    return env


# ---------------------------------------------------------------- the sessions


class ShellSessions:
    """Runs commands in `root` and keeps the ones waiting for input until answered or ended."""

    def __init__(
        self,
        root: Path,
        *,
        max_sessions: int = 4,
        output_cap: int = 30_000,
        idle_fallback: float = 2.0,
        on_output: Callable[[str], None] | None = None,
        launcher: Launcher | None = None,
    ) -> None:
        self.root = Path(root)
        self.max_sessions = max_sessions
        self.output_cap = output_cap
        self.idle_fallback = idle_fallback
        self.on_output = on_output
        self.launcher = launcher
        """Where commands run (a sandbox); None: as they are."""
        self.processes = CommandProcesses()
        self._sessions: dict[str, _Session] = {}
        self._finished: dict[str, _Session] = {}
        """Commands that exited but left processes running (or still holding the output pipe)."""
        self._sweeper: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)

    def live(self) -> list[str]:
        return list(self._sessions)

    def runs_unconfined(self, session_id: str) -> bool:
        """Whether a live session was started outside the launcher (the sandbox); looked up as
        send_input looks it up, so "1" for s1 is asked about as s1 is."""
        session = self._live(session_id)
        return session is not None and session.unconfined

    def _live(self, session_id: str) -> _Session | None:
        """The live session `session_id` names: its id, or its number ("1" for s1: small
        models write the session as its number)."""
        return self._sessions.get(session_id) or self._sessions.get(f"s{session_id.strip()}")

    async def run(
        self,
        command: str,
        *,
        stdin: str | None = None,
        timeout: float = 120,
        keep_running: bool = False,
        unconfined: bool = False,
    ) -> CommandOutcome:
        """Run `command`; return when it exits, times out, or waits for input.

        `keep_running` lets what it leaves in the background outlive tether; `unconfined`
        runs it as it is, without the launcher.
        """
        self._check_room()
        session = await self._start(command, keep_running, unconfined)
        if stdin:
            session.write(_with_newline(stdin))
        return await self._wait_for(session, timeout)

    async def send_input(
        self, session_id: str, text: str, *, timeout: float = 120, eof: bool = False
    ) -> CommandOutcome:
        """Write `text` (plus a newline) to a waiting session, then wait as `run` does.

        `eof` closes stdin afterwards, for programs that read until end of input.
        """
        session = self._get(session_id)
        session.write(_with_newline(text) if text or not eof else "", close=eof)
        return await self._wait_for(session, timeout)

    async def end(self, session_id: str) -> CommandOutcome:
        """Stop a session's command and every process it started, and hand back its last
        output. Works on a command that exited but left processes running, too."""
        session = self._finished.get(session_id) or self._get(session_id)
        started = time.monotonic()
        async with session.lock:
            running = not session.exited() or bool(self.processes.members(session.id))
            if running:
                await self._stop(session)
            self._finished.pop(session.id, None)
            return await self._conclude(session, "killed" if running else "exited", started)

    async def close_all(self) -> None:
        """Stop every command of this run and everything it left running, except what was
        started with keep_running."""
        sessions = [*self._sessions.values(), *self._finished.values()]
        self._sessions.clear()
        self._finished.clear()
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
        await asyncio.gather(*(self._close(s, spare_kept=True) for s in sessions))
        # What no command is known to own (it cleared its environment and left its session)
        # came from one of them all the same: tether adopted it as their subreaper.
        await stop_processes(self.processes.stranger_processes, self.processes.reap_adopted)

    # -------------------------------------------------------------- steps

    def _check_room(self) -> None:
        if len(self._sessions) >= self.max_sessions:
            raise SessionError(
                f"Too many live shell sessions ({len(self._sessions)} of {self.max_sessions}): "
                f"{', '.join(self._sessions)}. End one with end_process before starting another."
            )

    def _get(self, session_id: str) -> _Session:
        session = self._live(session_id)
        if session is not None:
            return session
        if session_id in self._finished:
            raise SessionError(
                f"Session '{session_id}' has exited; only what it left running in the background "
                f'is still there. end_process(session="{session_id}") stops it.'
            )
        live = ", ".join(self._sessions) or "none"
        # a command line given as the session is offered as run_cmd's command; a bare word
        # ("checkout", a file the model had in mind) is not: the model ran it as a command
        example = (f' (for example {{"command": "{session_id}"}} if that is its command line)'
                   if re.search(r"\s|\.\w+$", session_id.strip()) else "")
        start = (
            "" if self._sessions or re.fullmatch(r"s\d+", session_id) else " Start the program first with run_cmd"
            f"{example}; when it waits for input, the result names its session (s1, s2, ...) for send_input."
        )
        raise SessionError(f"No shell session '{session_id}'. Live sessions: {live}.{start}")

    async def _start(self, command: str, keep: bool, unconfined: bool = False) -> _Session:
        sid = f"s{next(self._ids)}"
        argv = [_shell(self.root), "-c", command]
        launch = _as_it_is if unconfined or self.launcher is None else self.launcher.launch
        with launch(argv, _environment(self.processes.environment(sid, keep))) as started:
            proc = subprocess.Popen(
                started.argv,
                cwd=self.root,
                env=started.env,
                pass_fds=started.pass_fds,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.started(sid, proc.pid, keep)
        session = _Session(sid, proc, self.output_cap)
        session.release = started.release
        session.unconfined = unconfined and self.launcher is not None
        self._sessions[session.id] = session
        try:
            await session.connect()
        except BaseException:
            self._sessions.pop(session.id, None)
            await self._close(session, spare_kept=False)
            raise
        self._ensure_sweeper()
        return session

    async def _wait_for(self, session: _Session, timeout: float) -> CommandOutcome:
        started = time.monotonic()
        async with session.lock:
            session.on_output = in_callers_context(self.on_output)
            try:
                state = await session.watch(started + timeout, self.idle_fallback)
                if state == "timed_out":
                    await self._stop(session)
                return await self._conclude(session, state, started)
            except asyncio.CancelledError:
                self._sessions.pop(session.id, None)
                await asyncio.shield(self._close(session, spare_kept=False))
                raise
            finally:
                session.on_output = None

    async def _conclude(
        self, session: _Session, state: OutcomeState, started: float
    ) -> CommandOutcome:
        if state == "waiting_for_input":
            output, dropped = session.window.take()
            return CommandOutcome(
                session.id, output, None, state, time.monotonic() - started, dropped
            )
        self._sessions.pop(session.id, None)
        if session.exited():
            session.release()
        await self._drain(session)
        output, dropped = session.window.take()
        background = self._settle(session)
        return CommandOutcome(
            None, output, session.proc.returncode, state, time.monotonic() - started, dropped,
            background, self.processes.kept(session.id),
        )

    async def _drain(self, session: _Session) -> None:
        """Collect the output still in the pipe (background children may hold it open)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(session.eof.wait(), DRAIN_GRACE)
        if session.eof.is_set():
            session.close()

    def _settle(self, session: _Session) -> int:
        """After the command ended: how many processes it left running. A command that left
        some (or whose pipe is still held) stays known, so end_process and exit can stop them;
        reading on spares a background writer a broken pipe."""
        left = len(self.processes.members(session.id, leader=False))
        if left or not session.eof.is_set():
            self._finished[session.id] = session
        else:
            self.processes.forget(session.id)
        return left

    # -------------------------------------------------------------- stopping and sweeping

    async def _stop(self, session: _Session) -> None:
        """SIGTERM the command and everything it started, SIGKILL what is left after a grace."""
        def reap() -> None:
            session.proc.poll()
            self.processes.reap_adopted()

        await stop_processes(lambda: self.processes.members(session.id), reap)

    async def _close(self, session: _Session, *, spare_kept: bool) -> None:
        if not (spare_kept and self.processes.kept(session.id)):
            await self._stop(session)
        if session.exited():
            session.release()
        session.close()
        self.processes.forget(session.id)

    def _ensure_sweeper(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_while_tracked())

    async def _sweep_while_tracked(self) -> None:
        """Remember each command's processes, reap adopted orphans, forget finished commands
        once nothing of theirs is left."""
        while self.processes.tracked():
            await asyncio.sleep(SWEEP_INTERVAL)
            living = self.processes.sweep()
            for sid, session in list(self._finished.items()):
                if not living.get(sid) and session.eof.is_set():
                    del self._finished[sid]
                    session.close()
                    self.processes.forget(sid)


def in_callers_context(viewer: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """`viewer` run in the context of the call now waiting for the output (the pipe's callbacks
    run in the context the session was opened in, maybe by another call): whoever shows the
    output can tell whose it is."""
    if viewer is None:
        return None
    context = contextvars.copy_context()
    return lambda text: context.run(viewer, text)
