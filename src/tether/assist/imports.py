"""The project's code a named test file imports: what the test tests.

Asked "tests/test_core.py fails; fix the code", a small model reads the test (the harness
reads it first, as a file the request names) and then edits the test, describes the fix in
prose, or guesses the code's path: the code under test was never in front of it. A test file
names that code itself, in its imports, so the files it imports from the project are read
first too, after the named ones (aider adds the files a request's files refer to in the same
way). Read without running anything: Python's imports parsed with `ast`, JavaScript's
relative `require`/`import` paths read by their shape. Only files the project has count, and
never another test file.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from .reply_shapes import file_text, is_test_path

SOURCE_LIMIT = 256 * 1024
"""A test file bigger than this is not parsed for its imports."""
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx")
_JS_IMPORT = re.compile(
    r"""(?:\brequire\s*\(\s*|\bfrom\s+|\bimport\s+|\bimport\s*\(\s*)['"](\.{1,2}/[^'"\s]+)['"]"""
)


def tested_files(root: Path, named: Sequence[str], project_files: Iterable[str]) -> list[str]:
    """The project files the named test files import, in the order they import them (each
    once, none of the named ones, no test file)."""
    known = set(project_files)
    found: list[str] = []
    for name in named:
        if not is_test_path(name):
            continue
        text = file_text(root / name, SOURCE_LIMIT)
        if text is None:
            continue
        for candidate in _imported(name, text):
            if candidate in known and candidate not in named and candidate not in found \
                    and not is_test_path(candidate):
                found.append(candidate)
    return found


def _imported(name: str, text: str) -> list[str]:
    """The project paths `name`'s imports may be, most likely first."""
    if name.endswith(".py"):
        return _python_imports(name, text)
    if name.endswith(_JS_SUFFIXES):
        return _js_imports(name, text)
    return []


def _python_imports(name: str, text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    here = posixpath.dirname(name)
    paths: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                paths += _module_paths("", alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = _relative_base(here, node.level) if node.level else ""
            module = node.module or ""
            paths += _module_paths(base, module)
            for alias in node.names:  # `from pkg import module`
                paths += _module_paths(base, f"{module}.{alias.name}" if module else alias.name)
    return paths


def _relative_base(here: str, level: int) -> str:
    base = here
    for _ in range(level - 1):
        base = posixpath.dirname(base)
    return base


def _module_paths(base: str, dotted: str) -> list[str]:
    if not dotted:
        return [posixpath.join(base, "__init__.py")] if base else []
    stem = posixpath.join(base, *dotted.split("."))
    paths = [f"{stem}.py", posixpath.join(stem, "__init__.py")]
    return paths + ([f"src/{path}" for path in paths] if not base else [])


def _js_imports(name: str, text: str) -> list[str]:
    here = posixpath.dirname(name)
    paths: list[str] = []
    for relative in _JS_IMPORT.findall(text[:SOURCE_LIMIT]):
        stem = posixpath.normpath(posixpath.join(here, relative))
        if stem.startswith("../"):
            continue  # outside the project
        paths += [stem, *(stem + suffix for suffix in _JS_SUFFIXES),
                  *(posixpath.join(stem, "index" + suffix) for suffix in _JS_SUFFIXES)]
    return paths
