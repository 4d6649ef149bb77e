"""An optional OS sandbox for the commands the model runs, built on bubblewrap (`bwrap`).

Modes: `off` (commands run as you), `read-only` (the whole file system is
read-only) and `workspace-write` (read-only except the project root). In both
sandboxed modes /tmp is private and empty, the network is cut off (a fresh
network namespace with only a loopback that is down), the command sees only
its own processes, tether's state directory (TETHER_HOME, where saved keys
live) is hidden behind an empty tmpfs, and the provider key variables are
removed from the environment.

It does NOT stop a command from reading any other file the user can read, nor
limit CPU, memory or disk use; in workspace-write the whole project root
(including `.git`) is writable.

When bubblewrap is missing or cannot start (user namespaces disabled, a
container without the needed privileges) the sandbox says so once and
reports itself unavailable; the approval policy then asks before every
command instead of running it unconfined on an allow rule or `--auto`.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from .providers import API_KEY_ENV
from .tools._paths import is_within

SandboxMode = Literal["off", "read-only", "workspace-write"]
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)
PROBE_TIMEOUT = 10.0
"""Seconds the start-up probe may take before bubblewrap counts as unusable."""


def _key_variables() -> list[str]:
    """Every environment variable that may hold a provider key, each named once."""
    names: list[str] = []
    for variables in API_KEY_ENV.values():
        names += [v for v in variables if v not in names]
    return names


def _isolation_args() -> list[str]:
    """What every sandboxed command gets, whatever the mode."""
    return [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        # A pid namespace needs its own /proc; the host still sees the real pids,
        # which is what the waiting-for-input detection reads.
        "--unshare-pid", "--proc", "/proc",
        "--unshare-net",
        "--unshare-ipc",
        "--tmpfs", "/tmp",
        # No --new-session: commands already run in their own session with no
        # terminal (so no TIOCSTI), and staying in our process group lets the
        # timeout kill the whole tree with one killpg.
        "--die-with-parent",
    ]  # fmt: skip


@dataclass
class Sandbox:
    """Wraps a command line in bubblewrap according to `mode`; probes bubblewrap once."""

    mode: SandboxMode
    root: Path
    home: Path
    notice: Callable[[str], None] = lambda message: None
    """Told once, the first time the sandbox turns out to be unavailable."""
    problem: str = field(default="", init=False)
    """Why a requested sandbox cannot be used ("" when it can, or before it is probed)."""
    _probed: bool = field(default=False, init=False, repr=False)

    @property
    def enabled(self) -> bool:
        """True when a sandbox was asked for (whether or not it can run)."""
        return self.mode != "off"

    def available(self) -> bool:
        """True when commands will really run inside the sandbox; the first call probes."""
        if not self.enabled:
            return False
        if not self._probed:
            self._probed = True
            self.problem = probe_problem()
            if self.problem:
                self.notice(
                    f"The {self.mode} sandbox cannot be used: {self.problem}. Commands will run "
                    "without it, and each one needs your approval (install bubblewrap, or use "
                    "--sandbox off)."
                )
        return not self.problem

    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that runs `argv` in the sandbox; `argv` itself when there is none."""
        if not self.available():
            return list(argv)
        bwrap = shutil.which("bwrap") or "bwrap"
        unset = [arg for name in _key_variables() for arg in ("-u", name)]
        return [bwrap, *self.mount_args(), "--", "env", *unset, *argv]

    def mount_args(self) -> list[str]:
        """The bubblewrap options, in order: later mounts cover earlier ones."""
        root, home = _real(self.root), _real(self.home)
        bind = "--bind" if self.mode == "workspace-write" else "--ro-bind"
        # The root is bound after the private /tmp so a project under /tmp stays visible.
        args = [*_isolation_args(), bind, str(root), str(root)]
        if home.is_dir():
            args += ["--tmpfs", str(home)]
            if is_within(root, home):  # hiding the state directory must not hide the project
                args += [bind, str(root), str(root)]
        return [*args, "--chdir", str(root)]


def _real(path: Path) -> Path:
    """bubblewrap mounts onto real paths: a symlinked directory must be resolved first."""
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError):
        return Path(path).expanduser().absolute()


def probe_problem() -> str:
    """Why bubblewrap cannot run a command with our isolation here; "" when it can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [bwrap, *_isolation_args(), "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not be started ({exc})"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        reason = detail[-1] if detail else f"exit code {done.returncode}"
        return f"bwrap does not work here ({reason}; user namespaces may be disabled)"
    return ""
