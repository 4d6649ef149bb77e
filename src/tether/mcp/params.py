"""What the MCP tools accept: a server tool's arguments (checked by the server against its
own schema) and the resource tools' parameters. Apart from the tools' code, so that a start
imports neither pydantic nor these (`Tool.params` names them by where they live)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from ..core.tool_params import Params


class McpArguments(Params):
    """Accepts any object: the server checks its arguments against its own schema."""

    model_config = ConfigDict(extra="allow")


class ResourceArgs(Params):
    server: str = Field(description="The MCP server's name.")
    uri: str = Field(description="The resource's URI, as list_mcp_resources shows it.")


class ListResourcesArgs(Params):
    server: str = Field("", description="One server's name; empty lists every server's.")
