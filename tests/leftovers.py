"""What commands leave running: the four background forms, and waiting for their pids."""

from __future__ import annotations

from pathlib import Path

import psutil
from waiting import HANG, wait_until

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
WAIT = HANG
"""A bound that only a real hang exceeds."""


def pid_written(path: Path) -> int:
    """The pid a background process wrote (a forked one may write it after its command ended)."""

    def written() -> str:
        text = path.read_text() if path.exists() else ""
        return text if text.endswith("\n") else ""

    return int(wait_until(written, f"a pid in {path}", WAIT))


def gone(pid: int) -> bool:
    """Ended: no such process, or a zombie (which runs nothing) waiting to be reaped."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def until_gone(pid: int) -> bool:
    """True once `pid` has ended (orphans of an exited tether are reaped elsewhere); fails
    loudly if it never does."""
    return wait_until(lambda: gone(pid), f"process {pid} to end", WAIT)
