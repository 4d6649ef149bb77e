"""The HTTP transports over httpx: streamable HTTP, and the legacy HTTP+SSE one.

Streamable HTTP: every message is a POST; the answer comes as JSON or as an SSE stream
(which may carry notifications and server requests before the answer). The session id
the server gives at initialize travels in `Mcp-Session-Id` from then on, the agreed
version in `MCP-Protocol-Version`, and closing sends a DELETE. A stream that breaks
after an event id is resumed with a GET carrying `Last-Event-ID`.

Legacy HTTP+SSE: a GET opens the event stream, whose first `endpoint` event names the
URL to POST messages to; every answer arrives on the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import urljoin

import httpx

from .session import McpError, Receiver

SESSION_HEADER = "mcp-session-id"
ACCEPT = "application/json, text/event-stream"
RESUME_ATTEMPTS = 3


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str, str]]:
    """(event, data, id) for each server-sent event of a response."""
    event, event_id = "message", ""
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event, "\n".join(data), event_id
            event, data = "message", []
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id = value
    if data:
        yield event, "\n".join(data), event_id


def _messages(data: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a body (one, or a batch); garbage gives none."""
    try:
        value = json.loads(data)
    except ValueError:
        return []
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, dict)]


class _HttpBase:
    def __init__(self, url: str, headers: Mapping[str, str], timeout: float) -> None:
        self.url = url
        self.headers = dict(headers)
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(timeout, read=None))
        self.receive: Receiver = lambda message: None
        self.closed: Callable[[str], None] = lambda reason: None
        self.last_error = ""
        self._tasks: set[asyncio.Task[None]] = set()

    def negotiated(self, version: str) -> None:
        self.headers["MCP-Protocol-Version"] = version

    def diagnostics(self) -> str:
        return self.last_error

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stop_tasks(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class StreamableHttpTransport(_HttpBase):
    session_id = ""

    async def open(self, receive: Receiver, closed: Callable[[str], None]) -> None:
        self.receive, self.closed = receive, closed

    def _request_headers(self) -> dict[str, str]:
        headers = {**self.headers, "Accept": ACCEPT}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    async def send(self, message: dict[str, Any]) -> None:
        """POST one message; its answer (JSON or SSE) is read in the background."""
        request = self.client.build_request(
            "POST", self.url, json=message,
            headers={**self._request_headers(), "Content-Type": "application/json"})
        try:
            response = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise McpError(f"could not reach {self.url}: {exc}") from None
        if response.status_code >= 400:
            body = (await response.aread())[:300].decode("utf-8", "replace")
            await response.aclose()
            if response.status_code == 404 and self.session_id:
                self.closed("the server ended the session (404); /mcp reload starts a new one")
            raise McpError(f"HTTP {response.status_code} from {self.url}: {body.strip()}")
        self.session_id = response.headers.get(SESSION_HEADER, self.session_id)
        if "id" in message and "method" in message:
            self._spawn(self._read_answer(response))
        else:
            await response.aclose()

    async def _read_answer(self, response: httpx.Response) -> None:
        try:
            kind = response.headers.get("content-type", "")
            if kind.startswith("text/event-stream"):
                last_id = await self._read_stream(response)
                if last_id:
                    await self._resume(last_id)
            elif kind.startswith("application/json"):
                for message in _messages((await response.aread()).decode("utf-8", "replace")):
                    self.receive(message)
        except httpx.HTTPError as exc:
            self.last_error = f"the answer stream broke: {exc}"
        finally:
            await response.aclose()

    async def _read_stream(self, response: httpx.Response) -> str:
        """Deliver the stream's messages; the last event id if it ended before an answer."""
        last_id = ""
        try:
            async for _, data, event_id in sse_events(response):
                last_id = event_id or last_id
                for message in _messages(data):
                    self.receive(message)
                    if "method" not in message:  # the answer: this stream's work is done
                        return ""
        except httpx.HTTPError:
            if not last_id:
                raise
        return last_id

    async def _resume(self, last_id: str) -> None:
        """Ask for the rest of a broken stream, where the server keeps one (event ids)."""
        for _ in range(RESUME_ATTEMPTS):
            headers = {**self._request_headers(), "Last-Event-ID": last_id}
            async with self.client.stream("GET", self.url, headers=headers) as response:
                if response.status_code != 200:
                    return
                last_id = await self._read_stream(response)
            if not last_id:
                return

    async def aclose(self) -> None:
        await self._stop_tasks()
        if self.session_id:
            with contextlib.suppress(httpx.HTTPError):
                await self.client.delete(self.url, headers=self._request_headers(), timeout=5)
        await self.client.aclose()


class SseTransport(_HttpBase):
    """The 2024-11-05 transport: an event stream to read, an endpoint to POST to."""

    endpoint = ""

    async def open(self, receive: Receiver, closed: Callable[[str], None]) -> None:
        self.receive, self.closed = receive, closed
        found: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._spawn(self._listen(found))
        self.endpoint = await found

    async def _listen(self, found: asyncio.Future[str]) -> None:
        reason = "the server closed its event stream"
        try:
            headers = {**self.headers, "Accept": "text/event-stream"}
            async with self.client.stream("GET", self.url, headers=headers) as response:
                if response.status_code != 200:
                    raise McpError(f"HTTP {response.status_code} from {self.url}")
                async for event, data, _ in sse_events(response):
                    if event == "endpoint" and not found.done():
                        found.set_result(urljoin(self.url, data.strip()))
                    elif event == "message":
                        for message in _messages(data):
                            self.receive(message)
        except (httpx.HTTPError, McpError) as exc:
            reason = f"the event stream from {self.url} failed: {exc}"
        if not found.done():
            found.set_exception(McpError(reason))
        self.last_error = reason
        self.closed(reason)

    async def send(self, message: dict[str, Any]) -> None:
        try:
            response = await self.client.post(self.endpoint, json=message, headers=self.headers)
        except httpx.HTTPError as exc:
            raise McpError(f"could not reach {self.endpoint}: {exc}") from None
        if response.status_code >= 400:
            raise McpError(f"HTTP {response.status_code} from {self.endpoint}")

    async def aclose(self) -> None:
        await self._stop_tasks()
        await self.client.aclose()
