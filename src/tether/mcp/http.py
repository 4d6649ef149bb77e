"""The HTTP transports over httpx: streamable HTTP, and the legacy HTTP+SSE one.

Streamable HTTP: every message is a POST; the answer comes as JSON or as an SSE stream
(which may carry notifications and server requests before the answer). The session id
the server gives at initialize travels in `Mcp-Session-Id` from then on, the agreed
version in `MCP-Protocol-Version`, and closing sends a DELETE. A stream that breaks
after an event id is resumed with a GET carrying `Last-Event-ID`; one that cannot be
resumed fails its request. Once initialized, a GET opens the stream the server pushes
its own notifications on (405: it has none). A 404 for a request carrying the session
id means the server forgot the session: `SessionExpired` lets the session start anew.

Legacy HTTP+SSE: a GET opens the event stream, whose first `endpoint` event names the
URL to POST messages to; every answer arrives on the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import httpx

from .session import McpError, Receiver, SessionExpired

SESSION_HEADER = "mcp-session-id"
ACCEPT = "application/json, text/event-stream"
RESUME_ATTEMPTS = 3
LISTEN_RECONNECTS = 3
"""Times in a row the notification stream may end with nothing on it before it is left closed."""
LISTEN_PAUSE = 1.0
"""Seconds before opening it again, times the number of idle ends in a row."""
STREAM_ENDED = -32000
"""The JSON-RPC error code of a request whose answer stream ended without the answer."""


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


@dataclass
class StreamEnd:
    """How reading an event stream ended."""

    answered: bool = False
    """The answer of the request the stream belongs to came (a POST's stream is done)."""
    last_id: str = ""
    """The last event id seen: where a resumption starts."""
    delivered: int = 0


class StreamableHttpTransport(_HttpBase):
    session_id = ""

    def __init__(self, url: str, headers: Mapping[str, str], timeout: float) -> None:
        super().__init__(url, headers, timeout)
        self.listening = asyncio.Event()
        """Set while the server's own notification stream (the GET) is open."""
        self.listener: asyncio.Task[None] | None = None
        """The task reading that stream (done at once when the server has none)."""

    async def open(self, receive: Receiver, closed: Callable[[str], None]) -> None:
        self.receive, self.closed = receive, closed

    def _request_headers(self, accept: str = ACCEPT) -> dict[str, str]:
        headers = {**self.headers, "Accept": accept}
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
            await self._refused(response)
        self.session_id = response.headers.get(SESSION_HEADER, self.session_id)
        if message.get("method") == "notifications/initialized":
            self._listen_for_pushes()
        if "id" in message and "method" in message:
            self._spawn(self._read_answer(response, message["id"]))
        else:
            await response.aclose()

    async def _refused(self, response: httpx.Response) -> None:
        body = (await response.aread())[:300].decode("utf-8", "replace")
        await response.aclose()
        if response.status_code == 404 and self.session_id:
            self._forget_session()
            raise SessionExpired(f"the server no longer knows the session (HTTP 404 from {self.url})")
        raise McpError(f"HTTP {response.status_code} from {self.url}: {body.strip()}")

    def _forget_session(self) -> None:
        """The next message starts a new session: no id, and the old session's stream ends."""
        self.session_id = ""
        if self.listener is not None:
            self.listener.cancel()
            self.listener = None

    # ---------------------------------------------------------------- answers

    async def _read_answer(self, response: httpx.Response, request_id: Any) -> None:
        """Deliver the answer to one POST; a stream that ends before it is resumed from
        its last event id, and when that cannot be done the request fails (never hangs)."""
        kind = response.headers.get("content-type", "")
        try:
            if kind.startswith("application/json"):
                for message in _messages((await response.aread()).decode("utf-8", "replace")):
                    self.receive(message)
            elif not kind.startswith("text/event-stream"):
                self._fail(request_id, f"the server answered with {kind or 'no content type'}")
            else:
                await self._answer_from_stream(response, request_id)
        except httpx.HTTPError as exc:
            self._fail(request_id, f"reading the answer failed: {exc}")
        finally:
            await response.aclose()

    async def _answer_from_stream(self, response: httpx.Response, request_id: Any) -> None:
        end = await self._pump(response, until_answer=True)
        if not end.answered and not (end.last_id and await self._resume(end.last_id)):
            self._fail(request_id, "the answer stream ended before the answer"
                       + ("" if end.last_id else " (no event id to resume from)"))

    async def _pump(self, response: httpx.Response, *, until_answer: bool) -> StreamEnd:
        """Deliver a stream's messages until it ends (or breaks), or, for a request's own
        stream, until its answer came."""
        end = StreamEnd()
        try:
            async for _, data, event_id in sse_events(response):
                end.last_id = event_id or end.last_id
                for message in _messages(data):
                    self.receive(message)
                    end.delivered += 1
                    if until_answer and "method" not in message:
                        end.answered = True
                        return end
        except httpx.HTTPError as exc:
            self.last_error = f"an event stream from {self.url} broke: {exc}"
        return end

    async def _resume(self, last_id: str) -> bool:
        """Ask for the rest of a broken stream with GET and `Last-Event-ID` (the spec's
        resumption); True once the answer came."""
        for _ in range(RESUME_ATTEMPTS):
            headers = {**self._request_headers("text/event-stream"), "Last-Event-ID": last_id}
            try:
                async with self.client.stream("GET", self.url, headers=headers) as response:
                    if not _is_event_stream(response):
                        self.last_error = (f"resuming a broken stream: HTTP {response.status_code} "
                                           f"from {self.url}")
                        return False
                    end = await self._pump(response, until_answer=True)
            except httpx.HTTPError as exc:
                self.last_error = f"resuming a broken stream from {self.url} failed: {exc}"
                return False
            if end.answered:
                return True
            last_id = end.last_id or last_id
        return False

    def _fail(self, request_id: Any, why: str) -> None:
        self.last_error = why
        self.receive({"jsonrpc": "2.0", "id": request_id,
                      "error": {"code": STREAM_ENDED, "message": f"{why} ({self.url})"}})

    # ---------------------------------------------------------------- the server's own stream

    def _listen_for_pushes(self) -> None:
        if self.listener is not None:
            self.listener.cancel()
        self.listener = asyncio.ensure_future(self._listen())
        self._tasks.add(self.listener)
        self.listener.add_done_callback(self._tasks.discard)

    async def _listen(self) -> None:
        """The stream a server may push notifications and requests on outside any request
        (a GET, opened once the session is initialized). HTTP 405: the server offers none,
        which is fine. A stream that ends is opened again (from its last event id), but a
        server that keeps closing it without sending anything is left alone."""
        last_id, idle = "", 0
        while idle < LISTEN_RECONNECTS:
            headers = self._request_headers("text/event-stream")
            if last_id:
                headers["Last-Event-ID"] = last_id
            try:
                async with self.client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code == 405:
                        return
                    if not _is_event_stream(response):
                        self.last_error = (f"the notification stream (GET {self.url}) answered "
                                           f"HTTP {response.status_code}")
                        return
                    self.listening.set()
                    end = await self._pump(response, until_answer=False)
            except httpx.HTTPError as exc:
                self.last_error = f"the notification stream (GET {self.url}) failed: {exc}"
                end = StreamEnd()
            finally:
                self.listening.clear()
            last_id = end.last_id or last_id
            idle = 0 if end.delivered else idle + 1
            await asyncio.sleep(LISTEN_PAUSE * idle)  # a server that closes it at once is not hammered

    async def aclose(self) -> None:
        await self._stop_tasks()
        if self.session_id:
            with contextlib.suppress(httpx.HTTPError):
                await self.client.delete(self.url, headers=self._request_headers(), timeout=5)
        await self.client.aclose()


def _is_event_stream(response: httpx.Response) -> bool:
    return (response.status_code == 200
            and response.headers.get("content-type", "").startswith("text/event-stream"))


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
