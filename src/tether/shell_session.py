"""Commands that can be answered: run a shell command, notice when it waits for input.

An assistant that runs commands must never hang on a program waiting for
input. Each command runs in its own process group with a stdin pipe we keep
open. We return when the command exits, when it times out (the whole group
is killed), or when it is blocked reading the stdin pipe we gave it; in that
last case the caller gets a session id and may answer with `send_input`.

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
import codecs
import contextlib
import itertools
import locale
import os
import platform
import shutil
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psutil

OutcomeState = Literal["exited", "waiting_for_input", "timed_out", "killed"]
Verdict = Literal["reading", "not_reading", "unknown"]

QUIET_PERIOD = 0.25
"""Seconds of silence before a reader counts as waiting, so we never return mid-burst."""
POLL_INTERVAL = 0.05
KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL."""
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


# ---------------------------------------------------------------- output


class OutputWindow:
    """A bounded record of output: the head and the tail kept, the middle counted and dropped.

    The tail gets the larger share because that is where errors and results land.
    """

    def __init__(self, cap: int) -> None:
        self._head_cap = max(cap // 3, 0)
        self._tail_cap = max(cap - self._head_cap, 1)
        self._head = ""
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.dropped = 0

    def append(self, text: str) -> None:
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            self._trim_tail()

    def _trim_tail(self) -> None:
        while self._tail_len - len(self._tail[0]) >= self._tail_cap:
            first = self._tail.popleft()
            self._tail_len -= len(first)
            self.dropped += len(first)
        excess = self._tail_len - self._tail_cap
        if excess > 0:
            self._tail[0] = self._tail[0][excess:]
            self._tail_len -= excess
            self.dropped += excess

    def take(self) -> tuple[str, int]:
        """The text so far (with a marker where the middle was dropped) and the dropped count; resets."""
        tail = "".join(self._tail)
        dropped = self.dropped
        if dropped:
            text = f"{self._head}\n[... {dropped} characters omitted ...]\n{tail}"
        else:
            text = self._head + tail
        self._head, self._tail, self._tail_len, self.dropped = "", deque(), 0, 0
        return text, dropped


class OutputDecoder:
    """UTF-8 first, incrementally; a chunk that is not UTF-8 is read in the locale's encoding."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self._fallback = locale.getpreferredencoding(False) or "latin-1"

    def decode(self, data: bytes, final: bool = False) -> str:
        pending, _ = self._utf8.getstate()
        try:
            return self._utf8.decode(data, final)
        except UnicodeDecodeError:
            self._utf8.reset()
            return (pending + data).decode(self._fallback, errors="replace")


# ---------------------------------------------------------------- /proc probing

# Syscall numbers of read(2)/readv(2) and epoll_wait(2)/epoll_pwait(2)/epoll_pwait2(2).
_SYSCALLS = {
    "x86_64": ({0, 19}, {232, 281, 441}),
    "aarch64": ({63, 65}, {22, 441}),
    "riscv64": ({63, 65}, {22, 441}),
}
_ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
# Kernel functions a task sleeps in while reading a pipe (or polling for it).
_READ_WCHANS = {
    "pipe_read", "anon_pipe_read", "pipe_wait", "pipe_wait_readable", "wait_woken",
    "do_select", "core_sys_select", "do_sys_poll", "ep_poll", "do_epoll_wait",
}  # fmt: skip
_PROC = Path("/proc")


def _syscall_table() -> tuple[set[int], set[int]] | None:
    machine = platform.machine().lower()
    return _SYSCALLS.get(_ARCH_ALIASES.get(machine, machine))


def proc_usable() -> bool:
    return (_PROC / "self" / "stat").exists()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _stat_fields(text: str) -> list[str]:
    """The fields after `comm` (which may hold spaces and parentheses): state, ppid, pgrp, ..."""
    return text[text.rfind(")") + 2 :].split()


def process_family(leader: int) -> set[int]:
    """The leader, every process in its group and every descendant (a child may start its own group)."""
    children: dict[int, list[int]] = {}
    family = {leader}
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        text = _read(Path(entry.path) / "stat")
        fields = _stat_fields(text) if text else []
        if len(fields) < 3:
            continue
        pid, ppid, pgrp = int(entry.name), int(fields[1]), int(fields[2])
        children.setdefault(ppid, []).append(pid)
        if pgrp == leader:
            family.add(pid)
    todo = list(family)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in family:
                family.add(child)
                todo.append(child)
    return family


def _fds_on_pipe(pid: int, pipe_link: str) -> set[int] | None:
    """This process's descriptors that are our stdin pipe; None when its fd table is unreadable."""
    fd_dir = _PROC / str(pid) / "fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    fds = set()
    for name in names:
        with contextlib.suppress(OSError):
            if os.readlink(fd_dir / name) == pipe_link:
                fds.add(int(name))
    return fds


def _epoll_watches_input(pid: int, epfd: int, fds: set[int]) -> bool:
    """Whether the epoll set `epfd` waits for input (EPOLLIN) on one of `fds`."""
    info = _read(_PROC / str(pid) / "fdinfo" / str(epfd)) or ""
    for line in info.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "tfd:" and parts[2] == "events:":
            with contextlib.suppress(ValueError):
                if int(parts[1]) in fds and int(parts[3], 16) & 0x1:
                    return True
    return False


def _hex(text: str) -> int:
    try:
        return int(text, 16)
    except ValueError:
        return -1


def _task_verdict(pid: int, task: Path, fds: set[int]) -> Verdict:
    stat = _read(task / "stat")
    fields = _stat_fields(stat) if stat else []
    if not fields:
        return "not_reading"  # the task is gone
    if fields[0] != "S":
        return "not_reading"  # running, in disk wait, stopped or a zombie
    table = _syscall_table()
    syscall = (_read(task / "syscall") or "").split()
    if syscall[:1] == ["running"]:
        return "not_reading"
    if table and len(syscall) >= 2 and syscall[0].lstrip("-").isdigit():
        number, fd = int(syscall[0]), _hex(syscall[1])
        reads, epolls = table
        if number in reads:
            return "reading" if fd in fds else "not_reading"
        if number in epolls:
            return "reading" if _epoll_watches_input(pid, fd, fds) else "not_reading"
        return "not_reading"
    wchan = (_read(task / "wchan") or "").strip()
    if not wchan or wchan == "0":
        return "unknown"
    return "reading" if wchan in _READ_WCHANS and 0 in fds else "not_reading"


def _process_verdict(pid: int, pipe_link: str) -> Verdict:
    fds = _fds_on_pipe(pid, pipe_link)
    if fds is None:
        return "unknown"
    if not fds:
        return "not_reading"  # it does not hold our pipe, so it cannot be reading it
    try:
        tasks = list(os.scandir(_PROC / str(pid) / "task"))
    except OSError:
        return "not_reading"
    verdicts = {_task_verdict(pid, Path(t.path), fds) for t in tasks}
    if "reading" in verdicts:
        return "reading"
    return "unknown" if "unknown" in verdicts else "not_reading"


def stdin_verdict(leader: int, pipe_inode: int) -> Verdict:
    """Whether any process of the command is blocked reading the stdin pipe we gave it."""
    if not proc_usable():
        return "unknown"
    link = f"pipe:[{pipe_inode}]"
    verdicts = {_process_verdict(pid, link) for pid in process_family(leader)}
    if "reading" in verdicts:
        return "reading"
    return "unknown" if "unknown" in verdicts else "not_reading"


# ---------------------------------------------------------------- killing


def _family_processes(leader: int) -> list[psutil.Process]:
    if proc_usable():
        pids = process_family(leader)
    else:
        try:
            pids = {leader} | {c.pid for c in psutil.Process(leader).children(recursive=True)}
        except psutil.Error:
            pids = {leader}
    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            procs.append(psutil.Process(pid))
    return procs


def _signal_family(leader: int, procs: list[psutil.Process], sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(leader, sig)
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)  # psutil checks the pid was not reused


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def kill_family(leader: int, reap: Callable[[], object], grace: float = KILL_GRACE) -> None:
    """SIGTERM the leader's group and descendants, then SIGKILL whatever is left after `grace`."""
    procs = _family_processes(leader)
    _signal_family(leader, procs, signal.SIGTERM)
    for sig_grace, final in ((grace, False), (1.0, True)):
        deadline = time.monotonic() + sig_grace
        while time.monotonic() < deadline:
            reap()
            if not any(_alive(p) for p in procs):
                return
            await asyncio.sleep(POLL_INTERVAL)
        if not final:
            _signal_family(leader, procs, signal.SIGKILL)
    reap()


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

    def close(self) -> None:
        for transport in (self.stdin, self.stdout):
            if transport is not None:
                transport.close()


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _shell() -> str:
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    # No pagers or terminal tricks, and python prompts flushed as soon as printed.
    env.update(PAGER="cat", GIT_PAGER="cat", TERM="dumb", PYTHONUNBUFFERED="1")
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
        wrap: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        self.root = Path(root)
        self.max_sessions = max_sessions
        self.output_cap = output_cap
        self.idle_fallback = idle_fallback
        self.on_output = on_output
        self.wrap = wrap
        """Turns the command line into the one actually started (e.g. inside a sandbox)."""
        self._sessions: dict[str, _Session] = {}
        self._background: list[_Session] = []
        """Finished commands whose background children still hold the output pipe."""
        self._ids = itertools.count(1)

    def live(self) -> list[str]:
        return list(self._sessions)

    async def run(
        self, command: str, *, stdin: str | None = None, timeout: float = 120
    ) -> CommandOutcome:
        """Run `command`; return when it exits, times out, or waits for input."""
        self._check_room()
        session = await self._start(command)
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
        """Kill a session's whole process group and hand back its last output."""
        session = self._get(session_id)
        started = time.monotonic()
        async with session.lock:
            state: OutcomeState = "exited" if session.exited() else "killed"
            if state == "killed":
                await kill_family(session.proc.pid, session.proc.poll)
            return await self._conclude(session, state, started)

    async def close_all(self) -> None:
        """Kill every live session and every background child left by a finished command."""
        sessions = list(self._sessions.values()) + self._background
        self._sessions.clear()
        self._background = []
        await asyncio.gather(*(self._kill_and_close(s) for s in sessions))

    # -------------------------------------------------------------- steps

    def _check_room(self) -> None:
        if len(self._sessions) >= self.max_sessions:
            raise SessionError(
                f"Too many live shell sessions ({len(self._sessions)} of {self.max_sessions}): "
                f"{', '.join(self._sessions)}. End one with end_process before starting another."
            )

    def _get(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            live = ", ".join(self._sessions) or "none"
            raise SessionError(f"No shell session '{session_id}'. Live sessions: {live}.")
        return session

    async def _start(self, command: str) -> _Session:
        argv = [_shell(), "-c", command]
        proc = subprocess.Popen(
            self.wrap(argv) if self.wrap is not None else argv,
            cwd=self.root,
            env=_environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        session = _Session(f"s{next(self._ids)}", proc, self.output_cap)
        self._sessions[session.id] = session
        try:
            await session.connect()
        except BaseException:
            await self._kill_and_close(session)
            self._sessions.pop(session.id, None)
            raise
        return session

    async def _wait_for(self, session: _Session, timeout: float) -> CommandOutcome:
        started = time.monotonic()
        async with session.lock:
            session.on_output = self.on_output
            try:
                state = await self._watch(session, started + timeout)
                if state == "timed_out":
                    await kill_family(session.proc.pid, session.proc.poll)
                return await self._conclude(session, state, started)
            except asyncio.CancelledError:
                self._sessions.pop(session.id, None)
                await asyncio.shield(self._kill_and_close(session))
                raise
            finally:
                session.on_output = None

    async def _watch(self, session: _Session, deadline: float) -> OutcomeState:
        """Poll until the command exits, the deadline passes, or it sits waiting for input."""
        waiting_since = time.monotonic()
        while True:
            if session.exited():
                return "exited"
            now = time.monotonic()
            if now >= deadline:
                return "timed_out"
            quiet = now - max(session.last_output, waiting_since)
            if quiet >= QUIET_PERIOD and self._waits_for_input(session, quiet):
                return "waiting_for_input"
            session.activity.clear()
            # EOF usually means the exit is a moment away: look again soon.
            pause = 0.005 if session.eof.is_set() else POLL_INTERVAL
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(session.activity.wait(), min(pause, deadline - now))

    def _waits_for_input(self, session: _Session, quiet: float) -> bool:
        verdict = stdin_verdict(session.proc.pid, session.pipe_inode)
        if verdict == "unknown":
            return quiet >= self.idle_fallback
        return verdict == "reading"

    async def _conclude(
        self, session: _Session, state: OutcomeState, started: float
    ) -> CommandOutcome:
        if state == "waiting_for_input":
            output, dropped = session.window.take()
            return CommandOutcome(
                session.id, output, None, state, time.monotonic() - started, dropped
            )
        self._sessions.pop(session.id, None)
        await self._drain(session)
        output, dropped = session.window.take()
        return CommandOutcome(
            None, output, session.proc.returncode, state, time.monotonic() - started, dropped
        )

    async def _drain(self, session: _Session) -> None:
        """Collect the output still in the pipe; keep reading it if background children hold it."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(session.eof.wait(), DRAIN_GRACE)
        self._background = [s for s in self._background if not s.eof.is_set()]
        if session.eof.is_set():
            session.close()
        else:
            # A background child still writes; reading on spares it a broken pipe.
            self._background.append(session)

    async def _kill_and_close(self, session: _Session) -> None:
        await kill_family(session.proc.pid, session.proc.poll)
        session.close()
