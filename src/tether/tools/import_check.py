"""Names a Python file imports from project modules that do not define them.

A small model adds `from pkg.text import normalize` to a test and answers, never writing
`normalize` itself; or it imports a helper it imagines (`from .utils import parse_row`). Python
says so only when something runs the file, and a small model often runs nothing. After a write
or an edit, the result says at once which imported names the project's own modules lack, as an
editor underlines them.

Only `from X import a, b` is checked, and only where X is a module file of the project (found
as `outside_values` finds it: relative to the file, or from the project root or its `src/`). A
module that builds names at run time (a star import, a module `__getattr__`) is taken to define
everything. Modules outside the project or past the deny rules are never read.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tether.core.python_tree import parsed_python
from tether.core.toolspec import ToolContext

from ._paths import display_path
from .file_text import SYNTAX_CHECK_CHARS
from .outside_values import module_file, module_source, package_dir

MISSING_SHOWN = 4
"""Missing names listed at the most (the first ones say enough)."""


def missing_imports_note(path: Path, tree: ast.Module, ctx: ToolContext) -> str:
    """A line for a write's or an edit's result naming each imported name the project module
    it comes from does not define ("" when there is none, or the file is not Python)."""
    missing = imported_but_missing(path, tree, ctx)
    if not missing:
        return ""
    lines = [f"  line {line}: {name} from {module} (not defined there)" for line, name, module in missing]
    return (f"\nWarning: {display_path(path, ctx.root)} imports names its project modules do not "
            "define yet, so it fails when it runs:\n" + "\n".join(lines[:MISSING_SHOWN])
            + "\nDefine each one where it is imported from, or fix the import.")


def missing_imports(path: Path, text: str, ctx: ToolContext) -> list[tuple[int, str, str]]:
    """(line, name, module as shown) for each `from X import name` whose project module X
    does not define `name`."""
    if path.suffix not in (".py", ".pyw") or len(text) > SYNTAX_CHECK_CHARS:
        return []
    tree = parsed_python(text)
    return [] if tree is None else imported_but_missing(path, tree, ctx)  # python_syntax_note says why


def imported_but_missing(path: Path, tree: ast.Module, ctx: ToolContext) -> list[tuple[int, str, str]]:
    """missing_imports for the parsed file at `path`."""
    found: list[tuple[int, str, str]] = []
    defined: dict[Path, set[str] | None] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package_dir(path, node.module, node.level, ctx.root)
        module = module_file(base) if base is not None else None
        if base is None or module is None or module.resolve() == path.resolve():
            continue
        if module not in defined:
            defined[module] = _top_level_names(module, ctx)
        names = defined[module]
        if names is None:
            continue
        for alias in node.names:
            if alias.name != "*" and alias.name not in names and module_file(base / alias.name) is None:
                found.append((node.lineno, alias.name, display_path(module, ctx.root)))
    return found


def _top_level_names(module: Path, ctx: ToolContext) -> set[str] | None:
    """The names a module binds at its top level (in any branch of a top-level if/try); None
    when it cannot be read or parsed, or makes names at run time."""
    source = module_source(module, ctx)
    tree = parsed_python(source)
    if tree is None:
        return None
    names: set[str] = set()
    for node in _top_level_statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if node.name == "__getattr__":
                return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        else:
            names.update(_bound_names(node))
    return names


def _top_level_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a module body, with those inside top-level if/try/with blocks."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, (ast.If, ast.With)):
            out.extend(_top_level_statements(node.body))
            out.extend(_top_level_statements(getattr(node, "orelse", [])))
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                out.extend(_top_level_statements(block))
    return out


def _bound_names(node: ast.stmt) -> set[str]:
    """Names an assignment-like statement binds (`A = B = 1`, `x: int`, `a, b = ...`, `for`)."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    names: set[str] = set()
    for target in targets:
        names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names
