"""The text that carries on a text-protocol call a reply left open between its raw blocks.

A small model writes `{"name": "edit_file", ...}` and `<old_content>` with the old text, then
begins a tool result of its own ("[Tool Result for 'edit_file']"), which the stop strings cut:
the call never got its `<new_content>`. At temperature 0 the same request writes the same
open call again, word for word, however the error is worded. What comes next in such a call
is not the model's to choose: the open block closes and the next block of the tool opens.
Given that much, the model goes on writing the next block itself (`TurnLoop.resumed`). Only
the structure is added, never a value.
"""

from __future__ import annotations

import re

from ..core.toolspec import ToolTable
from .jsonrepair import _json_extent
from .shapes import _sniff_name

_CALL_START = re.compile(r'\{\s*"name"\s*:')
_TAG_BEGUN = re.compile(r"<(?:/\w*)?$")
"""A closing tag begun at the very end (`</old_con`): the reply was cut inside it."""


def resumption(text: str, table: ToolTable) -> str | None:
    """The reply to carry on: its text without the blank lines at its end (a block's text ends
    with one newline, and an old text with a blank line more is not the file's), then what
    closes the raw block its last call left open and opens the tool's next one
    (`</old_content>\\n<new_content>\\n`); None when no call is open in a block, the block is
    empty (nothing of the model's to carry on from), or no block comes after it."""
    starts = list(_CALL_START.finditer(text))
    if not starts:
        return None
    start = starts[-1].start()
    end = _json_extent(text, start)
    name = _sniff_name(text[start:end])
    tool = table.get(name) if name else None
    if tool is None or len(tool.block_params) < 2 or end >= len(text):
        return None
    names = "|".join(re.escape(n) for n in tool.block_params)
    opened = re.match(rf"\s*((?:<(?:{names})>.*?</(?:{names})>\s*)*)<({names})>\n?", text[end:], re.S)
    if opened is None:
        return None
    block, body = opened.group(2), text[end + opened.end():]
    if f"</{block}>" in body or _TAG_BEGUN.search(body) or not body.strip():
        return None
    written = set(re.findall(rf"<({names})>", opened.group(1))) | {block}
    later = [n for n in tool.block_params[tool.block_params.index(block) + 1:] if n not in written]
    if not later:
        return None
    return text.rstrip() + f"\n</{block}>\n<{later[0]}>\n"
