"""Attaching MCP to a runtime: which servers, which of them may start, the shared tools."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.toolspec import ToolTable
from .config import ServerConfig, load_servers
from .manager import McpManager, Notice
from .resources import LIST_RESOURCES, READ_RESOURCE, resource_tools
from .tools import is_mcp_tool
from .trust import ApprovalStore, admit, remember_approval

if TYPE_CHECKING:
    from .launch import ServerSandbox


@dataclass
class McpSetup:
    manager: McpManager
    waiting: list[ServerConfig] = field(default_factory=list)
    """Project servers the user has not approved yet (asked about in the chat)."""
    warnings: list[str] = field(default_factory=list)
    home: Path = Path()
    asked_because: dict[str, str] = field(default_factory=dict)
    """Why a waiting server approved before is asked about again (what changed), by name."""

    def approve(self, server: ServerConfig, *, remember: bool = True) -> str:
        """Start a waiting project server; "" or why its approval could not be saved."""
        self.waiting = [s for s in self.waiting if s.name != server.name]
        problem = remember_approval(ApprovalStore(self.home), self.manager.root, server) if remember else ""
        self.manager.add(server)
        self.manager.start([server.name])
        return problem


def attach_mcp(
    root: Path, home: Path, env: Mapping[str, str], table: ToolTable, notice: Notice, *,
    extra: Sequence[Path] = (), approve: Sequence[str] = (), trusted: bool, can_ask: bool,
    on_change: Callable[[], None] = lambda: None, reserved: Sequence[str] = (),
    sandbox: ServerSandbox | None = None,
) -> McpSetup:
    """Read the server entries and sort them (see trust.admit); nothing starts yet.
    `reserved`: the server parts your own allow rules name (`tools.ruled_servers`).
    `sandbox`: the commands' one, where the project's own stdio servers start."""
    loaded = load_servers(root, home, tuple(extra), env)
    admission = admit(loaded.servers, root, ApprovalStore(home), trusted=trusted,
                      can_ask=can_ask, approve=approve, reserved=reserved)
    manager = McpManager(admission.start, table, root, env, notice, on_change, sandbox)
    if admission.start or admission.ask:
        for tool in resource_tools(manager):
            table.replace(tool)
    return McpSetup(manager, admission.ask, loaded.problems + admission.notices, home,
                    admission.asked_because)


def mcp_share(table: ToolTable) -> tuple[int, int]:
    """How many MCP tools are attached, and about how many tokens their schemas take."""
    count, chars = 0, 0
    for tool in table:
        if is_mcp_tool(tool.name):
            count += 1
            chars += len(tool.description) + len(json.dumps(tool.json_schema()))
    return count, chars // 4


def defers_mcp(table: ToolTable, max_tools: int, window: int | None) -> bool:
    """Defer MCP tools behind tool_search when there are many, or they would take more
    than a tenth of the context window."""
    count, tokens = mcp_share(table)
    return count > max_tools or (window is not None and count > 0 and tokens > window // 10)


MCP_SHARED_TOOLS = (LIST_RESOURCES, READ_RESOURCE)
