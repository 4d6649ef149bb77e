"""edit_file with one mode, for small models: replace old_content with new_content.

The full edit_file also takes line anchors; small models mix the two modes
(`start_anchor: "1:1"` beside old_content) and stop at the error. This variant
offers only the replacement, and answers any other argument with the right form.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core.toolspec import Tool, ToolContext, ToolError, ToolOutput
from .files import EditFileParams

RIGHT_FORM = (
    '{"name": "edit_file", "arguments": {"filepath": "app.py", '
    '"old_content": "exact text now in the file", "new_content": "the text to put there"}}'
)
_ANCHOR_ADVICE = re.compile(
    r",? or (?:replace those lines with start_anchor=\S+ and end_anchor=\S+?|use start_anchor/end_anchor)(?=\.)"
)


SHOW_FILE_CHARS = 3_000
"""A file this short is shown whole when old_content missed: the model copies from it."""


def _current_text(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    if len(text) > SHOW_FILE_CHARS:
        return ""
    return f"\nThe whole file now reads (copy old_content from it exactly):\n{text}"


_READ_PREFIX = re.compile(r"^\d+(?::[0-9a-f]{2})?\| ?", re.M)
_READ_HASH = re.compile(r"^(\d+):[0-9a-f]{2}\|", re.M)


def _without_read_prefixes(text: str) -> str:
    """Text copied from read_file with its `N:hh|` line prefixes: when all lines but perhaps
    the first have one, they are read_file's, not the file's, and are taken off (the match
    stays exact, so a wrong guess only fails to match)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not all(_READ_PREFIX.match(line) for line in lines[1:] or lines):
        return text
    return _READ_PREFIX.sub("", text)


def plain_read_tool(full: Tool) -> Tool:
    """read_file showing each line as `N| text` without the line hash: the hashes serve only
    the anchor mode, which the one-mode edit_file does not offer, and small models copy them."""

    def handler(args: Any, ctx: ToolContext) -> Any:
        output = full.handler(args, ctx)
        if isinstance(output, ToolOutput):
            return replace(output, text=_READ_HASH.sub(r"\1| ", output.text))
        return output

    return replace(
        full,
        description="Read a text file; each line is shown as 'N| text' (N = line number, "
        "not part of the file). Long files are paged: use offset.",
        handler=handler,
    )


class SimpleEditParams(BaseModel):
    model_config = ConfigDict(extra="allow")  # so a stray argument gets advice, not a bare error

    filepath: str = Field(description="Path of the file to edit.")
    old_content: str = Field(description="Exact text to replace; must occur exactly once.")
    new_content: str = Field(description="Replacement text.")


def simple_edit_tool(full: Tool) -> Tool:
    """The one-mode variant of the built-in edit_file tool `full`."""

    def handler(args: SimpleEditParams, ctx: ToolContext) -> Any:
        extra = sorted((args.model_extra or {}).keys())
        if extra:
            raise ToolError(
                f"edit_file takes only filepath, old_content and new_content (not "
                f"{', '.join(extra)}); nothing was changed. Send: {RIGHT_FORM}"
            )
        if not args.old_content:
            raise ToolError(
                "old_content is empty; nothing was changed. Copy the exact lines to replace "
                f"from read_file (without the 'N| ' prefixes), or use write_file for a whole "
                f"file. Send: {RIGHT_FORM}"
            )
        params = EditFileParams(
            filepath=args.filepath,
            old_content=_without_read_prefixes(args.old_content),
            new_content=_without_read_prefixes(args.new_content),
            start_anchor=None,
            end_anchor=None,
        )
        try:
            output: ToolOutput = full.handler(params, ctx)  # type: ignore[assignment]
        except ToolError as exc:
            message = _ANCHOR_ADVICE.sub("", str(exc))
            if message.startswith("old_content was not found"):
                message += _current_text(ctx.resolve(args.filepath))
            raise ToolError(message) from None
        return output

    return replace(
        full,
        description="Replace old_content (exact text that occurs once in the file) with "
        "new_content. Returns a diff.",
        params=SimpleEditParams,
        handler=handler,
    )
