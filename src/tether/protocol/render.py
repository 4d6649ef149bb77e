"""Rendering for the text protocol: the tool menu in the system prompt, a call as text."""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.messages import ToolCall
from ..core.toolspec import Tool, ToolTable
from .shapes import _schema_types
from .tags import CALL_CLOSE, CALL_OPEN

_TYPE_LABELS = {"integer": "int", "number": "number", "boolean": "bool", "object": "object"}

_PROTOCOL_RULES = """\
Rules:
- One JSON object per <tool_call>: {{"name": ..., "arguments": {{...}}}}.
- Parameters marked as blocks go after the JSON as raw blocks ({example_block}), \
written exactly as the text should be, with no escaping.
- {calls_rule}
- When you are done, answer normally, without any tags."""
_SEVERAL_CALLS = (
    "You may make several calls in one reply; results come back as [Tool Result for 'name']."
)
_ONE_CALL = "Make one call, then stop: its result comes back as [Tool Result for 'name']."


def _first_sentence(description: str) -> str:
    line = next((ln.strip() for ln in description.strip().splitlines() if ln.strip()), "")
    m = re.search(r"(?<=[.!?])\s", line)
    return line[: m.start()] if m else line


def _type_label(prop: dict[str, Any]) -> str:
    branches = [
        b for b in prop.get("anyOf", []) or [] if isinstance(b, dict) and b.get("type") != "null"
    ]
    if len(branches) == 1:
        return _type_label(branches[0])
    if "enum" in prop:
        return "|".join(json.dumps(v) for v in prop["enum"])
    types = _schema_types(prop) - {"null"}
    if len(types) != 1:
        return ""
    kind = types.pop()
    if kind == "array":
        item = _type_label(prop.get("items", {})) or "str"
        return f"list[{item}]"
    return _TYPE_LABELS.get(kind, "")


def _param_label(name: str, prop: dict[str, Any], required: bool, block: bool) -> str:
    mark = "" if required else "?"
    if block:
        return f"{name}{mark}=<{name}> block"
    kind = _type_label(prop)
    return f"{name}{mark}: {kind}" if kind else f"{name}{mark}"


def _tool_line(tool: Tool) -> str:
    schema = tool.json_schema()
    required = set(schema.get("required", []))
    params = ", ".join(
        _param_label(name, prop, name in required, name in tool.block_params)
        for name, prop in schema.get("properties", {}).items()
    )
    return f"- {tool.name}({params}): {_first_sentence(tool.description)}"


def _example_value(name: str, prop: dict[str, Any]) -> Any:
    kind = _type_label(prop)
    if kind == "int":
        return 1
    if kind == "bool":
        return True
    return "hello.py" if "path" in name or "file" in name else "..."


def _example_call(table: ToolTable) -> str:
    tools = list(table)
    tool = table.get("write_file") or next((t for t in tools if t.block_params), tools[0])
    schema = tool.json_schema()
    required = schema.get("required", [])
    args: dict[str, Any] = {}
    for name in required:
        prop = schema["properties"].get(name, {})
        args[name] = 'print("hello")\n' if name in tool.block_params else _example_value(name, prop)
    return render_call_as_text(ToolCall("example", tool.name, args), table)


def render_tool_prompt(table: ToolTable, one_call: bool = False) -> str:
    """The text-protocol section of the system prompt, rendered from the table only.
    `one_call`: ask for one call per reply (a small model that sends several invents
    the results of the first ones)."""
    if not len(table):
        return ""
    block = next((t.block_params[0] for t in table if t.block_params), "content")
    lines = [
        "# Tools",
        "You can use these tools:",
        *(_tool_line(tool) for tool in table),
        "",
        "To use a tool, write a tool call like this, then stop and wait for its result:",
        _example_call(table),
        "",
        _PROTOCOL_RULES.format(
            example_block=f"<{block}>...</{block}>",
            calls_rule=_ONE_CALL if one_call else _SEVERAL_CALLS,
        ),
    ]
    return "\n".join(lines)


def _fits_block(name: str, value: Any) -> bool:
    """Text that would end its own block early goes in the JSON instead, escaped."""
    return isinstance(value, str) and f"</{name}>" not in value and CALL_CLOSE not in value


def render_call_as_text(call: ToolCall, table: ToolTable, tagged: bool = True) -> str:
    """A call as the text protocol writes it: JSON, then raw blocks for the block params,
    inside the call tags unless `tagged` is False (the parser takes a call without them)."""
    tool = table.get(call.name)
    block_names = tool.block_params if tool else ()
    blocks = [
        (n, call.arguments[n])
        for n in block_names
        if n in call.arguments and _fits_block(n, call.arguments[n])
    ]
    in_blocks = {n for n, _ in blocks}
    json_args = {k: v for k, v in call.arguments.items() if k not in in_blocks}
    head = json.dumps({"name": call.name, "arguments": json_args}, ensure_ascii=False, default=str)
    lines = [head] + [f"<{name}>\n{value}</{name}>" for name, value in blocks]
    return "\n".join([CALL_OPEN, *lines, CALL_CLOSE] if tagged else lines)
