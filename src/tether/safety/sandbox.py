"""The OS sandbox for the commands the model runs, built on bubblewrap (`bwrap`).

Modes: `auto` (the default: workspace-write where bubblewrap works on this
machine, otherwise off, with one notice at start saying why and how to fix
it), `off` (commands run as you), `read-only` (the whole file system is
read-only) and `workspace-write` (read-only except the project root).

In both confined modes /tmp is private and empty, the network is cut off (a
fresh network namespace with only a loopback that is down), Unix-domain
sockets cannot be created (a seccomp filter, see `seccomp`), the command sees
only its own processes, and tether's state directory (TETHER_HOME, where saved
keys live) is hidden behind an empty tmpfs. bubblewrap itself starts with an
environment built from `ENV_ALLOWED` only, so no key variable reaches any
process inside, not even through /proc/1/environ. In workspace-write, git's
folder, tether's project config (rules, hooks, MCP servers and the scripts they
run, skills, agent definitions) and the root's AGENTS.md stay read-only, and
cannot be renamed away or created (see `sandbox_paths`).

It does NOT stop a command from reading any other file the user can read, nor
limit CPU, memory or disk use.

A project's own MCP servers start through the same sandbox (`launch(..., network=True)`):
everything above holds for them except the network, which they keep. Servers are there
to reach services (an issue tracker, a documentation API), and one without the network
would be of no use; what a server loads is what the user approved (see
`mcp.entry_files`), and the sandbox is what keeps it from writing outside the project,
reading tether's keys or starting anything that later runs unconfined.

When an explicitly chosen sandbox cannot start, it says so once and reports
itself unavailable; the approval policy then asks before every command
instead of running it unconfined on an allow rule or `--auto`. `auto` falls
back to running commands as `off` does.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from ..host import host_program, is_within
from .processes import MARKER
from .project_config import DEFAULT_FALLBACKS, instruction_names
from .sandbox_paths import (
    Placeholders,
    Protected,
    entry_links,
    pinned,
    protected_paths,
    real,
    restore_links,
)
from .sandbox_probe import NOT_INSTALLED, data_fd, remembered_problem
from .sandbox_probe import probe_problem as _probe_with
from .seccomp import unix_socket_filter
from .secret_files import SECRET_FILES
from .shell_session import Launch

SandboxMode = Literal["auto", "off", "read-only", "workspace-write"]
SANDBOX_MODES: tuple[str, ...] = get_args(SandboxMode)
AUTO_MODE = "workspace-write"
"""What `auto` becomes where bubblewrap works."""

ENV_ALLOWED = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM",
    "PAGER", "GIT_PAGER", "EDITOR", "VISUAL", "NO_COLOR", "COLUMNS", "LINES", "CI",
    "PYTHONUNBUFFERED", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME",
    "JAVA_HOME", "NODE_PATH", "NVM_DIR", "GEM_HOME", "GEM_PATH",
    "PKG_CONFIG_PATH", "LD_LIBRARY_PATH", "MANPATH",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
    MARKER,
)  # fmt: skip
"""The variables a sandboxed command (and bubblewrap itself) inherits; every other one,
provider keys and tokens included, is left out. TMPDIR is left out on purpose: /tmp is
the private, writable one. MARKER is how tether finds a command's processes."""
ENV_ALLOWED_PREFIXES = ("LC_",)

# How a command fails when the sandbox stopped it (checked only after a non-zero exit).
SANDBOX_FAILURES = re.compile(
    r"Read-only file system|Network is unreachable|Temporary failure in name resolution"
    r"|Could not resolve host|Name or service not known|No address associated with hostname"
    r"|getaddrinfo|EAI_AGAIN|ENOTFOUND|ENETUNREACH|EROFS|Permission denied|Operation not permitted",
    re.IGNORECASE,
)


def _isolation_args(network: bool = False) -> list[str]:
    """What every sandboxed command gets, whatever the mode; `network` keeps the host's
    network (a project's MCP server, see the module's text)."""
    return [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        # A pid namespace needs its own /proc; the host still sees the real pids,
        # which is what the waiting-for-input detection reads.
        "--unshare-pid", "--proc", "/proc",
        *([] if network else ["--unshare-net"]),
        "--unshare-ipc",
        "--tmpfs", "/tmp",
        # No --new-session: commands already run in their own session with no
        # terminal (so no TIOCSTI), and staying in our process group lets the
        # timeout kill the whole tree with one killpg.
        "--die-with-parent",
    ]  # fmt: skip


def probe_problem(project: Path | None = None) -> str:
    """Why bubblewrap cannot run a command with our isolation here; "" when it can."""
    return _probe_with(_isolation_args(), unix_socket_filter(), project)


def sandbox_environment(env: Mapping[str, str]) -> dict[str, str]:
    """Only the allowed variables of `env`."""
    return {
        name: value for name, value in env.items()
        if name in ENV_ALLOWED or name.startswith(ENV_ALLOWED_PREFIXES)
    }  # fmt: skip


@dataclass
class Sandbox:
    """Runs command lines in bubblewrap according to `mode`; probes bubblewrap once."""

    mode: SandboxMode
    root: Path
    home: Path
    notice: Callable[[str], None] = lambda message: None
    """Told once, the first time the sandbox turns out to be unavailable, and each time a
    link to tether's configuration that a command replaced is put back."""
    instructions: tuple[str, ...] = instruction_names(DEFAULT_FALLBACKS)
    """The instruction file names of the root, kept read-only (the fallbacks are a setting)."""
    problem: str = field(default="", init=False)
    """Why the sandbox cannot be used ("" when it can, or before it is probed)."""
    _probed: bool = field(default=False, init=False, repr=False)
    _probing: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _told: bool = field(default=False, init=False, repr=False)
    _placeholders: Placeholders = field(default_factory=Placeholders, init=False, repr=False)

    @property
    def enabled(self) -> bool:
        """True when a sandbox was asked for, `auto` included (whether or not it can run)."""
        return self.mode != "off"

    @property
    def confinement(self) -> str:
        """The mode commands really run in: `auto` resolved, "off" when nothing confines them."""
        if not self.available():
            return "off"
        return AUTO_MODE if self.mode == "auto" else self.mode

    def probe(self) -> str:
        """Find out (once) whether bubblewrap works; safe to call from worker threads (the
        start-up and a project's MCP servers may ask at the same time)."""
        with self._probing:
            if self.enabled and not self._probed:
                self.problem = remembered_problem(
                    self.home, _isolation_args(), unix_socket_filter(),
                    lambda: probe_problem(self.root), project=self.root,
                )
                self._probed = True
        return self.problem

    def available(self) -> bool:
        """True when commands will really run inside the sandbox; the first call probes."""
        if not self.enabled:
            return False
        if self.probe() and not self._told:
            self._told = True
            self.notice(self.unavailable_notice())
        return not self.problem

    def insisted_on(self) -> bool:
        """True when a sandbox was chosen explicitly and cannot run: commands would run
        unconfined against that choice (`auto` simply falls back to off)."""
        return self.mode not in ("off", "auto") and not self.available()

    def unavailable_notice(self) -> str:
        if self.mode != "auto":
            return (
                f"The {self.mode} sandbox cannot be used: {self.problem}. Commands will run "
                "without it, and each one needs your approval (install bubblewrap, or use "
                "--sandbox off)."
            )
        fix = (
            "Install bubblewrap (the bubblewrap package) to confine them to the project."
            if self.problem == NOT_INSTALLED else
            "Enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            "or on recent Ubuntu kernel.apparmor_restrict_unprivileged_userns=0) to confine "
            "them to the project."
        )  # fmt: skip
        return (
            f"Commands run without a sandbox: {self.problem}. {fix} Set sandbox = \"off\" "
            "(or --sandbox off) to choose that and not see this again."
        )

    @contextlib.contextmanager
    def launch(
        self, argv: list[str], env: dict[str, str], *, network: bool = False,
        own_env: Mapping[str, str] | None = None,
    ) -> Iterator[Launch]:
        """What to start for `argv`: bubblewrap around it, or `argv` itself when there is no sandbox.

        `network`: keep the host's network (a project's MCP server). `own_env`: variables
        set as given on top of the allowed ones (an MCP entry's own `env`, which the user
        approved). The seccomp program's descriptor is open only inside the `with` (bwrap
        reads it before it starts the program); `release` must be called once the program
        has exited."""
        mode = self.confinement
        if mode == "off":
            yield Launch(list(argv), {**env, **(own_env or {})})
            return
        refuse_if_keys_have_other_names(real(self.home))
        root = real(self.root)
        protected = self._placeholders.acquire(
            protected_paths(root, self.instructions, hidden=real(self.home))) if (
            mode == "workspace-write") else []  # fmt: skip
        links = entry_links(root, self.instructions) if protected else []
        released = False

        def release() -> None:
            nonlocal released
            if protected and not released:
                released = True
                for line in restore_links(links):
                    self.notice(line)
                self._placeholders.release()
        try:
            with data_fd(unix_socket_filter()) as fd:
                filter_args = [] if fd is None else ["--seccomp", str(fd)]
                options = [*self.mount_args(network), *_pinned(root, protected),
                           *_read_only(protected), *filter_args]
                yield Launch(
                    [host_program("bwrap", self.root) or "bwrap", *options, "--", *argv],
                    {**sandbox_environment(env), **(own_env or {})},
                    () if fd is None else (fd,),
                    release,
                )
        except BaseException:
            release()
            raise

    def mount_args(self, network: bool = False) -> list[str]:
        """The bubblewrap options, in order: later mounts cover earlier ones."""
        root, home = real(self.root), real(self.home)
        bind = "--bind" if self.confinement == "workspace-write" else "--ro-bind"
        # The root is bound after the private /tmp so a project under /tmp stays visible.
        args = [*_isolation_args(network), *_interpreter_args(root), bind, str(root), str(root)]
        if home.is_dir():
            args += ["--tmpfs", str(home)]
            # Hiding the state directory must not hide a project inside it, but a project that
            # is the state directory stays hidden: its keys and global rules are in it.
            if is_within(str(root), str(home)) and root != home:
                args += [bind, str(root), str(root)]
        return [*args, "--chdir", str(root)]

    def failure_hint(self, output: str) -> str:
        """For a command that exited non-zero: how to run it outside the sandbox when its
        output looks like the sandbox stopped it; "" otherwise."""
        if self.confinement == "off" or not SANDBOX_FAILURES.search(output):
            return ""
        return (
            f"[sandbox: this ran in the {self.confinement} sandbox (no network, no Unix sockets, "
            "read-only outside the project and in .git). If that is why it failed, call run_cmd "
            "again with unsandboxed: true and a reason; the user is asked to approve it]"
        )


class KeysLinked(OSError):
    """The keys file has another name (a hard link) that the sandbox cannot hide."""


def refuse_if_keys_have_other_names(home: Path) -> None:
    """Hiding the state directory hides the keys file by its path only: a hard link to it
    made beforehand, anywhere the command can read, would show its content. Refuse to run
    rather than run with the keys readable."""
    for name in SECRET_FILES:
        path = home / name
        try:
            links = path.stat().st_nlink
        except OSError:
            continue
        if links > 1:
            raise KeysLinked(
                f"the saved keys file {path} has {links - 1} other name(s) (a hard link), "
                "which the sandbox cannot hide, so no sandboxed command runs. Nothing was run. "
                f"Remove the other link (find it with: find / -samefile {path})."
            )


def _interpreter_args(root: Path) -> list[str]:
    """The running interpreter's environment, read-only, where the private /tmp would hide it
    (a CI virtualenv under /tmp): skill scripts and hooks run with `sys.executable`. One
    inside the project is left to the project's own bind, which keeps it writable."""
    tmp = real(Path("/tmp"))
    prefixes = dict.fromkeys(real(Path(p)) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix))
    hidden = [p for p in prefixes if is_within(str(p), str(tmp)) and p != tmp and not is_within(str(p), str(root))
              and p.is_dir()]
    return [arg for p in hidden for arg in ("--ro-bind", str(p), str(p))]


def _pinned(root: Path, protected: list[Protected]) -> list[str]:
    """The folders holding protected paths, bound onto themselves (still writable) so they
    cannot be renamed or removed; before the read-only mounts inside them."""
    return [arg for folder in pinned(root, protected) for arg in ("--bind", str(folder), str(folder))]


def _read_only(paths: list[Protected]) -> list[str]:
    return [arg for item in paths for arg in ("--ro-bind", str(item.path), str(item.path))]
