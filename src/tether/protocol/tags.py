"""The text protocol's tags and the names of its raw blocks."""

from __future__ import annotations

from ..core.toolspec import ToolTable

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
FUNCTION_OPEN = "<function="
FUNCTION_CLOSE = "</function>"
PARAM_OPEN = "<parameter="
PARAM_CLOSE = "</parameter>"
DEFAULT_BLOCK_NAMES = ("content", "old_content", "new_content", "stdin")


def _block_names(table: ToolTable | None) -> set[str]:
    names = set(DEFAULT_BLOCK_NAMES)
    if table is not None:
        for tool in table:
            names.update(tool.block_params)
    return names
