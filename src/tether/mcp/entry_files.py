"""The project files a server entry runs, recorded so an approval covers their content.

Approving `python3 srv.py` approves what srv.py says at that moment; a sandboxed command
may rewrite srv.py later, and the server runs outside the sandbox. So an approval keeps,
beside the hash of the entry, the state of every path the entry names in the project:
the command when it is a path, each argument, and the value of an `--option=value`.
A word counts when the path it names lies in the project as written (relative ones start
at the project, the server's working directory) or as the kernel resolves it. Its state
is where it leads and what is there: a content hash, "absent", "a directory", "a FIFO
(named pipe)". Any difference, a retargeted symbolic link included, asks again.

What these files import in turn (a module next to srv.py, the package `python3 -m pkg`
runs, `node_modules`) is neither recorded here nor kept read-only by the sandbox
(`config_programs` protects only what the entry names): a sandboxed command can still
change it, and the approved server then runs that code unconfined.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..safety.paths import is_within, resolve_path
from ..safety.regular_files import CHUNK, NotARegularFile, open_regular
from .config import ServerConfig

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
    return states


def changes(approved: FileStates, now: FileStates) -> list[str]:
    """What differs between two records, one phrase per word: "srv.py changed"."""
    said = []
    for word in sorted(set(approved) | set(now)):
        before, after = approved.get(word, ABSENT), now.get(word, ABSENT)
        if before == after:
            continue
        if before == ABSENT:
            said.append(f"{word} appeared")
        elif after == ABSENT:
            said.append(f"{word} is gone")
        else:
            said.append(f"{word} changed")
    return said


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
