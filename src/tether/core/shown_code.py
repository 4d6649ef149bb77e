"""Code shown in a reply instead of applied, and the call that would apply it.

Small models show the change in a fenced block and stop. Three shapes are offered back as a
call for the model to send (nothing is changed for it): a new version of a file it read or
tried to edit (write_file), the code of the new file the request names (write_file), and a
Python function fixed in prose after a failing test, often in a file it never opened
("Here's the corrected version of the `median` function: ..."). For the last, when one
file of the project defines that function (a test file is left out when the request keeps
the tests), the edit_file call that replaces it there is written out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .python_tree import parsed_python
from .reply_shapes import (
    CODE_BLOCK,
    VERSION_MAX_CHARS,
    file_text,
    is_test_path,
    leaves_tests,
    shown_new_file,
    shown_version,
)

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

_PYTHON_LABELS = frozenset({"python", "py", ""})
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)[ \t]*\(", re.M)
_HIT = re.compile(r"^(.+?):(\d+): ", re.M)
MAX_FILE_CHARS = 100_000


@dataclass(frozen=True)
class FunctionFix:
    name: str
    path: str
    """The file, relative to the root."""
    old: str
    """The function as the file has it."""
    new: str
    """The block's function, indented as the file's."""


Finder = Callable[[str], str]
"""The project search (TurnWatch.find): matching lines as "path:line: text", under the rules."""


def shown_function_fix(text: str, root: Path, find: Finder, skip_tests: bool) -> FunctionFix | None:
    """The fix a reply's Python code block shows for a function one project file defines
    (the first block function that is found and differs); None when there is none."""
    for body in (m.group(2) for m in CODE_BLOCK.finditer(text) if m.group(1).lower() in _PYTHON_LABELS):
        for found in _DEF.finditer(body):
            fix = _fix_for(found.group(1), _function_at(body, found.start()), root, find, skip_tests)
            if fix is not None:
                return fix
    return None


def _fix_for(name: str, shown: str, root: Path, find: Finder, skip_tests: bool) -> FunctionFix | None:
    places = _definitions(name, root, find, skip_tests)
    if len(places) != 1:
        return None  # nowhere, or several: which one is meant is a guess
    path, old = places[0]
    indent = old[: len(old) - len(old.lstrip())]
    new = _reindented(shown, indent)
    if " ".join(new.split()) == " ".join(old.split()):
        return None  # the function as it is: nothing to apply
    return FunctionFix(name, path, old, new)


def _definitions(name: str, root: Path, find: Finder, skip_tests: bool) -> list[tuple[str, str]]:
    """(file, function text) for each definition of `name` in the project's Python files.
    The search finds them, so only files its rules let it read are read here."""
    wanted = re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(")
    found = []
    for hit in _HIT.finditer(find(rf"^\s*(async\s+)?def\s+{re.escape(name)}\s*\(")):
        relative, number = hit.group(1), int(hit.group(2))
        if not relative.endswith(".py") or (skip_tests and is_test_path(relative)):
            continue
        text = file_text(root / relative, MAX_FILE_CHARS)
        if text is None:
            continue
        lines = text.split("\n")
        if number <= len(lines) and wanted.match(lines[number - 1]):
            start = sum(len(line) + 1 for line in lines[: number - 1])
            found.append((relative, _function_at(text, start)))
    return found


def _function_at(text: str, start: int) -> str:
    """The function whose `def` line starts at `start`: to the last line before the next one
    indented no deeper than the def (blank lines at its end left out)."""
    lines = text[start:].split("\n")
    indent = len(lines[0]) - len(lines[0].lstrip())
    taken = [lines[0]]
    for line in lines[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        taken.append(line)
    while taken and not taken[-1].strip():
        taken.pop()
    return "\n".join(taken)


def _reindented(function: str, indent: str) -> str:
    """The function moved to `indent` (a method shown at the top level of a block)."""
    lines = function.split("\n")
    own = len(lines[0]) - len(lines[0].lstrip())
    return "\n".join(indent + line[own:] if line.strip() else "" for line in lines)


FUNCTION_SHOWN = (
    "Your reply shows a new version of {name}() but did not change {path}, so the code is "
    "unchanged. If that version is right, put it in place: reply with only:\n{call}"
)


def function_fix_nudge(watch: TurnWatch, text: str) -> str | None:
    """FUNCTION_SHOWN with the edit_file call for the function a reply's code block fixes
    (once per turn, never for a question); None when it shows none, or cannot offer the call."""
    if watch.root is None or watch.find is None or watch.show_call is None or "edit_file" not in watch.tools:
        return None
    if "```" not in text or "function" in watch.sent or watch.asks_question():
        return None  # an answer to a question may quote the code it explains
    fix = shown_function_fix(text, watch.root, watch.find, skip_tests=leaves_tests(watch.request))
    if fix is None or not watch.once("function"):
        return None
    call = watch.offer("edit_file", {"filepath": fix.path, "old_content": fix.old, "new_content": fix.new})
    return FUNCTION_SHOWN.format(name=fix.name, path=fix.path, call=call)


VERSION_SHOWN = (
    "Your reply shows a new version of {path} but did not write it, so the file is unchanged. "
    "If that version is right, write it: reply with only:\n{call}\n(Or change only the lines "
    "that differ, with edit_file.)"
)
NEW_FILE_SHOWN = (
    "Your reply shows the code of {path} but did not create it, so it does not exist yet. "
    "If that code is right, write it: reply with only:\n{call}"
)


def version_nudge(watch: TurnWatch, text: str) -> str | None:
    """The nudge for a new version of a file shown in a code block instead of written,
    or for the code of the new file the request names (once per turn), with the
    write_file call that would write it."""
    if watch.show_call is None or "write_file" not in watch.tools or watch.asks_question():
        return None
    if watch.asks_to_run():
        return None  # a program to run as it is: its code shown again is no change to make
    files = _read_or_written(watch)
    version = shown_version(text, files)
    if version is not None and leaves_tests(watch.request) and is_test_path(version[0]):
        return None  # the test it was told to leave alone (the write would be refused)
    if version is None:
        created = shown_new_file(text, watch.request, watch.root)
        if created is None or created[0] in watch.written or not watch.once("version"):
            return None
        call = watch.offer("write_file", {"filepath": created[0], "content": created[1]})
        return NEW_FILE_SHOWN.format(path=created[0], call=call)
    path, content = version
    if not _would_run(files, path, content) or not watch.once("version"):
        return None  # a function shown alone is no whole file: function_fix_nudge offers its edit
    watch.read_paths.update(p for p, shown in watch.touched.items() if shown == path)
    call = watch.offer("write_file", {"filepath": path, "content": content})
    return VERSION_SHOWN.format(path=path, call=call)


def _read_or_written(watch: TurnWatch) -> dict[Path, str]:
    """The files the turn read or edited, and those it wrote (a script the model wrote, was
    told about, and then showed fixed in prose is one of them)."""
    files = dict(watch.touched)
    if watch.root is not None:
        for named in sorted(watch.written):
            files.setdefault((watch.root / named).resolve(), named)
    return files


def _would_run(files: dict[Path, str], shown: str, content: str) -> bool:
    """Whether a shown Python version can stand for the whole file it names: it parses, keeps
    every top-level function and class the file defines (one function shown fixed is no whole
    module: written as one, it takes the other functions out), and keeps importing the names
    it uses (a version that drops an import stops the program with an ImportError). Other
    kinds of file are not judged."""
    if not shown.endswith(".py"):
        return True
    new_tree = parsed_python(content)
    if new_tree is None:
        return False
    path = next((p for p, named in files.items() if named == shown), None)
    old_tree = parsed_python(file_text(path, VERSION_MAX_CHARS) or "") if path is not None else None
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
