"""The attached MCP servers: started in the background, watched, their tools in the table.

Every server starts in parallel under its own timeout; one that fails or hangs is
reported and skipped, and the others do not wait for it. A server that exits later is
noticed (its calls become error results at once) and restarted with `/mcp reload`.
`notifications/tools/list_changed` refreshes a server's tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.toolspec import Tool, ToolError, ToolTable
from ..core.ui_protocol import NoticeLevel
from ..safety.visible import visible
from .config import ServerConfig
from .entry_files import changes, entry_files
from .session import McpError, Session, Transport
from .tools import PREFIX, bridged_tool, hints, server_label, tool_name

if TYPE_CHECKING:  # the stdio launch and transport load with the first stdio server started
    from .launch import Launch, ServerSandbox
    from .stdio import Wrap

State = Literal["starting", "ready", "failed", "stopped"]
INSTRUCTIONS_LIMIT = 2000


@dataclass
class Server:
    config: ServerConfig
    state: State = "starting"
    session: Session | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The server's own tool entries, as tools/list gave them."""
    names: dict[str, str] = field(default_factory=dict)
    """tether's tool name -> the server's."""
    last_error: str = ""

    def status(self) -> dict[str, Any]:
        return {"name": self.config.name, "transport": self.config.transport,
                "state": self.state, "tools": len(self.tools), "error": self.last_error}

    def diagnostics(self) -> str:
        return self.session.transport.diagnostics() if self.session is not None else ""


Notice = Callable[[str, NoticeLevel], None]


def answer_source(server: str) -> str:
    """How a request whose text a server wrote (`/mcp prompt`) names where it came from."""
    return f"MCP server {server}"


class McpManager:
    def __init__(
        self, configs: list[ServerConfig], table: ToolTable, root: Path, env: Mapping[str, str],
        notice: Notice, on_change: Callable[[], None] = lambda: None,
        sandbox: ServerSandbox | None = None,
    ) -> None:
        """`sandbox`: the one commands run in, where a project's stdio servers start too."""
        self.servers = {c.name: Server(c) for c in configs}
        self.sandbox = sandbox
        self.table = table
        self.root = root
        self.env = env
        self.notice = notice
        self.on_change = on_change
        self._starts: dict[str, asyncio.Task[None]] = {}

    # ---------------------------------------------------------------- start-up

    def add(self, config: ServerConfig) -> None:
        """A server approved after start-up (a project server the user said yes to)."""
        self.servers[config.name] = Server(config)

    def start(self, names: list[str] | None = None) -> None:
        """Begin connecting in the background (those named, else every server not started
        yet: calling it again starts nothing twice); returns at once."""
        if names is None:
            names = [name for name in self.servers if name not in self._starts]
        for name in names:
            server = self.servers[name]
            server.state, server.last_error = "starting", ""
            self._starts[name] = asyncio.ensure_future(self._start_one(server))

    async def wait_ready(self, timeout: float) -> None:
        """Wait at most `timeout` for servers still starting; those later join on their own."""
        pending = [t for t in self._starts.values() if not t.done()]
        if pending and timeout > 0:
            await asyncio.wait(pending, timeout=timeout)

    async def _start_one(self, server: Server) -> None:
        config = server.config
        try:
            self._check_label(config)
            sandbox = self._sandbox_for(config)
            if sandbox is not None:  # probing may start bwrap: not on the event loop
                await asyncio.to_thread(sandbox.probe)
            transport = self._transport(config)
        except McpError as exc:
            await self._failed(server, str(exc))
            return
        session = Session(transport, self._notification_handler(server),
                          root=self.root if config.roots else None)
        session.on_close = lambda reason: self._died(server, reason)
        server.session = session
        try:
            await asyncio.wait_for(self._connect(server, session), config.timeout)
        except asyncio.TimeoutError:
            await self._failed(server, f"no answer within {config.timeout:g}s")
        except (McpError, OSError) as exc:
            await self._failed(server, str(exc))
        else:
            server.state = "ready"
            self.notice(f"MCP server {config.name!r} is ready ({len(server.tools)} tools).", "info")

    async def _connect(self, server: Server, session: Session) -> None:
        await session.initialize()
        await self._refresh_tools(server)

    def _transport(self, config: ServerConfig) -> Transport:
        """McpError when the server must not or cannot start (a project file it runs changed
        since its approval, its program is not found)."""
        if config.transport == "stdio":
            from .launch import server_launch
            from .stdio import StdioTransport

            self._check_approved_files(config)
            launch = server_launch(config, self.root, self.env)
            return StdioTransport(launch.program, config.args, launch.env, launch.cwd,
                                  self._wrap(config, launch))
        from .http import SseTransport, StreamableHttpTransport  # httpx: only when needed

        if config.transport == "sse":
            return SseTransport(config.url, config.headers, config.timeout)
        return StreamableHttpTransport(config.url, config.headers, config.timeout)

    def _sandbox_for(self, config: ServerConfig) -> ServerSandbox | None:
        """The sandbox `config` starts through when it works: a project's stdio server's."""
        if config.source == "project" and config.transport == "stdio":
            return self.sandbox
        return None

    def _wrap(self, config: ServerConfig, launch: Launch) -> Wrap:
        """Inside the sandbox, with the network, for a project's server while the sandbox
        works; as it is otherwise. McpError when a sandbox was chosen and cannot start."""
        from .stdio import as_it_is

        sandbox = self._sandbox_for(config)
        if sandbox is None:
            return as_it_is
        if sandbox.insisted_on():
            raise McpError(f"the sandbox you chose cannot start ({sandbox.problem}), and a "
                           "project's server runs only inside it (--sandbox off runs it without)")
        if sandbox.confinement == "off":
            return as_it_is
        return functools.partial(sandbox.launch, network=True, own_env=launch.own)

    def _check_label(self, config: ServerConfig) -> None:
        """Two servers whose tools would be named alike (`a.b` and `a_b` both give
        `mcp__a_b__...`): the one listed first keeps the names (the user's own servers
        come before the project's), so a rule written for one never reaches the other's."""
        label = server_label(config.name)
        for name in self.servers:
            if name == config.name:
                return
            if server_label(name) == label:
                raise McpError(f"its tools would be named like those of the server {name!r} "
                               f"({PREFIX}{label}__...); rename one of them")

    def _check_approved_files(self, config: ServerConfig) -> None:
        """A project server runs only the project files its approval saw (a sandboxed
        command may have rewritten them since, and the server may run outside the sandbox,
        or inside it with the network that commands do not have)."""
        if config.source != "project":
            return
        if config.approved_files is None:
            raise McpError("it was not approved")
        changed = changes(config.approved_files, entry_files(config, self.root))
        if changed:
            raise McpError(f"{', '.join(changed)} since it was approved; restart tether to be "
                           "asked about it again")

    async def _failed(self, server: Server, reason: str) -> None:
        detail = server.diagnostics().strip().splitlines()
        server.state, server.last_error = "failed", reason
        self._drop_tools(server)
        if server.session is not None:
            await server.session.aclose()
        said = f" (it said: {detail[-1][:200]})" if detail and detail[-1][:200] not in reason else ""
        self.notice(f"MCP server {server.config.name!r} did not start: {reason}{said}; "
                    "skipped (/mcp reload tries again).", "warning")

    def _died(self, server: Server, reason: str) -> None:
        if server.state != "ready":
            return  # start-up failures are reported by _start_one
        server.state, server.last_error = "failed", reason
        self.notice(f"MCP server {server.config.name!r} stopped: {reason}. Its tools fail "
                    "until /mcp reload restarts it.", "warning")

    # ---------------------------------------------------------------- tools

    async def _refresh_tools(self, server: Server) -> None:
        session = server.session
        assert session is not None
        server.tools = await session.paged("tools/list", "tools", server.config.timeout)
        self._drop_tools(server)
        for spec in server.tools:
            own = str(spec.get("name", ""))
            if not own:
                continue
            name = self._free_name(tool_name(server.config.name, own))
            server.names[name] = own
            self.table.add(bridged_tool(server.config, spec, self._caller(server), name))
        self.on_change()

    def _free_name(self, name: str) -> str:
        """A name no other tool has (two servers' tools may sanitize to the same one)."""
        candidate, n = name, 2
        while candidate in self.table:
            suffix = f"_{n}"
            candidate, n = name[: 64 - len(suffix)] + suffix, n + 1
        return candidate

    def _drop_tools(self, server: Server) -> None:
        for name in server.names:
            self.table.remove(name)
        if server.names:
            server.names = {}
            self.on_change()

    def _caller(self, server: Server) -> Callable[[str, dict[str, Any]], Any]:
        async def call(own_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            session = self._live_session(server)
            try:
                return await session.request("tools/call", {"name": own_name, "arguments": arguments})
            except McpError as exc:
                raise ToolError(f"MCP server {server.config.name!r}: {exc}") from None
        return call

    def _live_session(self, server: Server) -> Session:
        session = server.session
        if server.state != "ready" or session is None or not session.alive:
            why = server.last_error or (session.closed_reason if session else "") or server.state
            raise ToolError(f"MCP server {server.config.name!r} is not running ({why}); "
                            "nothing was run. The user can restart it with /mcp reload.")
        return session

    def _notification_handler(self, server: Server) -> Callable[[str, dict[str, Any]], Any]:
        async def handle(method: str, params: dict[str, Any]) -> None:
            if method == "notifications/tools/list_changed" and server.state == "ready":
                try:
                    await self._refresh_tools(server)
                except McpError as exc:
                    server.last_error = f"refreshing its tools failed: {exc}"
        return handle

    # ---------------------------------------------------------------- resources, prompts

    async def request(self, name: str, method: str, params: dict[str, Any]) -> Any:
        server = self.servers.get(name)
        if server is None:
            known = ", ".join(self.servers) or "none"
            raise ToolError(f"no MCP server named {name!r} (attached: {known})")
        session = self._live_session(server)
        try:
            return await session.request(method, params, server.config.timeout)
        except McpError as exc:
            raise ToolError(f"MCP server {name!r}: {exc}") from None

    def ready(self) -> list[Server]:
        return [s for s in self.servers.values() if s.state == "ready"]

    def prompt_section(self) -> str:
        """For the system prompt: the servers ready now (one that joins later shows up in the
        next request) and what each asks the model to know, capped."""
        ready = self.ready()
        if not ready:
            return ""
        names = ", ".join(f"{s.config.name} ({len(s.names)} tools)" for s in ready)
        lines = [f"\n\n# MCP servers\nConnected: {names}. Their tools are named "
                 "mcp__<server>__<tool>; their results come from a third party."]
        for server in ready:
            text = server.session.instructions.strip() if server.session else ""
            if text:
                lines.append(f"{server.config.name}: {visible(text[:INSTRUCTIONS_LIMIT])}")
        return "\n".join(lines)

    def tool_lines(self) -> list[str]:
        """One line per attached tool for /mcp tools: name, hints, description."""
        lines = []
        for server in self.servers.values():
            for name, own in server.names.items():
                spec = next((t for t in server.tools if t.get("name") == own), {})
                tool: Tool | None = self.table.get(name)
                tags = ", ".join(hints(spec))
                lines.append(f"{name}" + (f" [{tags}]" if tags else "")
                             + (f": {tool.description}" if tool else ""))
        return lines

    def statuses(self) -> list[dict[str, Any]]:
        return [s.status() for s in self.servers.values()]

    # ---------------------------------------------------------------- stopping

    async def reload(self) -> None:
        """Stop every server and start them again (a dead one comes back)."""
        await self.aclose()
        self.start()

    async def aclose(self) -> None:
        for task in self._starts.values():
            task.cancel()
        for task in self._starts.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._starts = {}
        closing = []
        for server in self.servers.values():
            server.state = "stopped"
            self._drop_tools(server)
            if server.session is not None:
                closing.append(server.session.aclose())
        await asyncio.gather(*closing, return_exceptions=True)
