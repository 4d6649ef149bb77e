"""Whether bubblewrap works on this machine: probed once, remembered in TETHER_HOME.

The probe starts `bwrap` with the sandbox's own isolation (namespaces, the
seccomp filter) around `true`. Its answer is kept in `TETHER_HOME/sandbox.json`
under the host name, with a fingerprint of everything that decides it: the
kernel release, the user-namespace switches in /proc/sys, which bwrap and
which isolation. When any of them changes (bubblewrap installed or upgraded,
user namespaces enabled) the fingerprint no longer matches and the next start
probes again; deleting the file does the same.

A record that cannot be parsed is left as it is (and the probe is simply run);
it is never overwritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import socket
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..host import atomic_write_json, host_program, read_small_file

PROBE_FILE = "sandbox.json"
MAX_RECORDS_BYTES = 1024 * 1024
PROBE_TIMEOUT = 10.0
"""Seconds the probe may take before bubblewrap counts as unusable."""
NOT_INSTALLED = "bubblewrap (bwrap) is not installed"
USERNS_SWITCHES = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)
"""The kernel settings that decide whether an unprivileged user may create namespaces."""


@contextlib.contextmanager
def data_fd(data: bytes | None) -> Iterator[int | None]:
    """A pipe's read end holding `data` (bwrap reads its seccomp program from one); None for None."""
    if data is None:
        yield None
        return
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write_end)
    try:
        yield read_end
    finally:
        os.close(read_end)


def probe_problem(
    isolation: Sequence[str], seccomp: bytes | None, project: Path | None = None
) -> str:
    """Why bubblewrap cannot run a command with `isolation` here; "" when it can. bwrap is
    not looked for inside `project`, where a sandboxed command may have put one."""
    bwrap = host_program("bwrap", project)
    if bwrap is None:
        return NOT_INSTALLED
    with data_fd(seccomp) as fd:
        filter_args = [] if fd is None else ["--seccomp", str(fd)]
        try:
            done = subprocess.run(
                [bwrap, *isolation, *filter_args, "--", "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PROBE_TIMEOUT,
                pass_fds=() if fd is None else (fd,),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bwrap could not be started ({exc})"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        reason = detail[-1] if detail else f"exit code {done.returncode}"
        return f"bwrap does not work here ({reason}; user namespaces may be disabled)"
    return ""


def fingerprint(bwrap: str, isolation: Sequence[str], seccomp: bytes | None) -> str:
    """A digest of everything the probe's answer depends on."""
    parts = [platform.release(), bwrap, *isolation, (seccomp or b"").hex()]
    with contextlib.suppress(OSError):
        info = os.stat(bwrap)
        parts += [str(info.st_size), str(info.st_mtime_ns)]
    for switch in USERNS_SWITCHES:
        with contextlib.suppress(OSError):
            parts.append(f"{switch}={Path(switch).read_text().strip()}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def remembered_problem(
    home: Path | None, isolation: Sequence[str], seccomp: bytes | None, probe: Callable[[], str],
    project: Path | None = None,
) -> str:
    """`probe`'s answer for this machine: from TETHER_HOME while still valid, else probed now."""
    bwrap = host_program("bwrap", project)
    if bwrap is None:
        return NOT_INSTALLED  # nothing to remember: finding out is as cheap as reading a file
    if home is None:
        return probe()
    path, host = home / PROBE_FILE, socket.gethostname()
    digest = fingerprint(bwrap, isolation, seccomp)
    records = _read_records(path)
    entry = records.get(host) if records is not None else None
    if isinstance(entry, dict) and entry.get("fingerprint") == digest and isinstance(entry.get("problem"), str):
        return entry["problem"]
    problem = probe()
    if records is not None and home.is_dir():  # a state directory of its own is not made for this
        records[host] = {"fingerprint": digest, "problem": problem}
        with contextlib.suppress(OSError):
            atomic_write_json(path, records, secret=True)
    return problem


def _read_records(path: Path) -> dict[str, Any] | None:
    """The file's records by host; {} when there is none; None when it cannot be parsed, or
    is no regular file of at most MAX_RECORDS_BYTES (a FIFO there must not make start-up wait)."""
    try:
        data = json.loads(read_small_file(path, MAX_RECORDS_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
