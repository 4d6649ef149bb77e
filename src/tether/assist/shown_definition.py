"""A new version of one function or class shown in a reply, and the edit that puts it in place.

Asked to fix a failing test, a small model often finds the fix and shows it as the one
function it changed, in a fenced block, with no call ("Here's the corrected version of the
`page_count` function: ..."). Not a whole file, so it is not the whole-file version the turn
takes as its write (shown_code.py); left there, the check fails again with nothing changed
and the model shows the same fix again. When the block defines exactly one function or class
and the files the turn read define that name exactly once (a top-level function or class, or
one class's method), the block is that definition's new text: the edit is `edit_file` with the
definition as the file has it for old_content and the model's block, at the definition's
indentation, for new_content. The harness picks nothing else: no place is guessed (a new
name matches nothing), no other text is merged, and a block that would drop a class's
methods or an import it needs, or leave the file unparsable, is not taken.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..core.python_tree import parsed_python
from .reply_shapes import VERSION_MAX_CHARS, file_text, python_blocks

DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class ShownDefinition:
    """The edit a reply's block makes: in `path` (as the turn named it), `old` becomes `new`."""

    path: str
    name: str
    old: str
    new: str


def shown_definition(text: str, files: dict[Path, str]) -> ShownDefinition | None:
    """The one definition a Python block of `text` gives a new version of, in the one file of
    `files` (resolved path -> the path as the turn named it) that defines that name once."""
    found = [edit for body in python_blocks(text) if (edit := _definition_edit(body, files))]
    return found[0] if len(found) == 1 else None


def _definition_edit(body: str, files: dict[Path, str]) -> ShownDefinition | None:
    tree = parsed_python(textwrap.dedent(body))
    shown = _only_definition(tree) if tree is not None else None
    if tree is None or shown is None:
        return None
    places = [place for path, named in files.items() if named.endswith(".py")
              for place in _places(path, named, shown.name)]
    if len(places) != 1:
        return None
    named, source, old_node, indent = places[0]
    if not _keeps_what_it_had(old_node, shown) or not _imports_known(tree, parsed_python(source)):
        return None
    old = _segment(source, old_node)
    new = textwrap.indent(_segment(textwrap.dedent(body), shown).rstrip("\n") + "\n", indent)
    if old.strip() == new.strip() or source.count(old) != 1:
        return None
    if parsed_python(source.replace(old, new, 1)) is None:
        return None
    return ShownDefinition(named, shown.name, old, new)


def _only_definition(tree: ast.Module) -> DefNode | None:
    """The block's one function or class; imports and a docstring may come with it."""
    rest = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))
            and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    if len(rest) != 1 or not isinstance(rest[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None
    return rest[0]


def _places(path: Path, named: str, name: str) -> list[tuple[str, str, DefNode, str]]:
    """Where the file defines `name`: (the path as named, its text, the definition, the
    indentation its text has there) for a top-level function or class, or a method of a
    top-level class."""
    source = file_text(path, VERSION_MAX_CHARS)
    tree = parsed_python(source)
    if source is None or tree is None:
        return []
    places: list[tuple[str, str, DefNode, str]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            places.append((named, source, node, ""))
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name == name:
                    places.append((named, source, member, " " * member.col_offset))
    return places


def _keeps_what_it_had(old: DefNode, new: DefNode) -> bool:
    """A function for a function; a class for a class that still defines every method the
    old one did (a class shown with only the method that changed is not the whole class)."""
    if isinstance(old, ast.ClassDef) != isinstance(new, ast.ClassDef):
        return False
    if not isinstance(old, ast.ClassDef) or not isinstance(new, ast.ClassDef):
        return True
    return _members(old) <= _members(new)


def _members(node: ast.ClassDef) -> set[str]:
    return {m.name for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _imports_known(block: ast.Module, file: ast.Module | None) -> bool:
    """Every name the block imports, the file imports too: the edit replaces the definition
    only, so an import only the block has would be lost."""
    if file is None:
        return False
    return _imported(block) <= _imported(file)


def _imported(tree: ast.Module) -> set[str]:
    return {(alias.asname or alias.name) for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}


def _segment(source: str, node: DefNode) -> str:
    """The definition's lines as the text has them, its decorators included."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    lines = source.splitlines(keepends=True)
    return "".join(lines[first - 1 : node.end_lineno])
