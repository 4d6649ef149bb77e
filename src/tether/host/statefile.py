"""Reading the files tether parses from disk, so that a broken one fails safe.

Every such file (config.toml, the rules files, trusted.json, the last connection,
...) is read through `read_json_file` or `read_toml_file`: a file that is absent is
simply empty, and one that cannot be used (a directory, FIFO or device in its place, no
permission, too large, bytes that are not UTF-8, a syntax error, the wrong shape) comes
back with a `problem` that names the path and, where there is one, the line. Nothing here
raises for a bad file, and nothing waits on one: the bytes come from `read_file_bytes`
(a regular file only, bounded) or from the `reader` a loader passes (its `LoaderGate`).

A state file that failed to parse is never overwritten: `write_json_state` refuses
with `StateFileError` and the file stays exactly as it was, for the user to fix or
move away (the loss of what it held would otherwise go unnoticed).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

from .atomic import atomic_write_json
from .filereads import file_problem, read_file_bytes

ShapeCheck = Callable[[Any], str]
"""Says what is wrong with a parsed value's shape ("" when it is right)."""
Reader = Callable[[Path], bytes]
"""A file's bytes; FileNotFoundError when absent, another OSError (one line) when unusable."""


class StateFileError(OSError):
    """A state file cannot be updated because what is in it now could not be read."""


@dataclass(frozen=True)
class LoadedFile:
    path: Path
    data: Any = None
    """The parsed value; None when the file is absent or has a problem."""
    problem: str = ""
    """Why the file could not be used, naming it: "" when it is fine or absent."""
    exists: bool = False

    @property
    def broken(self) -> bool:
        return bool(self.problem)


def read_json_file(
    path: Path, check: ShapeCheck | None = None, reader: Reader = read_file_bytes
) -> LoadedFile:
    """A JSON file's value, or its problem; an absent file is not a problem."""
    return _read(Path(path), _parse_json, check, reader)


def read_toml_file(
    path: Path, check: ShapeCheck | None = None, reader: Reader = read_file_bytes
) -> LoadedFile:
    return _read(Path(path), _parse_toml, check, reader)


def write_json_state(path: Path, data: Any, loaded: LoadedFile, *, secret: bool = False) -> None:
    """Write `data` over a state file whose current contents were read as `loaded`.

    Raises StateFileError, touching nothing, when that read found a problem: the file
    is kept as it is instead of being replaced by what this run happens to know."""
    if loaded.broken:
        raise StateFileError(f"{loaded.problem}. It was kept as it is and nothing was saved; "
                             "fix it or move it away.")
    atomic_write_json(Path(path), data, secret=secret)


def dangling_link(path: Path) -> str:
    """Why `path` is not simply absent: it is a symbolic link to nothing ("" when it is not).

    Such a file is kept elsewhere (a dotfiles checkout, another disk) and is missing now:
    reading it as empty would drop what it holds (a rules file's deny rules), and writing
    would create a file where the link points."""
    if not os.path.islink(path):
        return ""
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return f"{path} is a symbolic link to {target}, which does not exist"


def _read(
    path: Path, parse: Callable[[str], Any], check: ShapeCheck | None, reader: Reader
) -> LoadedFile:
    try:
        raw = reader(path)
    except FileNotFoundError:
        dangling = dangling_link(path)
        return LoadedFile(path, problem=dangling, exists=True) if dangling else LoadedFile(path)
    except OSError as exc:
        return LoadedFile(path, problem=str(file_problem(path, exc)), exists=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        byte = raw[exc.start]
        return LoadedFile(
            path, problem=f"{path} is not UTF-8 text (byte 0x{byte:02x} on line {line})",
            exists=True,
        )
    try:
        data = parse(text)
    except ValueError as exc:  # JSONDecodeError and TOMLDecodeError both are
        return LoadedFile(path, problem=f"{path} {_syntax_problem(exc)}", exists=True)
    wrong = check(data) if check is not None else ""
    if wrong:
        return LoadedFile(path, problem=f"{path} {wrong}", exists=True)
    return LoadedFile(path, data, exists=True)


def _parse_json(text: str) -> Any:
    return json.loads(text)


def _parse_toml(text: str) -> Any:
    return tomllib.loads(text)


def _syntax_problem(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
    return f"is not valid TOML ({exc})"  # tomllib's message names the line and column
