"""The repair of an edit whose old_content is the file's lines at another indentation.

A small model re-indents what it copies: a JSON file indented by two spaces comes back in
old_content indented by four, a method's lines lose their class's indentation. When the
lines of old_content, each stripped of its leading whitespace, are the file's lines in
exactly one place, that is the place meant. new_content is moved to the file's indentation
by the same rule that maps old_content's onto the file's (each indentation old_content uses
becomes the one the file has there; one it does not use follows the same scale or shift),
and the result says so. When the rule is not one scale or shift, nothing is guessed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.toolspec import Tool, ToolContext
from .edit_repair import repaired_edit

if TYPE_CHECKING:
    from .params import EditFileParams

REINDENT_NOTE = (
    "old_content was not found as written, but its lines are lines {first}-{last} of the file "
    "at another indentation (and nowhere else), so the edit was made there, new_content at the "
    "file's indentation:\n"
)


def reindented_change(full: Tool, params: EditFileParams, ctx: ToolContext, text: str) -> Any:
    """The edit at the one place whose lines are old_content's but for indentation; None when
    there is no such single place or the indentation rule is unclear."""
    old_lines = (params.old_content or "").strip("\n").split("\n")
    if not any(line.strip() for line in old_lines) or not text:
        return None
    file_lines = text.splitlines(keepends=True)
    places = [start for start in range(len(file_lines) - len(old_lines) + 1)
              if all(file_lines[start + k].strip() == old_lines[k].strip() for k in range(len(old_lines)))]
    if len(places) != 1:
        return None
    start = places[0]
    span = file_lines[start:start + len(old_lines)]
    mapping = _indent_map(old_lines, span)
    if mapping is None:
        return None
    new_lines = [_moved(line, mapping) for line in params.new_content.strip("\n").split("\n")]
    if any(line is None for line in new_lines):
        return None
    old = "".join(span)
    new = "\n".join(line for line in new_lines if line is not None) + ("\n" if old.endswith("\n") else "")
    note = REINDENT_NOTE.format(first=start + 1, last=start + len(old_lines))
    return repaired_edit(full, ctx, params.filepath, old, new, note)


class _IndentMap:
    """Each indentation old_content uses -> the file's there, and a rule for the others."""

    def __init__(self, pairs: dict[str, str]) -> None:
        self.pairs = pairs
        widths = [(len(model), len(real)) for model, real in pairs.items() if _spaces(model + real)]
        self.shift = _one_value([real - model for model, real in widths])
        scale = _one_value([real / model for model, real in widths if model])
        fits = scale is not None and all(real == model * scale for model, real in widths)
        self.scale = scale if fits else None  # 0 -> 4 is no scale, though 4 -> 8 alone is

    def get(self, indent: str) -> str | None:
        if indent in self.pairs:
            return self.pairs[indent]
        if not _spaces(indent):
            return None
        if self.scale is not None and (len(indent) * self.scale).is_integer():
            return " " * int(len(indent) * self.scale)
        if self.shift is not None and len(indent) + self.shift >= 0:
            return " " * (len(indent) + self.shift)
        return None


def _indent_map(old_lines: list[str], span: list[str]) -> _IndentMap | None:
    pairs: dict[str, str] = {}
    for model, real in zip(old_lines, span, strict=True):
        if not model.strip():
            continue
        model_indent, real_indent = _indent(model), _indent(real)
        if pairs.setdefault(model_indent, real_indent) != real_indent:
            return None  # one indentation of the model's is two of the file's: no rule
    return _IndentMap(pairs)


def _moved(line: str, mapping: _IndentMap) -> str | None:
    if not line.strip():
        return ""
    indent = mapping.get(_indent(line))
    return None if indent is None else indent + line.lstrip(" \t")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _spaces(text: str) -> bool:
    return set(text) <= {" "}


def _one_value(values: list[Any]) -> Any:
    """The value when all are the same (None when there are none or they differ)."""
    return values[0] if values and all(v == values[0] for v in values) else None
