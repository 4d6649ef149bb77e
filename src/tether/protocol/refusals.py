"""The messages a refused call gets back: what was wrong, that nothing ran, what to send."""

from __future__ import annotations

import json
import re

from ..core.toolspec import ToolTable

_SNIPPET_CHARS = 80


def _cut_off_error(name: str | None) -> str:
    what = f"Your {name} call" if name else "Your tool call"
    return (
        f"{what} was cut off before its arguments were complete; nothing was run. "
        "Send the complete call again."
    )


_SEARCH_LINE = re.compile(r"^[^\s:]+:\d+: ", re.M)
"""A line of search_in_file's result (`path:N: text`)."""


def _search_lines_note(block: str, text: str) -> str:
    """For a call left open inside a block that holds search result lines: that they are
    not the file's text. A model that pastes a search result as an edit's old_content ends its
    reply there, and told only that the call was cut off, sends the same paste again."""
    if len(_SEARCH_LINE.findall(text)) < 2:
        return ""
    return (f" Its <{block}> holds lines of a search result (`path:N: text`): those are not the "
            f"file's own lines. Read the file with read_file, copy {block} from what it shows, "
            f"and close the block with </{block}>.")


def _tool_list(table: ToolTable) -> str:
    names = table.names()
    shown = ", ".join(names[:30])
    return shown + (", ..." if len(names) > 30 else "") if names else "(none)"


def _unknown_tool_error(name: str, table: ToolTable) -> str:
    return (
        f"There is no tool named {name!r}; nothing was run. Available tools: {_tool_list(table)}."
    )


def _no_name_error(table: ToolTable) -> str:
    return (
        'Your tool call has no "name"; nothing was run. Send {"name": ..., "arguments": {...}} '
        f"with one of: {_tool_list(table)}."
    )


def _snippet(src: str) -> str:
    flat = " ".join(src.split())
    return flat if len(flat) <= _SNIPPET_CHARS else flat[:_SNIPPET_CHARS] + "..."


_CODE_VALUE = re.compile(r'"\w+"\s*:\s*([A-Za-z_][\w.]*(?:\([^(){}]*\))?)\s*[,}]')
"""A value written as code (`"content": str(line_count)`): a name or a call, unquoted."""
_JSON_WORDS = frozenset({"true", "false", "null"})


def _invalid_json_error(src: str) -> str:
    return (
        f"Your tool call is not valid JSON ({_where_it_breaks(src)}); nothing was run. "
        'Send one JSON object like {"name": "TOOL", "arguments": {...}} inside <tool_call>...</tool_call>. '
        'Every value must be JSON: text in double quotes (a " inside it written \\"), a number, '
        "true, false or null; not code to evaluate." + _code_value_hint(src)
    )


def _code_value_hint(src: str) -> str:
    """What to do about a value written as code: small models put the variable of the script
    they described (`str(line_count)`) where the value goes, and send it again unchanged when
    told only that it is not JSON. Nothing will ever run that code, so the value is unknown."""
    for match in _CODE_VALUE.finditer(src):
        code = match.group(1)
        if code not in _JSON_WORDS:
            return (
                f" `{code}` is code, and no one runs it: write the value itself. If you do not "
                "know the value yet, find it with a tool call first, then send this call with it."
            )
    return ""


def _where_it_breaks(src: str) -> str:
    """The decoder's complaint and the text around where it gave up, so the model can see
    which value it wrote wrong (`"content": str(total)`); the start of the call otherwise."""
    try:
        json.loads(src)
    except json.JSONDecodeError as err:
        start = max(0, err.pos - _SNIPPET_CHARS // 2)
        around = " ".join(src[start : err.pos + _SNIPPET_CHARS // 2].split())
        return f"{err.msg} at: ...{around}..."
    return f"near: {_snippet(src)}"


def _malformed_xml_error(src: str) -> str:
    return (
        f"Your tool call is malformed (near: {_snippet(src)}); nothing was run. "
        "Write <function=NAME> with <parameter=NAME>value</parameter> lines, or send JSON instead."
    )


def _bad_arguments_error(name: str) -> str:
    return f'The "arguments" of your {name} call must be a JSON object; nothing was run. Send the call again.'
