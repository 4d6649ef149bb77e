"""What commands leave running: the four background forms, and waiting for their pids."""

from __future__ import annotations

import time
from pathlib import Path

import psutil

# Each leaves a `sleep 1000` running after the shell exits, not holding the output pipe, and
# writes its pid to {pid}.
BACKGROUND_FORMS = {
    "ampersand": "sleep 1000 >/dev/null 2>&1 & echo $! > {pid}",
    "nohup": "nohup sleep 1000 >/dev/null 2>&1 & echo $! > {pid}",
    "setsid": "setsid sleep 1000 >/dev/null 2>&1 & echo $! > {pid}",
    "setsid -f": "setsid -f sh -c 'echo $$ > {pid}; exec sleep 1000' >/dev/null 2>&1",
    # No marker left, another session, the parent gone before anything could look: only the
    # subreaper still sees them.
    "env -i setsid -f": "env -i setsid -f sh -c 'echo $$ > {pid}; exec sleep 1000' >/dev/null 2>&1",
    # Each parent waits until its child is in place, so the command ends with the
    # grandchild already running (and adopted), never still on its way.
    "double fork, empty environment": (
        "python3 -c \"import os,sys\nr,w=os.pipe()\nif os.fork(): os.wait(); sys.exit(0)\n"
        "os.setsid()\nif os.fork(): os.read(r,1); os._exit(0)\n"
        "open('{pid}','w').write(str(os.getpid())+'\\n')\nos.write(w,b'x')\n"
        "os.execve('/bin/sleep',['sleep','1000'],{{}})\" >/dev/null 2>&1"
    ),
}
WAIT = 60
"""A bound that only a real hang exceeds."""


def pid_written(path: Path) -> int:
    """The pid a background process wrote (a forked one may write it after its command ended)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.endswith("\n"):
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"no pid in {path}")


def gone(pid: int) -> bool:
    """Ended: no such process, or a zombie (which runs nothing) waiting to be reaped."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def until_gone(pid: int) -> bool:
    """Whether `pid` ends within the bound (orphans of an exited tether are reaped elsewhere)."""
    deadline = time.monotonic() + WAIT
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return gone(pid)
