"""Outlines of source files: classes, functions and methods with their signatures and
line ranges, no bodies.

With the `ast` extra an outline comes from the language's tags query (the definitions
its grammar's own authors mark), so one implementation serves every grammar. Without
it, Python files get theirs from the standard `ast` module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .ast_grammars import Grammars

SIGNATURE_CAP = 200
OUTLINE_KINDS = frozenset({"class", "function", "method", "interface", "module", "type", "macro"})
"""Definition kinds an outline shows (constants and variables would crowd it)."""
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Symbol:
    kind: str
    name: str
    signature: str
    start: int
    """First line, 1-based."""
    end: int
    """Last line, 1-based."""
    depth: int = 0
    """How many other outline symbols contain this one."""


def tree_sitter_outline(grammars: Grammars, language: str, source: bytes) -> list[Symbol]:
    """The definitions of a file in source order, nested by containment."""
    tree = grammars.parse(language, source)
    found: dict[tuple[int, int], tuple[str, str, Any]] = {}
    for _, captures in grammars.matches(grammars.tags_query(language), tree.root_node):
        for capture, nodes in captures.items():
            kind = capture.removeprefix("definition.")
            if kind == capture or kind not in OUTLINE_KINDS or not captures.get("name"):
                continue
            node = whole_definition(nodes[0])
            name = captures["name"][0].text.decode("utf-8", "replace")
            found.setdefault((node.start_byte, node.end_byte), (kind, name, node))
    spans = sorted(found, key=lambda span: (span[0], -span[1]))
    return _nested(
        (found[span][0], found[span][1], node_signature(found[span][2]),
         found[span][2].start_point[0] + 1, found[span][2].end_point[0] + 1)
        for span in spans
    )


def node_signature(node: Any) -> str:
    """The definition's text up to its body (its first line when it has no body field)."""
    body = node.child_by_field_name("body")
    text: bytes = node.text or b""
    if body is not None and body.start_byte > node.start_byte:
        head = text[: body.start_byte - node.start_byte]
    else:
        head = text.split(b"\n", 1)[0]
    return _compact(head.decode("utf-8", "replace"))


def whole_definition(node: Any) -> Any:
    """C and C++ tag a function's declarator (`add(int a)`); its definition holds the
    return type too."""
    while node.type.endswith("declarator") and node.parent is not None:
        node = node.parent
    return node


def _compact(text: str) -> str:
    text = _SPACES.sub(" ", text).strip().rstrip("{:;").rstrip()
    return text if len(text) <= SIGNATURE_CAP else text[:SIGNATURE_CAP] + "..."


def _nested(items: Iterable[tuple[str, str, str, int, int]]) -> list[Symbol]:
    """Symbols with their depth; a function directly inside a class is a method."""
    symbols: list[Symbol] = []
    open_: list[Symbol] = []
    for kind, name, signature, start, end in items:
        while open_ and not (open_[-1].start <= start and end <= open_[-1].end):
            open_.pop()
        if kind == "function" and open_ and open_[-1].kind in ("class", "interface"):
            kind = "method"
        symbol = Symbol(kind, name, signature, start, end, len(open_))
        symbols.append(symbol)
        open_.append(symbol)
    return symbols


# --- the standard library's fallback, for Python ---------------------------------


def python_outline(source: str | ast.Module) -> list[Symbol]:
    """Classes and functions from the standard `ast` module (source text, or the tree of it
    already parsed). Raises SyntaxError."""
    tree = ast.parse(source) if isinstance(source, str) else source
    return _nested(_python_definitions(tree.body))


def _python_definitions(body: list[ast.stmt]) -> Iterable[tuple[str, str, str, int, int]]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
            signature = f"class {node.name}({bases})" if bases else f"class {node.name}"
            yield "class", node.name, signature, node.lineno, _end(node)
            yield from _python_definitions(node.body)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield "function", node.name, _python_signature(node), node.lineno, _end(node)
            yield from _python_definitions(node.body)


def _python_signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return _compact(f"{prefix} {node.name}({ast.unparse(node.args)}){returns}")


def _end(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


# --- rendering ----------------------------------------------------------------------


def render_outline(symbols: list[Symbol], heading: str) -> str:
    """One line per symbol, indented by depth: `signature  [L3-40]`."""
    if not symbols:
        return f"{heading}\n(no classes or functions found)"
    lines = [heading]
    lines += [f"{'  ' * s.depth}{s.signature}  [L{s.start}-{s.end}]" for s in symbols]
    return "\n".join(lines)
