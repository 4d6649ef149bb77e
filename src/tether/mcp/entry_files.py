"""The project files a server entry runs, recorded so an approval covers their content.

Approving `python3 srv.py` approves what srv.py says at that moment; a sandboxed command
may rewrite srv.py later, and the server runs outside the sandbox. So an approval keeps,
beside the hash of the entry, the state of every path the entry names in the project:
the command when it is a path, each argument, and the value of an `--option=value`.
A word counts when the path it names lies in the project as written (relative ones start
at the project, the server's working directory) or as the kernel resolves it. Its state
is where it leads and what is there: a content hash, "absent", "a directory", "a FIFO
(named pipe)". Any difference, a retargeted symbolic link included, asks again.

What these files load in turn (a module next to srv.py, the package `python3 -m pkg`
runs, the project's `node_modules` that npx prefers) can be any file of the project: a
project server starts in the project, and the sandbox keeps only the named files
read-only. So a project entry's record also holds a fingerprint of every file and link in
the project (`project_fingerprint`: path, inode, size and change time, which no command
can set back; `.git` left out, the sandbox keeps it read-only): a change anywhere asks
again before the server next starts. A project server runs inside the sandbox when it
works (see `launch`), but with the network, which is why what it starts with must still
be what the user approved. The sandbox's own placeholders (a `.permissions.json` holding
`{}` while any sandbox runs, `sandbox_paths`) are no change: a file of tether's project
config holding exactly its placeholder text counts as absent.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..host import CHUNK, NotARegularFile, is_within, open_regular, resolve_path
from ..safety.project_config import PROJECT_CONFIG
from .config import ServerConfig

PROJECT_FILES = "the project's files"
"""The record's key for the project's fingerprint (see the module's text)."""
FINGERPRINT_LIMIT = 200_000
"""Entries fingerprinted at most; a bigger project cannot be checked and always asks."""
CANNOT_CHECK = "too many files to check"
HASH_LIMIT = 256 * 1024 * 1024
"""Bytes hashed at most: a bigger file is recorded by its size and modification time."""
ABSENT = "absent"

FileStates = Mapping[str, str]
"""{word of the entry: the state of the path it names}."""


def entry_files(config: ServerConfig, root: Path) -> dict[str, str]:
    """The state of each project path `config` names (see the module's text)."""
    base = str(root)
    project = os.path.realpath(root)
    states: dict[str, str] = {}
    for word in _path_words(config):
        try:
            reached = resolve_path(word, base)
        except (OSError, ValueError):
            states[word] = "cannot be resolved"
            continue
        written = os.path.normpath(os.path.join(base, word))
        if is_within(written, base) or is_within(reached, project):
            states[word] = _state(reached, written)
    if config.source == "project":
        states[PROJECT_FILES] = project_fingerprint(Path(project))
    return states


def project_fingerprint(root: Path) -> str:
    """A digest of every file and link under `root` (not `.git`): its path, inode, size and
    change time (and a link's target). The change time moves on every write, rename or
    chmod and cannot be set back by a command, unlike the modification time."""
    digest = hashlib.sha256()
    count = 0
    for folder, dirs, files in os.walk(root, onerror=lambda exc: None):
        dirs[:] = sorted(d for d in dirs if not (folder == str(root) and d == ".git"))
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]):
            if _placeholder(Path(folder, name), root):
                continue
            count += 1
            if count > FINGERPRINT_LIMIT:
                return CANNOT_CHECK
            digest.update(_entry_line(Path(folder, name), root))
    return f"{count} files, fingerprint {digest.hexdigest()}"


PLACEHOLDERS = {entry.name: entry.stand_in for entry in PROJECT_CONFIG if entry.kind == "file"}
"""The project config files a sandbox puts a placeholder in while it runs, and its text."""


def _placeholder(path: Path, root: Path) -> bool:
    """Whether `path` is one of tether's project config files holding exactly the text of
    its placeholder (what it holds while a sandbox runs and the real one does not exist)."""
    stand_in = PLACEHOLDERS.get(path.relative_to(root).as_posix())
    if stand_in is None or path.is_symlink():  # tether makes its placeholders as files
        return False
    try:
        with open_regular(path) as handle:
            return handle.read(len(stand_in) + 1) == stand_in
    except OSError:  # a link, a FIFO, gone: not a placeholder
        return False


def _entry_line(path: Path, root: Path) -> bytes:
    try:
        info = os.lstat(path)
        target = os.readlink(path) if os.path.islink(path) else ""
    except OSError:
        return f"{path.relative_to(root)}\0gone\n".encode("utf-8", "surrogateescape")
    line = (f"{path.relative_to(root)}\0{info.st_ino}\0{info.st_size}\0{info.st_ctime_ns}"
            f"\0{info.st_mode}\0{target}\n")
    return line.encode("utf-8", "surrogateescape")


def changes(approved: FileStates, now: FileStates) -> list[str]:
    """What differs between two records, one phrase per word: "srv.py changed"."""
    said = []
    for word in sorted(set(approved) | set(now)):
        before, after = approved.get(word, ABSENT), now.get(word, ABSENT)
        if before == after and after != CANNOT_CHECK:
            continue
        if word == PROJECT_FILES:
            continue
        if before == ABSENT:
            said.append(f"{word} appeared")
        elif after == ABSENT:
            said.append(f"{word} is gone")
        else:
            said.append(f"{word} changed")
    return said or _project_change(approved.get(PROJECT_FILES), now.get(PROJECT_FILES))


def _project_change(approved: str | None, now: str | None) -> list[str]:
    """The project's files, said only when no named file changed (a named file's change
    moves the fingerprint too)."""
    if now == CANNOT_CHECK:
        return ["the project has too many files to check"]
    return ["files in the project changed"] if approved != now else []


def _path_words(config: ServerConfig) -> Iterator[str]:
    if os.sep in config.command:  # a bare name is looked up in PATH, never in the project
        yield config.command
    for arg in config.args:
        if arg.startswith("-"):
            _, equals, value = arg.partition("=")
            if equals and value:
                yield value
        elif arg:
            yield arg


def _state(reached: str, written: str) -> str:
    where = "" if reached == written else f"{reached}: "
    return where + _content(Path(reached))


def _content(path: Path) -> str:
    try:
        with open_regular(path) as handle:
            info = os.fstat(handle.fileno())
            if info.st_size > HASH_LIMIT:
                return f"{info.st_size} bytes, modified {info.st_mtime_ns}"
            digest = hashlib.sha256()
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
            return f"sha256:{digest.hexdigest()}"
    except FileNotFoundError:
        return ABSENT
    except IsADirectoryError:
        return "a directory"
    except NotARegularFile as exc:
        return exc.kind
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
