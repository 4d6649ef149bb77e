"""Every process a command starts stays findable, so tether can stop it, and only it.

A command's background processes leave it behind: `sleep 1000 &` and `nohup`
outlive the shell that started them, `setsid` leaves its process group and
session, `setsid -f` also forks away from its parent. Three things keep each
of them findable (on Linux, through /proc):

- Every command's environment carries `TETHER_COMMAND=<run token>.<session id>`.
  Children inherit it, so `/proc/PID/environ` names the command a process came
  from wherever it moved to. The token is random for each tether run, so no
  other program's processes (another tether's included) ever match.
- tether is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`): an orphan is
  re-parented to tether instead of init, so it stays in tether's process tree
  even when it cleared its environment.
- Each scan remembers a command's processes by pid and start time, so one that
  later drops the marker and leaves the group is still known; the same
  memory says which zombies tether may reap. Only orphans it adopted: a child
  tether started itself (a command's first process, git) is left to the code
  that waits for it, so no exit status is ever stolen.

A pid is signalled only after its start time matches the one seen in the scan
(a reused pid is never a stranger killed), and psutil checks it again when it
sends the signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # psutil is imported where a process is looked at: not at start-up
    import psutil


MARKER = "TETHER_COMMAND"
"""The environment variable that names the command a process belongs to."""
KEEP_SUFFIX = ".keep"
"""Ends the marker of a command whose processes may outlive tether (run_cmd keep_running)."""
KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL."""
POLL_INTERVAL = 0.05
_PR_SET_CHILD_SUBREAPER = 36
_PROC = Path("/proc")


def proc_usable() -> bool:
    return (_PROC / "self" / "stat").exists()


def become_subreaper() -> bool:
    """Make the orphans of our descendants our children (Linux); False where it is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def stat_fields(text: str) -> list[str]:
    """The fields of /proc/PID/stat after `comm` (which may hold spaces and parentheses):
    state, ppid, pgrp, session, ..."""
    return text[text.rfind(")") + 2 :].split()


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgrp: int
    session: int
    state: str
    start: int
    """Clock ticks after boot: with the pid, names one process for good."""


def proc_info(pid: int) -> ProcInfo | None:
    try:
        text = (_PROC / str(pid) / "stat").read_text(errors="replace")
    except OSError:
        return None
    fields = stat_fields(text)
    if len(fields) < 20:
        return None
    ppid, pgrp, session, start = (int(fields[i]) for i in (1, 2, 3, 19))
    return ProcInfo(pid, ppid, pgrp, session, fields[0], start)


def snapshot() -> dict[int, ProcInfo]:
    """Every process /proc shows now (zombies included)."""
    procs: dict[int, ProcInfo] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir(_PROC):
            if entry.name.isdigit():
                info = proc_info(int(entry.name))
                if info is not None:
                    procs[info.pid] = info
    return procs


def descendants(procs: dict[int, ProcInfo], roots: Iterable[int]) -> set[int]:
    """The roots that exist and every process below them."""
    children: dict[int, list[int]] = {}
    for info in procs.values():
        children.setdefault(info.ppid, []).append(info.pid)
    found = {pid for pid in roots if pid in procs}
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def now_ticks() -> int:
    """Clock ticks after boot now, in the unit of ProcInfo.start (0 where /proc cannot say)."""
    try:
        uptime = float((_PROC / "uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return int(uptime * os.sysconf("SC_CLK_TCK")) + 1


def marker_of(pid: int) -> str | None:
    """The command marker in a process's environment (as it was when it started), or None."""
    try:
        data = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    prefix = MARKER.encode() + b"="
    for item in data.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode("ascii", "replace")
    return None


class OwnHelpers:
    """Processes tether started itself, each in a session of its own, to keep running beside
    it (stdio MCP servers): children of tether outside its session, as an adopted orphan is,
    but never strangers, and neither is what runs in their sessions. Process-wide, as being
    the parent is: a runtime rebuilt by /connect closes the old one's commands while the
    servers run on."""

    def __init__(self) -> None:
        self._known: set[tuple[int, int]] = set()

    def add(self, pid: int) -> None:
        info = proc_info(pid)
        self._known.add((pid, info.start if info is not None else -1))

    def discard(self, pid: int) -> None:
        self._known = {key for key in self._known if key[0] != pid}

    def sessions(self, procs: dict[int, ProcInfo]) -> set[int]:
        """The helpers alive in `procs` (each the leader of its own session)."""
        return {pid for pid, start in self._known
                if pid in procs and start in (procs[pid].start, -1)}


OWN_HELPERS = OwnHelpers()


@dataclass(frozen=True)
class _Command:
    leader: int
    start: int
    """The leader's start time: a later process with the leader's pid is not ours."""
    keep: bool


class CommandProcesses:
    """The processes of each command of this run: marked, found, remembered, stopped, reaped."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(8)
        self.adopts_orphans = become_subreaper()
        self._commands: dict[str, _Command] = {}
        self._seen: dict[tuple[int, int], str] = {}
        """(pid, start time) of every process found in a command, with its session id."""
        self._spared: set[tuple[int, int]] = set()
        """(pid, start time) of the processes of forgotten keep_running commands."""
        self._until: dict[str, int] = {}
        """When a scan first found nothing of a command alive (clock ticks): nothing it
        started can have started later. Absent while it has processes."""

    # ------------------------------------------------------------ bookkeeping

    def environment(self, sid: str, keep: bool = False) -> dict[str, str]:
        """What command `sid`'s environment gets so its processes can be found."""
        return {MARKER: f"{self.token}.{sid}" + (KEEP_SUFFIX if keep else "")}

    def started(self, sid: str, leader: int, keep: bool = False) -> None:
        info = proc_info(leader)
        self._commands[sid] = _Command(leader, info.start if info else -1, keep)
        self._until.pop(sid, None)

    def forget(self, sid: str) -> None:
        if self.kept(sid):  # what it left may outlive tether: never taken for a stranger
            self._spared |= {key for key, owner in self._seen.items() if owner == sid}
        self._commands.pop(sid, None)
        self._until.pop(sid, None)
        self._seen = {key: owner for key, owner in self._seen.items() if owner != sid}

    def kept(self, sid: str) -> bool:
        command = self._commands.get(sid)
        return command is not None and command.keep

    def tracked(self) -> list[str]:
        return list(self._commands)

    # ------------------------------------------------------------ finding

    def members(self, sid: str, *, leader: bool = True) -> list[psutil.Process]:
        """Every living process of command `sid` now (without its first process unless
        `leader`), each checked to be the very process that was found."""
        if not proc_usable():
            return self._members_without_proc(sid, leader)
        family = self.scan([sid]).get(sid, {})
        command = self._commands.get(sid)
        if not leader and command is not None:
            family.pop(command.leader, None)
        return _verified(info for info in family.values() if info.state != "Z")

    def scan(self, sids: Iterable[str]) -> dict[str, dict[int, ProcInfo]]:
        """Each command's processes (zombies included), remembered for the next scan."""
        procs = snapshot()
        markers = self._markers(procs)
        self._adopt_strangers(procs)
        families: dict[str, dict[int, ProcInfo]] = {}
        now = now_ticks()
        for sid in sids:
            family = self._family(sid, procs, markers)
            families[sid] = {pid: procs[pid] for pid in family}
            self._seen.update({(pid, procs[pid].start): sid for pid in family})
            if any(procs[pid].state != "Z" for pid in family):
                self._until.pop(sid, None)
            else:
                self._until.setdefault(sid, now)
        self._seen = {
            (pid, start): sid for (pid, start), sid in self._seen.items()
            if pid in procs and procs[pid].start == start
        }  # fmt: skip
        return families

    def _markers(self, procs: dict[int, ProcInfo]) -> dict[int, str]:
        """pid -> session id, for processes carrying this run's marker. As a subreaper every one
        of them is below tether, so only those environments need reading."""
        candidates = descendants(procs, [os.getpid()]) if self.adopts_orphans else procs.keys()
        prefix = self.token + "."
        found = {}
        for pid in candidates:
            marker = marker_of(pid)
            if marker is not None and marker.startswith(prefix):
                found[pid] = marker[len(prefix) :].removesuffix(KEEP_SUFFIX)
        return found

    def strangers(self, procs: dict[int, ProcInfo] | None = None) -> dict[int, ProcInfo]:
        """Orphans tether adopted that no command is known to own: a process that cleared
        its environment (`env -i`), left the command's session (`setsid -f`) and whose
        parent exited before a scan saw it. tether's own helpers (git, the regex worker)
        stay in tether's session and command leaders are known, so neither is one; nor is
        a helper of its own in a session of its own (`OWN_HELPERS`) or what runs in its session."""
        if not self.adopts_orphans:
            return {}
        procs = snapshot() if procs is None else procs
        me, mine = os.getpid(), os.getsid(0)
        leaders = {command.leader for command in self._commands.values()}
        known = {pid for pid, start in [*self._seen, *self._spared]
                 if pid in procs and procs[pid].start == start}
        helpers = OWN_HELPERS.sessions(procs)
        found = {
            info.pid: info for info in procs.values()
            if info.ppid == me and info.session != mine and info.pid not in leaders
            and info.pid not in known and info.session not in leaders
            and info.session not in helpers
        }
        prefix = self.token + "."
        return {pid: info for pid, info in found.items()
                if not (marker_of(pid) or "").startswith(prefix)}  # a marked one has its owner

    def stranger_processes(self) -> list[psutil.Process]:
        """The strangers as processes to stop (each checked to be the one found)."""
        return _verified(self.strangers().values())

    def _adopt_strangers(self, procs: dict[int, ProcInfo]) -> None:
        """Give each stranger to the one command that was running when it started (so
        end_process and the timeout stop it too); one that two commands could have
        started stays a stranger, stopped when tether exits."""
        for info in self.strangers(procs).values():
            owners = [sid for sid, command in self._commands.items()
                      if command.start <= info.start <= self._until.get(sid, info.start)]
            if len(owners) == 1:
                self._seen[(info.pid, info.start)] = owners[0]

    def _family(self, sid: str, procs: dict[int, ProcInfo], markers: dict[int, str]) -> set[int]:
        seeds = {pid for pid, owner in markers.items() if owner == sid}
        seeds |= {pid for (pid, start), owner in self._seen.items()
                  if owner == sid and pid in procs and procs[pid].start == start}
        command = self._commands.get(sid)
        if command is not None:
            leader = procs.get(command.leader)
            # While anything is in the leader's group or session its pid cannot be reused;
            # a process that has the pid but another start time is somebody else.
            if leader is None or leader.start == command.start:
                seeds |= {p.pid for p in procs.values() if command.leader in (p.pgrp, p.session)}
        family = descendants(procs, seeds)
        family.discard(os.getpid())
        family.discard(1)
        return family

    def _members_without_proc(self, sid: str, leader: bool) -> list[psutil.Process]:
        import psutil

        command = self._commands.get(sid)
        if command is None:
            return []
        try:
            top = psutil.Process(command.leader)
            found = top.children(recursive=True)
        except psutil.Error:
            return []
        return [top, *found] if leader else found

    # ------------------------------------------------------------ reaping

    def reap_adopted(self) -> None:
        """Collect the exit status of the orphans tether adopted, and no one else's."""
        if not self.adopts_orphans:
            return
        me = os.getpid()
        leaders = {command.leader for command in self._commands.values()}
        for pid, start in list(self._seen):
            if pid in leaders:
                continue  # its Popen waits for it
            info = proc_info(pid)
            if info is not None and info.ppid == me and info.state == "Z" and info.start == start:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)

    def sweep(self) -> dict[str, int]:
        """Remember every command's processes and reap adopted zombies; the number of living
        processes of each command."""
        families = self.scan(self.tracked())
        self.reap_adopted()
        return {
            sid: sum(1 for info in family.values() if info.state != "Z")
            for sid, family in families.items()
        }


def _verified(infos: Iterable[ProcInfo]) -> list[psutil.Process]:
    """psutil handles for these processes, skipping any pid that now names another process."""
    infos = list(infos)
    if not infos:  # most runs leave nothing behind: psutil is not imported to say so
        return []
    import psutil

    found = []
    for info in infos:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(info.pid)
            again = proc_info(info.pid)
            if again is not None and again.start == info.start:
                found.append(proc)
    return found


# ---------------------------------------------------------------- stopping


def _signal_all(procs: list[psutil.Process], sig: int) -> None:
    if not procs:
        return
    import psutil

    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)  # psutil checks the pid was not reused


def _alive(proc: psutil.Process) -> bool:
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def stop_processes(
    find: Callable[[], list[psutil.Process]],
    reap: Callable[[], object],
    grace: float = KILL_GRACE,
) -> None:
    """SIGTERM what `find` returns (again once those are gone, for anything they started
    meanwhile), then SIGKILL whatever is left after `grace` seconds."""
    procs = find()
    _signal_all(procs, signal.SIGTERM)
    for sig_grace, final in ((grace, False), (1.0, True)):
        deadline = time.monotonic() + sig_grace
        while time.monotonic() < deadline:
            reap()
            if not any(_alive(p) for p in procs):
                newcomers = [p for p in find() if _alive(p)]
                if not newcomers:
                    return
                _signal_all(newcomers, signal.SIGKILL if final else signal.SIGTERM)
                procs += newcomers
            await asyncio.sleep(POLL_INTERVAL)
        if not final:
            procs += find()
            _signal_all(procs, signal.SIGKILL)
    reap()
