"""The one step every repair of the one-mode edit_file ends with: the full edit_file run on
the replacement the repair found, its result after a note saying what was repaired."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.toolspec import Tool, ToolContext, ToolError, ToolOutput


def repaired_edit(full: Tool, ctx: ToolContext, filepath: str, old: str, new: str, note: str) -> Any:
    """The full edit_file's result for the repaired replacement, after `note`; None if even
    that does not apply (the file changed, or the text is not unique after all)."""
    from .params import EditFileParams  # loaded already: edit_file's call is running

    fixed = EditFileParams(filepath=filepath, old_content=old, new_content=new, start_anchor=None, end_anchor=None)
    try:
        output: ToolOutput = full.handler(fixed, ctx)  # type: ignore[assignment]
    except ToolError:
        return None
    return replace(output, text=note + output.text)
