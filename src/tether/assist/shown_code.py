"""Code shown in a reply instead of applied, and the call that would apply it.

Small models show the change in a fenced block and stop. Two shapes are offered back as a
call for the model to send (nothing is changed for it), each holding the model's own text as
it wrote it: a new version of a file it read or tried to edit, and the code of the new file
the request names. Nothing is merged or rebuilt by the harness.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from ..core.python_tree import parsed_python
from ..engine.turn_record import TurnEvidence
from ..tools.copy_check import working_lines
from .reply_shapes import (
    VERSION_MAX_CHARS,
    file_text,
    python_blocks,
    shown_new_file,
    shown_version,
)
from .request import new_code_file, reading_of
from .shown_definition import ShownDefinition, shown_definition

VERSION_SHOWN = (
    "Your reply shows a new version of {path} but did not write it, so the file is unchanged. "
    "If that version is right, write it: reply with only:\n{call}\n(Or change only the lines "
    "that differ, with edit_file.)"
)
NEW_FILE_SHOWN = (
    "Your reply shows the code of {path} but did not create it, so it does not exist yet. "
    "If that code is right, write it: reply with only:\n{call}"
)


def shown_file_version(e: TurnEvidence, text: str) -> tuple[str, str, str] | None:
    """(message, path, content) for a new version of a file the turn read or wrote, shown
    in a code block instead of written, or for the code of the new file the request names;
    None when the reply shows neither."""
    files = _read_or_written(e)
    version = shown_version(text, files) or _python_version(text, files)
    reading = reading_of(e)
    if version is not None and reading.keeps(version[0]):
        return None  # a file it was told to leave alone
    if version is not None and reading.new_file and not _named(reading.files, version[0]):
        return None  # asked for a new file, a model showed the file it read beside it, changed
    if version is None:
        created = shown_new_file(text, new_code_file(reading, e.root))
        if created is None or created[0] in e.written:
            return None
        return NEW_FILE_SHOWN, created[0], created[1]
    path, content = version
    old = _text_of(files, path)
    if not _would_run(old, path, content) or _quoted(old, content):
        return None  # a function shown alone is no whole file; the file quoted is no new one
    return VERSION_SHOWN, path, content


def _named(files: tuple[str, ...], shown: str) -> bool:
    """Whether `shown` (as the reply names it) is one of the project files the request names."""
    return os.path.normpath(shown) in files


def _text_of(files: dict[Path, str], shown: str) -> str | None:
    """The text now of the file the turn named `shown` (None: not one of them, or unreadable)."""
    path = next((p for p, named in files.items() if named == shown), None)
    return file_text(path, VERSION_MAX_CHARS) if path is not None else None


def _quoted(old: str | None, content: str) -> bool:
    """Whether the block is the file as it is, but for blank lines and comments (a model that
    quotes the file it copied, a comment naming it on top, shows no change to make)."""
    return old is not None and working_lines(old.encode()) == working_lines(content.encode())


def shown_definition_edit(e: TurnEvidence, text: str) -> ShownDefinition | None:
    """The new version of one function or class of a file the turn read or wrote, shown in a
    code block instead of edited in (shown_definition.py); never in a file the request keeps."""
    reading = reading_of(e)
    files = {path: named for path, named in _read_or_written(e).items() if not reading.keeps(named)}
    return shown_definition(text, files)


def _python_version(text: str, files: dict[Path, str]) -> tuple[str, str] | None:
    """(shown path, content) for a Python block that parses and defines every top-level
    function and class of exactly one Python file the turn read, differing from it: a
    stub filled in with its signature changed keeps too few of its lines for
    `shown_version`, yet is the whole module."""
    found: list[tuple[str, str]] = []
    for body in python_blocks(text):
        tree = parsed_python(body)
        if tree is None:
            continue
        for path, shown in files.items():
            old = file_text(path, VERSION_MAX_CHARS) if shown.endswith(".py") else None
            old_tree = parsed_python(old) if old is not None else None
            names = _defined_names(old_tree) if old_tree is not None else set()
            if names and names <= _defined_names(tree) and body.strip() != (old or "").strip():
                found.append((shown, body))
    return found[0] if len({shown for shown, _ in found}) == 1 and len(found) == 1 else None


def _read_or_written(e: TurnEvidence) -> dict[Path, str]:
    """The files the turn read or edited, and those it wrote (a script the model wrote, was
    told about, and then showed fixed in prose is one of them)."""
    files = dict(e.touched)
    if e.root is not None:
        for named in sorted(e.written):
            files.setdefault((e.root / named).resolve(), named)
    return files


def _would_run(old: str | None, shown: str, content: str) -> bool:
    """Whether a shown Python version can stand for the whole file it names: it parses, keeps
    every top-level function and class the file defines (one function shown fixed is no whole
    module: written as one, it takes the other functions out), and keeps importing the names
    it uses (a version that drops an import stops the program with an ImportError). Other
    kinds of file are not judged. `old`: the file's text now (None: not read or unreadable)."""
    if not shown.endswith(".py"):
        return True
    new_tree = parsed_python(content)
    if new_tree is None:
        return False
    old_tree = parsed_python(old) if old is not None else None
    if old_tree is None:
        return True
    if _defined_names(old_tree) - _defined_names(new_tree):
        return False
    bound = _imported_names(new_tree) | _defined_names(new_tree) | {
        n.id for n in ast.walk(new_tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used = {n.id for n in ast.walk(new_tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return not (_imported_names(old_tree) & used) - bound


def _defined_names(tree: ast.Module) -> set[str]:
    """The functions and classes a module defines at its top level."""
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _imported_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names
