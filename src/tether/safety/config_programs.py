"""The project files that the project's own configuration runs: the scripts an MCP server
entry or a hook command names (`python3 srv.py`, `./hooks/check.sh`).

tether starts MCP servers outside the sandbox, so a sandboxed command that edited
srv.py would run its code unconfined at the next start; the sandbox keeps these files
read-only (`sandbox_paths`). Every `command` string and `args` list in the files of
`RUNS_NAMED_FILES` counts, read as a shell would split it (a quoted word holding a
command line, as in `sh -c "python3 srv.py"`, is split too); a word naming an existing
regular file in the project is kept, and so is the program a bare command name finds on
PATH when that lies in the project. Folders are left alone (a server given `src` as the
folder it serves must not make `src` read-only), and so are modules a script imports:
only what the entry names. A file that cannot be read or parsed names nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..host import is_within, read_small_file, resolve_path
from .project_config import RUNS_NAMED_FILES
from .shell_words import lex_words

MAX_CONFIG_BYTES = 1024 * 1024
MAX_DEPTH = 3
"""How many times a quoted word is split again as a command line of its own."""


def named_programs(root: Path, search_path: str | None = None) -> list[Path]:
    """The existing regular files inside `root` (a real path) that the project's server
    entries and hook commands name, resolved as the kernel resolves them; `search_path`
    is the PATH a bare command name is looked up in (the process's own by default)."""
    path = os.environ.get("PATH", "") if search_path is None else search_path
    # a relative PATH entry is taken from the folder the program starts in: the root
    path = os.pathsep.join(os.path.join(root, entry) for entry in path.split(os.pathsep))
    found: dict[Path, None] = {}
    for name in RUNS_NAMED_FILES:
        for command, words in _commands(_read_json(root / name)):
            for candidate in _candidates(root, command, words, path):
                found.setdefault(candidate)
    return list(found)


def _read_json(file: Path) -> Any:
    try:
        return json.loads(read_small_file(file, MAX_CONFIG_BYTES))
    except (OSError, ValueError):
        return None  # absent, not a regular file, too large or not JSON: it names nothing


def _commands(data: Any) -> Iterator[tuple[str, list[str]]]:
    """(the command as written, its words) for every `command` string in `data`, with the
    `args` next to it; any nesting, so both the server list and the hooks table are read."""
    if isinstance(data, dict):
        command = data.get("command")
        if isinstance(command, str):
            args = data.get("args")
            extra = [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
            yield command, extra
        for value in data.values():
            yield from _commands(value)
    elif isinstance(data, list):
        for value in data:
            yield from _commands(value)


def _candidates(root: Path, command: str, args: list[str], search_path: str) -> Iterator[Path]:
    words = _split(command, MAX_DEPTH)
    programs = {command, *(words[:1])}  # a server's command is one program name, spaces and all
    for program in programs:
        found = _on_path(program, search_path) if "/" not in program else None
        if found is not None:
            yield from _project_file(root, found)
    for word in (command, *words, *args, *(w for a in args for w in _split(a, MAX_DEPTH))):
        yield from _project_file(root, word)
        if word.startswith("-") and "=" in word:  # --script=srv.py
            yield from _project_file(root, word.split("=", 1)[1])


def _split(line: str, depth: int) -> list[str]:
    """The words of a command line, and those of any word that is a command line itself."""
    words = [w.text for w in lex_words(line) or ()]
    if depth <= 1:
        return words
    nested = [inner for w in words if any(c.isspace() for c in w) for inner in _split(w, depth - 1)]
    return words + nested


def _on_path(name: str, search_path: str) -> str | None:
    return shutil.which(name, path=search_path) if name else None


def _project_file(root: Path, word: str) -> Iterator[Path]:
    if not word or "${" in word or "\0" in word:
        return
    try:
        resolved = resolve_path(os.path.expanduser(word), str(root))
        is_file = stat.S_ISREG(os.stat(resolved).st_mode)
    except (OSError, ValueError):
        return
    if is_file and is_within(resolved, str(root)) and resolved != str(root):
        yield Path(resolved)
