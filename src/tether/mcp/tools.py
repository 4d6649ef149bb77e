"""MCP tools as entries of tether's tool table, so they cross the same dispatch.

Each server tool becomes `mcp__<server>__<tool>` with the server's JSON schema as its
parameters. It has no flags of its own (a server's `readOnlyHint` is a claim, not a
fact), so it is asked about like any call with side effects, unless the user's own
configuration says otherwise (`autoApprove`, or `trusted` for read-only tools). It has
`network`: its arguments leave tether for a program that may send them anywhere, so once
outside content entered the request it asks whatever that configuration says.
Descriptions come from a third party: control characters are escaped before anyone
sees them, model or user.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..core.textclip import clip_words
from ..core.toolspec import MCP_NAMESPACE, Tool, ToolContext, ToolError, ToolOutput
from ..safety.visible import visible
from .config import ServerConfig

if TYPE_CHECKING:
    from .params import McpArguments

PREFIX = MCP_NAMESPACE
NAME_LIMIT = 64
DESCRIPTION_LIMIT = 1500
UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
SEPARATOR_RUN = re.compile(r"_{2,}")

CallTool = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Calls one tool of one server by its own name: the raw `tools/call` result."""


MCP_ARGUMENTS = "tether.mcp.params:McpArguments"
"""Where the model that accepts any arguments lives (`Tool.params`; see mcp.params)."""


def is_mcp_tool(name: str) -> bool:
    return name.startswith(PREFIX)


def server_label(server: str) -> str:
    """The server's part of its tools' names: sanitized, without `__` and without an `_` at
    either end, so `mcp__<label>__` starts the names of that server's tools and no other's
    (a rule for `mcp__a__*` must not reach the tools of a server named `a__b` or `a_`).
    Two servers may still share a label (`a.b`, `a_b`): the manager starts only the first."""
    label = SEPARATOR_RUN.sub("_", UNSAFE.sub("_", server)).strip("_")
    return label or "server_" + hashlib.sha256(server.encode()).hexdigest()[:8]


def ruled_servers(tool_patterns: Iterable[str]) -> list[str]:
    """The server parts (`git` in `mcp__git__*`, wildcards kept) of the tool patterns of
    rules you wrote: a project server whose label they match would inherit those rules. A
    part that is only a wildcard (`mcp__*`) names no server: it allows every one, yours
    and the project's, as written."""
    parts = [pattern[len(PREFIX):].split("__")[0] for pattern in tool_patterns
             if pattern.startswith(PREFIX)]
    return [part for part in dict.fromkeys(parts) if part.strip("*?")]


def names_ruled_server(label: str, ruled: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(label, part) for part in ruled)


def tool_name(server: str, tool: str) -> str:
    """`mcp__<label>__<tool>`, sanitized to what every provider accepts, at most 64
    characters (a cut name ends in a short hash of the whole, so two stay apart)."""
    name = f"{PREFIX}{server_label(server)}__{UNSAFE.sub('_', tool)}"
    if len(name) <= NAME_LIMIT:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:NAME_LIMIT - 9]}_{digest}"


def hints(spec: dict[str, Any]) -> list[str]:
    """What the server says about a tool: read-only, destructive (its claims)."""
    annotations = spec.get("annotations")
    if not isinstance(annotations, dict):
        return []
    shown = []
    if annotations.get("readOnlyHint") is True:
        shown.append("read-only")
    if annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True:
        shown.append("destructive")
    return shown


def tool_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """The server's input schema as an object schema every provider takes."""
    schema = spec.get("inputSchema")
    schema = dict(schema) if isinstance(schema, dict) else {}
    schema["type"] = "object"
    if not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    schema.pop("$schema", None)
    return schema


def bridged_tool(server: ServerConfig, spec: dict[str, Any], call: CallTool, name: str) -> Tool:
    """The table entry for one server tool; `call` reaches the server."""
    own_name = str(spec.get("name", ""))
    schema = tool_schema(spec)
    required = [r for r in schema.get("required", []) if isinstance(r, str)]

    async def handler(args: McpArguments, ctx: ToolContext) -> ToolOutput:
        arguments = args.model_dump()
        missing = [r for r in required if r not in arguments]
        if missing:
            raise ToolError(f"{name}: missing required argument(s) {', '.join(missing)}; "
                            f"expected: {', '.join(schema['properties']) or 'none'}.")
        return result_output(await call(own_name, arguments))

    shown_hints = hints(spec)
    return Tool(
        name=name,
        description=describe(server.name, spec, shown_hints),
        params=MCP_ARGUMENTS,
        handler=handler,
        schema=schema,
        main_arg=_main_arg(schema, required),
        keeps_full_result=True,
        network=True,  # the server may pass its arguments anywhere
        effect=f"a tool of the MCP server {server.name}"
               + (f", which calls it {' and '.join(shown_hints)}" if shown_hints else ""),
        needs_approval=False if _runs_unasked(server, own_name, shown_hints) else None,
    )


def describe(server: str, spec: dict[str, Any], shown_hints: list[str]) -> str:
    text = str(spec.get("description") or spec.get("title") or "").strip()
    text = clip_words(text, DESCRIPTION_LIMIT + 1)
    tags = f" [{', '.join(shown_hints)}]" if shown_hints else ""
    return visible(f"(MCP server {server}{tags}) {text}")


def _runs_unasked(server: ServerConfig, own_name: str, shown_hints: list[str]) -> bool:
    return own_name in server.auto_approve or (server.trusted and "read-only" in shown_hints)


def _main_arg(schema: dict[str, Any], required: list[str]) -> str | None:
    """The argument permission rules match: the first required string one."""
    properties = schema["properties"]
    for name in required + list(properties):
        prop = properties.get(name)
        if isinstance(prop, dict) and prop.get("type") == "string":
            return name
    return None


# ---------------------------------------------------------------- results


def result_output(result: dict[str, Any]) -> ToolOutput:
    """A `tools/call` result as text: an error result raises ToolError."""
    if not isinstance(result, dict):
        raise ToolError("the server's answer was not a tool result")
    pieces = [content_text(item) for item in result.get("content") or [] if isinstance(item, dict)]
    structured = result.get("structuredContent")
    if structured is not None and not any(isinstance(i, dict) and i.get("type") == "text"
                                          for i in result.get("content") or []):
        pieces.append(json.dumps(structured, ensure_ascii=False, indent=1))
    text = "\n".join(p for p in pieces if p) or "(no content)"
    if result.get("isError") is True:
        raise ToolError(text)
    return ToolOutput(text)


def content_text(item: dict[str, Any]) -> str:
    """One content block as text: text as it is, media as a note, resources inline."""
    kind = item.get("type")
    if kind == "text":
        return str(item.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {item.get('mimeType', 'unknown type')}, {_size(item.get('data'))}]"
    if kind == "resource":
        return resource_text(item.get("resource"))
    if kind == "resource_link":
        return f"[resource link: {item.get('uri', '')} {item.get('name', '')}]".rstrip() + ""
    return f"[{kind or 'unknown'} content]"


def resource_text(resource: Any) -> str:
    if not isinstance(resource, dict):
        return "[resource]"
    head = f"[resource {resource.get('uri', '')}" + (
        f" ({resource['mimeType']})" if resource.get("mimeType") else "") + "]"
    if isinstance(resource.get("text"), str):
        return f"{head}\n{resource['text']}"
    return f"{head} binary, {_size(resource.get('blob'))}"


def _size(data: Any) -> str:
    """The decoded size of base64 data, readably."""
    if not isinstance(data, str):
        return "no data"
    try:
        size = len(base64.b64decode(data, validate=False))
    except ValueError:
        size = len(data) * 3 // 4
    return f"{size} bytes" if size < 1024 else f"{size / 1024:.1f} KB"

