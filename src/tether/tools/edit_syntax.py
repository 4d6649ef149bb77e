"""The one-mode edit_file's guard against an edit that breaks a Python file.

A small model fixing a function copies only its first line into old_content and writes the
whole new function as new_content (`def mean(values):` -> `def mean(*values): return
sum(values) / len(values)`): the old body stays under the new one, the file no longer
parses, and the model, told so afterwards, answers that it is done. Before such
an edit is written:

- when old_content is one `def`/`class` line of the file and new_content defines the same
  name, and the edit as sent would break the file or leave the old body as dead code after
  the new one's return, the whole definition is replaced (decorators kept), if that leaves
  the file valid;
- otherwise an edit that would turn a valid Python file into an invalid one is refused with
  the error, and the file stays as it was.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.python_tree import parsed_python
from ..core.toolspec import Tool, ToolContext, ToolError
from .edit_repair import repaired_edit

if TYPE_CHECKING:
    from .params import EditFileParams

BROKEN_EDIT = (
    "Not changed: this edit would leave {path} invalid Python ({error}), so the file was left as "
    "it was. Check the indentation of new_content and that old_content holds every line you "
    "replace (a whole function when you rewrite one)."
)
WHOLE_DEFINITION = (
    "old_content held only the first line of {name}(), and new_content is a new version of all of "
    "it, so the whole {kind} (lines {first}-{last}) was replaced:\n"
)
CHECK_CHARS = 1_000_000
_HEADER = re.compile(r"\s*(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)")


def syntax_guard(full: Tool, params: EditFileParams, ctx: ToolContext, text: str, path: Path) -> Any:
    """The result of the repaired edit (whole definition), None to let the edit run as sent,
    or ToolError when the edit as sent would break a file that parses now."""
    if path.suffix not in (".py", ".pyw") or not text or len(text) > CHECK_CHARS:
        return None
    old, new = params.old_content or "", params.new_content
    before = parsed_python(text) if text.count(old) == 1 else None
    if before is None:
        return None
    try:
        after: ast.Module | None = ast.parse(text.replace(old, new, 1))
    except SyntaxError as err:
        after, error = None, f"{err.msg}, line {err.lineno}" if err.lineno else err.msg
    except ValueError:
        after, error = None, "a NUL byte"
    if after is not None and _dead_ends(after) <= _dead_ends(before):
        return None  # valid, and no old body left as dead code under a new one
    whole = _whole_definition(full, params, ctx, text, before)
    if whole is not None or after is not None:
        return whole
    raise ToolError(BROKEN_EDIT.format(path=params.filepath, error=error))


def _dead_ends(tree: ast.Module) -> int:
    """Functions with statements after a top-level return or raise: the old body left under a
    new one that returns."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ends = [k for k, stmt in enumerate(node.body) if isinstance(stmt, (ast.Return, ast.Raise))]
            count += bool(ends) and ends[0] < len(node.body) - 1
    return count


def _whole_definition(full: Tool, params: EditFileParams, ctx: ToolContext, text: str, tree: ast.Module) -> Any:
    """The edit that replaces the whole definition whose first line old_content is, when
    new_content defines the same name and the result parses; None otherwise."""
    old = (params.old_content or "").strip("\n")
    header, defines = _HEADER.match(old), _HEADER.match(params.new_content)
    if "\n" in old or header is None or defines is None or header.group(2) != defines.group(2):
        return None
    lines = text.splitlines(keepends=True)
    start = text[: text.index(old)].count("\n") + 1
    node = next((n for n in ast.walk(tree) if isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.lineno == start), None)
    if node is None or node.end_lineno is None:
        return None
    indent = re.match(r"[ \t]*", lines[start - 1]).group(0)  # type: ignore[union-attr]
    block = "".join(lines[start - 1 : node.end_lineno])
    replacement = _indented(params.new_content.strip("\n"), indent) + ("\n" if block.endswith("\n") else "")
    if text.count(block) != 1 or parsed_python(text.replace(block, replacement, 1)) is None:
        return None
    note = WHOLE_DEFINITION.format(name=node.name, kind="class" if header.group(1) == "class" else "function",
                                   first=start, last=node.end_lineno)
    return repaired_edit(full, ctx, params.filepath, block, replacement, note)


def _indented(code: str, indent: str) -> str:
    """`code` moved to start at `indent` when its first line starts further left."""
    current = re.match(r"[ \t]*", code).group(0)  # type: ignore[union-attr]
    if len(current) >= len(indent):
        return code
    extra = indent[len(current):]
    return "\n".join(extra + line if line.strip() else line for line in code.split("\n"))
