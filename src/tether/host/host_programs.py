"""Finding the programs tether itself runs outside the sandbox (git, bwrap, the shell).

A sandboxed command may write anywhere in the project. When PATH names a folder
inside it (an activated `.venv/bin`, `node_modules/.bin`, `./bin`, or `~/.local/bin`
when the project is the home folder), a command could put a `git` or a `bwrap`
there that tether would then run as the user, unconfined. So these programs are
looked up in PATH without its relative entries and without the entries inside
the project.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def host_program(name: str, project: Path | None) -> str | None:
    """The path of `name` on PATH, skipping folders a sandboxed command could write."""
    return shutil.which(name, path=os.pathsep.join(host_path(project)))


def host_path(project: Path | None, path: str | None = None) -> list[str]:
    """PATH's absolute entries that lie outside `project`, each as the kernel resolves it.
    Resolved, not as written: an entry reached through a link inside the project
    (`project/tools/bin` with `tools` a link out) would lead into the project as soon as a
    command replaced that link with a folder of its own, and a server given this PATH looks
    programs up in it for as long as it runs."""
    entries = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    root = os.path.realpath(project) if project is not None else None
    resolved = (os.path.realpath(entry) for entry in entries if os.path.isabs(entry))
    return list(dict.fromkeys(entry for entry in resolved if not _inside(entry, root)))


def _inside(resolved: str, root: str | None) -> bool:
    if root is None:
        return False
    return resolved == root or resolved.startswith(root.rstrip(os.sep) + os.sep)
