"""Whether a command sits waiting for input, read from /proc: a process of its group
(or among its descendants) sleeping in read(2) on our stdin pipe, or in an epoll wait
that watches it. `/proc/PID/syscall` names the syscall and its descriptor;
`/proc/PID/wchan` is the fallback when it cannot be read."""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path
from typing import Literal

from .processes import (
    descendants,
    proc_usable,
    snapshot,
    stat_fields,
)

Verdict = Literal["reading", "not_reading", "unknown"]


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


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def process_family(leader: int) -> set[int]:
    """The leader, every process in its group and every descendant (a child may start its own group)."""
    procs = snapshot()
    return {leader} | descendants(
        procs, [p.pid for p in procs.values() if p.pgrp == leader] + [leader]
    )


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
    fields = stat_fields(stat) if stat else []
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
