"""One MCP connection: JSON-RPC requests and their answers over any transport.

The session knows the protocol (initialize, version negotiation, pagination, the
requests a server may send back); a transport only moves messages. A transport that
ends (the process exited, the HTTP stream broke) fails every request still waiting,
so a call to a dead server is an error at once, never a hang. A transport whose server
forgot the session (`SessionExpired`: HTTP 404) gets one new handshake, and the request
is sent again.

Of the requests a server may send, `ping` and `roots/list` (the project root, when the
session was given one) are answered; sampling and elicitation are refused with
JSON-RPC's "method not found", so no third party can spend the user's model or put
questions to the user.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from .. import __version__

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
"""The versions this client speaks, newest first: the first is offered."""
MAX_PAGES = 100


class McpError(Exception):
    """A failed request: the server's error, a broken connection, a timeout."""


class SessionExpired(McpError):
    """The server no longer knows the session (streamable HTTP's 404 for a request that
    carried its id): the client must start a new one with a new initialize."""


METHOD_NOT_FOUND = -32601


Receiver = Callable[[dict[str, Any]], None]


class Transport(Protocol):
    """Moves JSON-RPC messages; calls `receive` for each one that arrives, `closed` once."""

    async def open(self, receive: Receiver, closed: Callable[[str], None]) -> None: ...

    async def send(self, message: dict[str, Any]) -> None: ...

    async def aclose(self) -> None: ...

    def negotiated(self, version: str) -> None:
        """The protocol version agreed on (HTTP sends it in a header from then on)."""

    def diagnostics(self) -> str:
        """What the server said on the side (a stdio server's stderr), for /mcp."""


NotificationHandler = Callable[[str, dict[str, Any]], Awaitable[None] | None]


class Session:
    """Requests by id, each answered through a future; server requests answered here."""

    def __init__(self, transport: Transport, on_notification: NotificationHandler | None = None,
                 root: Path | None = None) -> None:
        self.transport = transport
        self.on_notification = on_notification
        self.root = root
        """Offered as the one root (`roots/list`); None declares no roots capability."""
        self._handshakes = 0
        self._handshake_lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self.closed_reason = ""
        self.protocol_version = ""
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.instructions = ""
        self.on_close: Callable[[str], None] | None = None
        """Told once, with the reason, when the connection ends."""

    @property
    def alive(self) -> bool:
        return not self.closed_reason

    async def initialize(self) -> None:
        await self.transport.open(self._receive, self._closed)
        await self._handshake()

    async def _handshake(self) -> None:
        result = await self._request_once("initialize", {
            "protocolVersion": PROTOCOL_VERSIONS[0],
            "capabilities": {"roots": {"listChanged": False}} if self.root is not None else {},
            "clientInfo": {"name": "tether", "version": __version__},
        }, None)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in PROTOCOL_VERSIONS:
            raise McpError(f"the server speaks protocol version {version!r}, which tether does "
                           f"not (it speaks {', '.join(PROTOCOL_VERSIONS)})")
        self.protocol_version = version
        self.transport.negotiated(version)
        self.server_info = _dict(result.get("serverInfo"))
        self.capabilities = _dict(result.get("capabilities"))
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else ""
        await self.notify("notifications/initialized")
        self._handshakes += 1

    async def request(self, method: str, params: dict[str, Any] | None = None,
                      timeout: float | None = None) -> Any:
        """The result of one request; a session the server forgot is started again once
        (a new initialize) and the request sent again."""
        started_in = self._handshakes
        try:
            return await self._request_once(method, params, timeout)
        except SessionExpired:
            await self._renew(started_in)
            return await self._request_once(method, params, timeout)

    async def _renew(self, seen: int) -> None:
        """A new handshake, unless another request already made one since `seen`."""
        async with self._handshake_lock:
            if self._handshakes == seen:
                await self._handshake()

    async def _request_once(self, method: str, params: dict[str, Any] | None,
                            timeout: float | None) -> Any:
        if self.closed_reason:
            raise McpError(self.closed_reason)
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.transport.send(message)
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            await self._cancel_request(request_id, f"no answer within {timeout:g}s")
            raise McpError(f"{method}: no answer within {timeout:g}s") from None
        except asyncio.CancelledError:
            await self._cancel_request(request_id, "cancelled by the user")
            raise
        finally:
            self._pending.pop(request_id, None)

    async def _cancel_request(self, request_id: int, reason: str) -> None:
        """Tell the server to stop working on a request nobody waits for any more."""
        if self.alive:
            try:
                await asyncio.wait_for(self.notify("notifications/cancelled", {
                    "requestId": request_id, "reason": reason}), 5)
            except (McpError, asyncio.TimeoutError, OSError):
                pass

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.transport.send(message)

    async def paged(self, method: str, key: str, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated list (tools/list, resources/list, prompts/list)."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = await self.request(method, {"cursor": cursor} if cursor else {}, timeout)
            page = result.get(key) if isinstance(result, dict) else None
            items += [item for item in page or [] if isinstance(item, dict)]
            cursor = result.get("nextCursor") if isinstance(result, dict) else None
            if not isinstance(cursor, str) or not cursor:
                return items
        return items

    # ---------------------------------------------------------------- incoming

    def _receive(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:
                self._answer_server_request(message)
            else:
                self._spawn(self._notified(message))
            return
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return  # an answer to a request given up on
        if "error" in message:
            future.set_exception(McpError(_error_text(message["error"])))
        else:
            future.set_result(message.get("result"))

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        """ping, and roots/list with the project root; sampling, elicitation and anything
        else are refused."""
        method = message.get("method")
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "ping":
            reply["result"] = {}
        elif method == "roots/list" and self.root is not None:
            root = self.root.absolute()
            reply["result"] = {"roots": [{"uri": root.as_uri(), "name": root.name}]}
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND,
                              "message": f"tether does not support {method}"}
        self._spawn(self._send_quietly(reply))

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        try:
            await self.transport.send(message)
        except (McpError, OSError):
            pass  # the connection is going away; _closed says so

    async def _notified(self, message: dict[str, Any]) -> None:
        if self.on_notification is not None:
            outcome = self.on_notification(str(message["method"]), _dict(message.get("params")))
            if outcome is not None:
                await outcome

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _closed(self, reason: str) -> None:
        first = not self.closed_reason
        self.closed_reason = self.closed_reason or reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(McpError(self.closed_reason))
        if first and self.on_close is not None:
            self.on_close(self.closed_reason)

    async def aclose(self) -> None:
        self._closed("the connection was closed")
        for task in list(self._background):
            task.cancel()
        await self.transport.aclose()


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        message = str(error.get("message") or "error")
        code = error.get("code")
        return f"{message} (code {code})" if code is not None else message
    return str(error)
