"""A streamable-HTTP MCP server of our own on 127.0.0.1, for what real servers do not do on
demand: drop an answer stream midway, forget a session, push on the GET stream.

    with McpHttpServer(tool_stream="drop") as server:
        ... {"type": "http", "url": server.url} ...

`tool_stream` says how a `tools/call` is answered: "json" (one JSON body), "drop" (an SSE
stream that sends a progress notification with event id "e1", then breaks: the answer is
served to a GET carrying `Last-Event-ID: e1`, as event "e2"), "end" (an SSE stream that ends
cleanly with no answer and no event id). `get_stream` False answers the GET with 405.
`push(message)` sends a message on the open GET stream; `expire()` forgets every session,
so the next request carrying one gets a 404. Streams use chunked encoding, so a dropped
stream is a genuinely broken body. Every request is kept in `seen` as (method, headers,
body).
"""

from __future__ import annotations

import json
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOLS = [{"name": "echo", "description": "Echo the text.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                          "required": ["text"]}}]
ADDED = {"name": "pushed", "description": "A tool announced on the GET stream.",
         "inputSchema": {"type": "object", "properties": {}}}


class McpHttpServer:
    def __init__(self, *, tool_stream: str = "json", get_stream: bool = True) -> None:
        self.tool_stream = tool_stream
        self.get_stream = get_stream
        self.sessions: set[str] = set()
        self.initialized = 0
        self.tools = list(TOOLS)
        self.seen: list[tuple[str, dict[str, str], Any]] = []
        self.parked: dict[str, dict] = {}
        """Answers of dropped streams, by the last event id sent before the drop."""
        self.pushes: queue.Queue[dict | None] = queue.Queue()
        self.listening = threading.Event()
        self._http = _Server(("127.0.0.1", 0), _Handler)
        self._http.owner = self
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/mcp"

    def __enter__(self) -> McpHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.pushes.put(None)
        self._http.shutdown()
        self._http.server_close()

    def push(self, message: dict) -> None:
        self.pushes.put(message)

    def add_tool_and_announce(self) -> None:
        self.tools.append(ADDED)
        self.push({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    def expire(self) -> None:
        self.sessions.clear()

    def requests_of(self, method: str) -> list[tuple[dict[str, str], Any]]:
        return [(headers, body) for verb, headers, body in self.seen if verb == method]

    def answer(self, request: dict) -> dict:
        method = request.get("method")
        if method == "initialize":
            self.initialized += 1
            result: dict = {"protocolVersion": "2025-06-18",
                            "capabilities": {"tools": {"listChanged": True}},
                            "serverInfo": {"name": "http-fake", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": self.tools}
        elif method == "tools/call":
            text = (request.get("params") or {}).get("arguments", {}).get("text", "")
            result = {"content": [{"type": "text", "text": f"echo: {text}"}]}
        else:
            return {"jsonrpc": "2.0", "id": request["id"],
                    "error": {"code": -32601, "message": "no such method"}}
        return {"jsonrpc": "2.0", "id": request["id"], "result": result}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: McpHttpServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-stream is part of these tests


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def owner(self) -> McpHttpServer:
        return self.server.owner

    def _record(self, body: Any) -> None:
        self.owner.seen.append((self.command, {k.lower(): v for k, v in self.headers.items()}, body))

    def _known_session(self) -> bool:
        """No session id (initialize) or one the server still knows; else a 404 is sent."""
        sid = self.headers.get("Mcp-Session-Id")
        if sid is None or sid in self.owner.sessions:
            return True
        self._plain(404, b"unknown session")
        return False

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._record(body)
        if not self._known_session():
            return
        if "id" not in body or "method" not in body:
            self._plain(202, b"")
            return
        if body["method"] == "initialize":
            sid = f"s{self.owner.initialized + 1}"
            self.owner.sessions.add(sid)
            self._json(self.owner.answer(body), {"Mcp-Session-Id": sid})
        elif body["method"] == "tools/call" and self.owner.tool_stream != "json":
            self._broken_stream(body)
        else:
            self._json(self.owner.answer(body))

    def do_GET(self) -> None:
        self._record(None)
        if not self._known_session():
            return
        resume = self.headers.get("Last-Event-ID")
        if resume is not None:
            parked = self.owner.parked.pop(resume, None)
            self._stream_start()
            if parked is not None:
                self._event(parked, "e2")
            self._chunk(b"")
            return
        if not self.owner.get_stream:
            self._plain(405, b"")
            return
        self._stream_start()
        self.owner.listening.set()
        while (message := self.owner.pushes.get()) is not None:
            self._event(message)
        self._chunk(b"")

    def do_DELETE(self) -> None:
        self._record(None)
        self._plain(200, b"")

    def _broken_stream(self, body: dict) -> None:
        self._stream_start()
        if self.owner.tool_stream == "drop":
            self.owner.parked["e1"] = self.owner.answer(body)
            self._event({"jsonrpc": "2.0", "method": "notifications/progress",
                         "params": {"progressToken": 1, "progress": 1}}, "e1")
            self.close_connection = True
            self.connection.shutdown(2)  # no final chunk: the body is broken
            return
        self._chunk(b"")  # "end": a clean end, with neither an answer nor an event id

    # ---------------------------------------------------------------- framing

    def _plain(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, message: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(message).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _event(self, message: dict, event_id: str = "") -> None:
        head = f"id: {event_id}\n" if event_id else ""
        self._chunk(f"{head}event: message\ndata: {json.dumps(message)}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
