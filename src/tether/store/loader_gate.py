"""Where a loader may read from: the one check every instructions, skill, agent-definition
and hooks file passes before its text reaches a prompt or a config.

Those files are read with no model turn to ask in, so a file that may not be read is
skipped with a one-line note saying why and what to do. A project's files count only when
they resolve (as the kernel resolves them: `tether.host.paths`) inside the project, so
`AGENTS.md -> ~/.tether/credentials.json` or `-> /proc/self/environ`, a skills folder that
is a link out, and a chain of links are all refused. A user-level file (TETHER_HOME,
~/.agents) may live anywhere but in /proc, /dev or /sys. Neither ever reads tether's saved
keys, however they are reached: by name, by resolution, or by a hard link (their identity).

The check is made on the path before opening (a clear message, nothing opened), and again
on what was opened: its identity, and on Linux the path the kernel reports for the open
descriptor, so a link swapped in between cannot lead the read elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..host import (
    MAX_CONFIG_BYTES,
    FileProblem,
    TooLarge,
    file_problem,
    is_within,
    open_regular,
    read_at_most,
    resolve_path,
)
from ..safety.secret_files import SecretFiles

SYSTEM_TREES = ("/proc", "/dev", "/sys")
"""Kernel trees no config file is ever read from: their files are the process's secrets
(environ), devices that never end, or state that is not text."""


@dataclass(frozen=True)
class LoaderGate:
    """The reading rules of one kind of loaded file: a project's (`project` is its top
    folder) or the user's (`project` None)."""

    home: Path
    """TETHER_HOME: where the saved keys are."""
    project: Path | None = None

    def refusal(self, path: Path) -> str:
        """Why the file or folder at `path` may not be loaded ("" when it may), one line
        that names it."""
        problem = self._problem(path)
        return str(problem) if problem else ""

    def _problem(self, path: Path) -> FileProblem | None:
        try:
            resolved = resolve_path(str(path), os.getcwd())
        except (OSError, ValueError):
            return FileProblem(path, "cannot be resolved (a symbolic link loop or an unusable "
                                     "name); replace it with a regular file")
        return self._place_problem(path, resolved)

    def read(self, path: Path, limit: int = MAX_CONFIG_BYTES) -> bytes:
        """The whole file, at most `limit` bytes. FileNotFoundError when it is absent,
        FileProblem (one line) when it may not or cannot be read."""
        with self.open(path) as handle:
            if os.fstat(handle.fileno()).st_size > limit:
                raise file_problem(path, TooLarge(path, limit))
            return _bounded(handle, path, limit, cut=False)

    def read_head(self, path: Path, limit: int) -> tuple[bytes, int]:
        """The first `limit` bytes of the file and its whole size (what a cut leaves out)."""
        with self.open(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            head = _bounded(handle, path, limit + 1, cut=True)
            return head[:limit], max(size, len(head))

    def open(self, path: Path) -> BinaryIO:
        """`path` opened for reading once every rule holds; errors as `read` has them."""
        problem = self._problem(path)
        if problem:
            raise problem
        try:
            handle = open_regular(Path(resolve_path(str(path), os.getcwd())))
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise file_problem(path, exc) from None
        try:
            self._check_opened(path, handle)
        except BaseException:
            handle.close()
            raise
        return handle

    def _place_problem(self, path: Path, resolved: str) -> FileProblem | None:
        secrets = SecretFiles(self.home)
        link = "" if str(path) == resolved else f"(a link to {resolved}) "
        if secrets.is_secret(resolved):
            return FileProblem(path, f"{link}is tether's saved keys file, which is never "
                                     "loaded; remove the link")
        if self.project is None:
            tree = next((t for t in SYSTEM_TREES if is_within(resolved, t)), "")
            if tree:
                return FileProblem(path, f"{link}is a system file under {tree}, which is never "
                                         "loaded; point it at a regular file of your own")
            return None
        top = self._top()
        if top is None or not is_within(resolved, top):
            return FileProblem(path, f"{link}is outside the project {self.project}, and a "
                                     "project's files are loaded only from inside it; copy the "
                                     "file in instead of linking to it")
        if secrets.holds(resolved, Path("/")) and not is_within(top, resolved):
            return FileProblem(path, f"{link}is in tether's state folder {self.home}, which a "
                                     "project's files are never loaded from; remove the link")
        return None

    def _top(self) -> str | None:
        try:
            return resolve_path(str(self.project), os.getcwd())
        except (OSError, ValueError):
            return None

    def _check_opened(self, path: Path, handle: BinaryIO) -> None:
        info = os.fstat(handle.fileno())
        if (info.st_dev, info.st_ino) in SecretFiles(self.home).identities():
            raise FileProblem(path, "is tether's saved keys file (a link to it), which is "
                                    "never loaded; remove the link")
        opened = _opened_path(handle)
        problem = self._place_problem(path, opened) if opened else None
        if problem:
            raise problem


def _opened_path(handle: BinaryIO) -> str:
    """The path the kernel gives for an open descriptor ("" where it says none)."""
    try:
        target = os.readlink(f"/proc/self/fd/{handle.fileno()}")
    except OSError:
        return ""
    return target if target.startswith("/") and not target.endswith(" (deleted)") else ""


def _bounded(handle: BinaryIO, path: Path, limit: int, *, cut: bool) -> bytes:
    try:
        return read_at_most(handle, path, limit, cut=cut)
    except OSError as exc:
        raise file_problem(path, exc) from None
