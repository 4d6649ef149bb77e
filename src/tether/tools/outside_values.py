"""The constants a Python file reads from other files of the project, with their values.

A question about code ("how many times does it retry?") is often answered by a constant set in
another module: `fetch.py` loops `range(limits.MAX_ATTEMPTS + 1)` and the value is in
`limits.py`. A small model that has read only `fetch.py` answers with a number it sees there
(the 2 of `2 ** attempt`, a line number) instead of opening `limits.py`. read_file shows the
values such names have where they are defined, as an editor shows them on hover, so the answer
is in the result the model is looking at.

Only UPPER_CASE names bound once at the top of a project module to a short expression are
shown; the module is found as Python would find it from the file (relative imports from the
file's folder, absolute ones from the project root or its `src/`), and never outside the project
or past the deny rules.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from tether.core.toolspec import ToolContext, ToolError
from tether.host import read_small_file

from ..core.python_tree import parsed_python
from ._paths import display_path

VALUES_SHOWN = 6
VALUE_CHARS = 60
MODULE_BYTES = 256 * 1024
_CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*")


def outside_values_note(path: Path, text: str, ctx: ToolContext) -> str:
    """Lines naming each constant `text` (the Python file at `path`) takes from another project
    module, with its value and where it is set; "" when there are none."""
    found = outside_values(path, text, ctx)
    if not found:
        return ""
    return "\n[values this file reads from other files:\n" + "\n".join(map(str, found)) + "]"


class OutsideValue(NamedTuple):
    shown_name: str
    """The name as the file writes it (`limits.MAX_ATTEMPTS`)."""
    value: str
    """The source of its value where it is set."""
    module: str
    """The module that sets it, as a path from the project root."""
    line: int

    def __str__(self) -> str:
        return f"  {self.shown_name} = {self.value}  ({self.module} line {self.line})"


ParsedModules = dict[Path, "tuple[str, ast.Module] | None"]
"""Project modules read and parsed (None: unreadable), kept across calls that share them."""


def outside_values(
    path: Path, text: str, ctx: ToolContext, lines: set[int] | None = None,
    parsed: ParsedModules | None = None,
) -> list[OutsideValue]:
    """Each constant the Python file takes from another project module, with its value and
    where it is set; only those used on `lines` (1-based) when given. `parsed` carries the
    modules already read over several files (a search's hits read the same policy module)."""
    if path.suffix != ".py":
        return []
    tree = parsed_python(text)
    if tree is None:
        return []
    found: list[OutsideValue] = []
    parsed = {} if parsed is None else parsed  # each module read and parsed once
    for shown_name, module, name in _outside_names(tree, path, ctx, lines):
        if module not in parsed:
            parsed[module] = _parsed_module(module, ctx)
        value = _defined_value(parsed[module], name)
        if value is not None:
            line, expr = value
            found.append(OutsideValue(shown_name, expr, display_path(module, ctx.root), line))
        if len(found) == VALUES_SHOWN:
            break
    return found


def _outside_names(
    tree: ast.Module, path: Path, ctx: ToolContext, lines: set[int] | None
) -> Iterator[tuple[str, Path, str]]:
    """(name as the file writes it, module file, constant) for each constant used (on `lines`
    when given), once each, in the order of first use."""
    modules, names = _imports(tree, path, ctx)
    seen: set[str] = set()
    for node in ast.walk(tree):
        if lines is not None and getattr(node, "lineno", None) not in lines:
            continue
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and _CONSTANT.fullmatch(node.attr)):
            key, module, name = f"{node.value.id}.{node.attr}", modules[node.value.id], node.attr
        elif isinstance(node, ast.Name) and node.id in names:
            key, (module, name) = node.id, names[node.id]
        else:
            continue
        if key not in seen:
            seen.add(key)
            yield key, module, name


def _imports(tree: ast.Module, path: Path, ctx: ToolContext) -> tuple[dict[str, Path], dict[str, tuple[Path, str]]]:
    """Local names bound to project modules, and local names bound to constants of them."""
    modules: dict[str, Path] = {}
    names: dict[str, tuple[Path, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package_dir(path, node.module, node.level, ctx.root)
            if base is None:
                continue
            for alias in node.names:
                local = alias.asname or alias.name
                submodule = module_file(base / alias.name)
                if submodule is not None:
                    modules[local] = submodule
                elif _CONSTANT.fullmatch(alias.name) and (module := module_file(base)) is not None:
                    names[local] = (module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is None and "." in alias.name:
                    continue  # used as pkg.mod.NAME: not followed
                module = absolute_module(alias.name, ctx.root)
                if module is not None:
                    modules[alias.asname or alias.name] = module
    return modules, names


def package_dir(path: Path, module: str | None, level: int, root: Path) -> Path | None:
    """The folder (or module path without its suffix) an ImportFrom names."""
    parts = module.split(".") if module else []
    if level:
        base = path.parent
        for _ in range(level - 1):
            base = base.parent
        return base.joinpath(*parts)
    for top in (root, root / "src"):
        if parts and ((top / parts[0]).is_dir() or (top / f"{parts[0]}.py").is_file()):
            return top.joinpath(*parts)
    return None


def absolute_module(dotted: str, root: Path) -> Path | None:
    for top in (root, root / "src"):
        found = module_file(top.joinpath(*dotted.split(".")))
        if found is not None:
            return found
    return None


def module_file(stem: Path) -> Path | None:
    """`stem.py`, or the package `stem/__init__.py`, when it is a file."""
    for candidate in (stem.with_name(stem.name + ".py"), stem / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _parsed_module(module: Path, ctx: ToolContext) -> tuple[str, ast.Module] | None:
    """The module's source and tree; None when it may not be read or does not parse."""
    source = module_source(module, ctx)
    if source is None:
        return None
    tree = parsed_python(source)
    return None if tree is None else (source, tree)


def _defined_value(parsed: tuple[str, ast.Module] | None, name: str) -> tuple[int, str] | None:
    """(line, source of the value) where the parsed module binds `name` once at its top level to
    a short expression; None when it does not, or the module could not be read."""
    if parsed is None:
        return None
    source, tree = parsed
    bound = [node for node in tree.body if _binds(node, name)]
    if len(bound) != 1 or (value := _value_of(bound[0])) is None:
        return None
    expr = ast.get_source_segment(source, value) or ""
    if not expr or "\n" in expr or len(expr) > VALUE_CHARS:
        return None
    return bound[0].lineno, expr


def module_source(module: Path, ctx: ToolContext) -> str | None:
    try:
        resolved = ctx.resolve(str(module))
        resolved.relative_to(ctx.root.resolve())
    except (ValueError, OSError, ToolError):  # outside the project, a secret, a loop
        return None
    if not ctx.may_read(resolved):
        return None
    try:
        return read_small_file(resolved, MODULE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    return False


def _value_of(node: ast.stmt) -> ast.expr | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return node.value
    if isinstance(node, ast.AnnAssign):
        return node.value
    return None
