"""Command-line options a Python file adds and nothing reads.

Asked for a `--verbose` option, a small model adds `parser.add_argument("--verbose", ...)` and
stops: the option parses, and changes nothing. After a write
or an edit, the result names each argparse option of the file whose value no code in the file,
or in the Python files beside it, reads (`args.verbose`), so the model knows the job is half done.

A file that reads its options wholesale (`vars(args)`, `getattr(args, name)`) is trusted.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tether.core.python_tree import parsed_python
from tether.core.toolspec import ToolContext
from tether.host import read_small_file

from ._paths import display_path
from .file_text import SYNTAX_CHECK_CHARS

SIBLINGS_READ = 40
SIBLING_BYTES = 256 * 1024


def unread_options_note(path: Path, tree: ast.Module, ctx: ToolContext) -> str:
    """A line naming the options `text` adds that nothing reads ("" when there are none)."""
    unread = options_unread(path, tree, ctx)
    if not unread:
        return ""
    listed = ", ".join(f"{option} (args.{dest})" for option, dest in unread)
    return (f"\nWarning: {display_path(path, ctx.root)} adds {listed}, but no code reads it yet, so "
            "the option changes nothing. Use its value where the program does its work.")


def unread_options(path: Path, text: str, ctx: ToolContext) -> list[tuple[str, str]]:
    """(option, dest) for each argparse option the file adds whose value nothing reads."""
    if path.suffix not in (".py", ".pyw") or len(text) > SYNTAX_CHECK_CHARS:
        return []
    tree = parsed_python(text)
    return [] if tree is None else options_unread(path, tree, ctx)


def options_unread(path: Path, tree: ast.Module, ctx: ToolContext) -> list[tuple[str, str]]:
    """unread_options for the parsed file at `path`."""
    added = _added_options(tree)
    if not added or _reads_wholesale(tree):
        return []
    read = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    unread = [(option, dest) for option, dest in added if dest not in read]
    if unread:
        sibling_text = _siblings_text(path, ctx)
        unread = [(o, d) for o, d in unread if not re.search(rf"\.{re.escape(d)}\b", sibling_text)]
    return unread


def _added_options(tree: ast.Module) -> list[tuple[str, str]]:
    """(first long option, dest) of each `*.add_argument("--x", ...)` call."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        longs = [f for f in flags if f.startswith("--") and len(f) > 2]
        if not longs:
            continue
        dest = next((k.value.value for k in node.keywords if k.arg == "dest"
                     and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)), None)
        dest = dest or longs[0][2:].replace("-", "_")
        if dest.isidentifier() and dest != "help":
            found.append((longs[0], dest))
    return found


def _reads_wholesale(tree: ast.Module) -> bool:
    """The file reads its parsed options by name at run time (vars(args), getattr(args, x))."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("vars", "getattr"):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return True
    return False


def _siblings_text(path: Path, ctx: ToolContext) -> str:
    """The text of the other Python files in the file's folder (bounded), where the parsed
    options may be used."""
    texts: list[str] = []
    try:
        siblings = sorted(p for p in path.parent.glob("*.py") if p.resolve() != path.resolve())
    except OSError:
        return ""
    for sibling in siblings[:SIBLINGS_READ]:
        if not ctx.may_read(sibling):
            continue
        try:
            texts.append(read_small_file(sibling, SIBLING_BYTES).decode("utf-8", "replace"))
        except (OSError, ValueError):
            continue
    return "\n".join(texts)
