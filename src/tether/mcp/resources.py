"""Resources and prompts of MCP servers: two read-only tools, and `/mcp prompt`'s text.

The tools only read, but they reach a server (`network`): once outside content entered the
request, the URI they send is one more way out, and they ask (safety.web_guard)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.toolspec import Tool, ToolContext, ToolError
from ..safety.visible import visible
from .manager import McpManager
from .tools import content_text, resource_text

if TYPE_CHECKING:
    from .params import ListResourcesArgs, ResourceArgs

LIST_RESOURCES = "list_mcp_resources"
READ_RESOURCE = "read_mcp_resource"
ASKS_A_SERVER = "a request to an MCP server"


async def list_resources(manager: McpManager, only: str = "") -> str:
    """One line per resource of every ready server (or of `only`)."""
    names = [only] if only else [s.config.name for s in manager.ready()]
    lines = []
    for name in names:
        server = manager.servers.get(name)
        if server is None or not server.session or "resources" not in server.session.capabilities:
            lines.append(f"{name}: (no resources)")
            continue
        for item in await _paged(manager, name, "resources/list", "resources"):
            lines.append(f"{name}: {item.get('uri', '')} {item.get('name', '')}"
                         + (f" ({item['mimeType']})" if item.get("mimeType") else "")
                         + (f": {item['description']}" if item.get("description") else ""))
    return visible("\n".join(lines)) if lines else "No MCP server with resources is ready."


def resource_tools(manager: McpManager) -> list[Tool]:
    async def list_handler(args: ListResourcesArgs, ctx: ToolContext) -> str:
        return await list_resources(manager, args.server)

    async def read_resource(args: ResourceArgs, ctx: ToolContext) -> str:
        result = await manager.request(args.server, "resources/read", {"uri": args.uri})
        contents = result.get("contents") if isinstance(result, dict) else None
        if not isinstance(contents, list) or not contents:
            raise ToolError(f"{args.uri}: the server returned no contents")
        return "\n".join(resource_text(c) for c in contents)

    return [
        Tool(LIST_RESOURCES, "List the resources (files, data) MCP servers offer: URI, name, "
             "type.", "tether.mcp.params:ListResourcesArgs", list_handler, reads=True, network=True, main_arg="server",
             effect=ASKS_A_SERVER),
        Tool(READ_RESOURCE, "Read one MCP resource by server name and URI.", "tether.mcp.params:ResourceArgs",
             read_resource, reads=True, network=True, main_arg="uri", effect=ASKS_A_SERVER),
    ]


async def _paged(manager: McpManager, name: str, method: str, key: str) -> list[dict[str, Any]]:
    """Every page of a list request, through the manager's checks."""
    items: list[dict[str, Any]] = []
    cursor = ""
    for _ in range(100):
        result = await manager.request(name, method, {"cursor": cursor} if cursor else {})
        page = result.get(key) if isinstance(result, dict) else None
        items += [i for i in page or [] if isinstance(i, dict)]
        following = result.get("nextCursor") if isinstance(result, dict) else None
        if not isinstance(following, str) or not following:
            break
        cursor = following
    return items


async def prompt_list(manager: McpManager) -> list[str]:
    """`server name(arg, arg?): description` for every prompt of every ready server."""
    lines = []
    for server in manager.ready():
        if not server.session or "prompts" not in server.session.capabilities:
            continue
        for item in await _paged(manager, server.config.name, "prompts/list", "prompts"):
            args = ", ".join(str(a.get("name")) + ("" if a.get("required") else "?")
                             for a in item.get("arguments") or [] if isinstance(a, dict))
            lines.append(visible(f"{server.config.name} {item.get('name')}({args})"
                                 + (f": {item['description']}" if item.get("description") else "")))
    return lines


def parse_prompt_arguments(words: list[str]) -> dict[str, str]:
    """`key=value` words as a dict; raises ValueError for a word without `=`."""
    arguments = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ValueError(f"expected key=value, got {word!r}")
        arguments[key] = value
    return arguments


async def prompt_text(manager: McpManager, server: str, name: str, arguments: dict[str, str]) -> str:
    """The prompt's messages as one request text (roles kept as headings when several)."""
    result = await manager.request(server, "prompts/get", {"name": name, "arguments": arguments})
    messages = result.get("messages") if isinstance(result, dict) else None
    if not isinstance(messages, list) or not messages:
        raise ToolError(f"prompt {name!r} of {server!r} has no messages")
    parts = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("content"), dict):
            continue
        text = content_text(message["content"])
        parts.append(text if len(messages) == 1 else f"[{message.get('role', 'user')}]\n{text}")
    return "\n\n".join(parts)
