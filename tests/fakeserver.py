"""A scripted local model server that speaks Ollama's, OpenAI's, Anthropic's and Gemini's
wire formats.

Use it wherever real model traffic would be needed (provider tests, CLI
end-to-end tests, benchmarks). It is a real HTTP server on 127.0.0.1 with a
free port, so the code under test runs its real network path:

    with FakeServer([Reply(text="Hello!"), Reply(tool_calls=[("read_file", {"path": "a"})])]) as s:
        provider = OllamaProvider(s.url)              # or OpenAIProvider(s.url + "/v1")
        ...
        assert s.requests[0][0] == "/api/chat"

`FakeServer(port=N)` binds a chosen port instead of a free one, e.g. to bring
a server back up where a test saw it down.

Routes (the wire format follows the path):

    POST /api/chat              Ollama NDJSON stream          (serves the next Reply)
    POST /api/show              {"capabilities": [...]}        ("tools" if tools_capable)
    GET  /api/tags              {"models": [{"name": ...}]}
    GET  /api/version           {"version": ...}
    POST /api/pull              Ollama's pull NDJSON stream    (serves the next Pull; a
                                pull that succeeds adds the model to `models`)
    HEAD /api/blobs/sha256:HEX  200 when `blobs` holds it, else 404
    POST /api/blobs/sha256:HEX  the body kept in `blobs` (201), 400 when its SHA-256 is not HEX
    POST /api/create            Ollama's create NDJSON stream  (serves the next Create; one
                                that succeeds adds the model; 400 for a file not in `blobs`)
    POST /v1/chat/completions   OpenAI SSE stream              (serves the next Reply)
    GET  /v1/models             {"object": "list", "data": [{"id": ...}]} (Anthropic reads
                                the same shape)
    POST /v1/messages           Anthropic Messages SSE stream  (serves the next Reply;
                                400 without an anthropic-version header or max_tokens)
    POST /v1beta/models/{model}:streamGenerateContent?alt=sse
                                Gemini SSE stream              (serves the next Reply;
                                400 without alt=sse)
    GET  /v1beta/models         {"models": [{"name": "models/...", ...}]} plus one
                                embedding-only model that a chat client should skip

A chat request whose history pairs calls and results wrongly (a call without its result
right after it, a result without its call) is refused with a 400 in the provider's format,
as the real APIs refuse it (`*_history_problem` say why).

Every request is recorded, body parsed as JSON, in `requests` as (path, body)
with the path's query removed; `headers` and `queries` hold each request's
headers and query string in the same order.
Chat requests take replies from a queue; when it is empty `default_reply` is
served, and without one the server answers 500 "fake server script exhausted".
Streams use chunked transfer encoding as the real servers do, so a
`drop_after` reply ends with a genuinely broken body, not a clean end.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED_AT = "2025-01-01T00:00:00.000000Z"
CREATED = 1735689600
DEFAULT_MODELS = ["fake-coder:7b", "fake-chat:1b"]


@dataclass
class Reply:
    """One scripted model answer, rendered in whichever format was asked for."""

    text: str = ""
    """The answer text, streamed in `chunk_size` pieces."""
    tool_calls: list[tuple[str, dict]] = field(default_factory=list)
    """Native calls as (name, arguments). Ollama sends them whole in one chunk
    (without ids, as Ollama does); OpenAI streams each call's JSON arguments in
    `chunk_size` fragments, with ids `call_<request number>_<call index>`;
    Anthropic streams them as `input_json_delta` fragments of `tool_use` blocks
    with ids `toolu_<request number>_<call index>`; Gemini sends them whole, all
    in one chunk, without ids."""
    thinking: str = ""
    """Reasoning text: Ollama `message.thinking`, OpenAI `delta.reasoning_content`,
    Anthropic a `thinking` block (with a signature), Gemini `thought: true` parts."""
    chunk_size: int = 4
    """Characters per streamed chunk, for text and tool-call argument fragments."""
    status: int = 200
    """Anything but 200 answers with an error body in the provider's format."""
    error_message: str = "error"
    delay: float = 0.0
    """Seconds to wait before each streamed chunk."""
    hang_up: bool = False
    """Close the connection without sending a byte of the response (a keep-alive connection
    the server dropped as the request arrived)."""
    drop_after: int | None = None
    """Close the connection after this many chunks (a dropped stream). Every frame
    counts, including OpenAI's first role-only frame and a malformed one."""
    malformed_chunk: bool = False
    """Insert one line that is not valid JSON in the middle of the stream."""
    retry_after: float | None = None
    """Retry-After header value sent with an error status."""
    usage: tuple[int, int] = (10, 5)
    """(input, output) tokens reported at the end."""
    cached_tokens: int = 0
    """Prompt tokens served from a cache: OpenAI `prompt_tokens_details.cached_tokens`,
    Anthropic `cache_read_input_tokens`, Gemini `cachedContentTokenCount`."""
    cache_write_tokens: int = 0
    """Anthropic only: `cache_creation_input_tokens`."""
    reasoning_tokens: int = 0
    """Gemini only: `usageMetadata.thoughtsTokenCount`."""
    thought_signature: str = ""
    """Gemini only: the `thoughtSignature` sent with the first function call."""
    finish_reason: str | None = None
    """Override the reported stop reason (e.g. "length"); None reports the natural one."""
    interleave_tool_calls: bool = False
    """OpenAI only: alternate the fragments of parallel calls instead of sending them in turn."""
    gate: threading.Event | None = None
    """Hold the reply until this is set (or the server stops): the client waits for the
    model for exactly as long as a test wants, without any sleep."""
    gate_after: int = 0
    """Frames sent before the gate holds the rest (0: the response has not begun)."""
    raw_frames: list[bytes] | None = None
    """Stream exactly these bytes, one chunk each, instead of rendering the fields above
    (for wire shapes the renderer does not produce: garbage, a missing `[DONE]`, ...)."""


@dataclass
class Pull:
    """One scripted answer to Ollama's `/api/pull`: "pulling manifest", `steps` progress lines
    per layer (`digest`, `total`, `completed`), then "verifying sha256 digest", "writing
    manifest" and "success" (Ollama's API reference, "Pull a Model")."""

    layers: list[tuple[str, int]] = field(
        default_factory=lambda: [("sha256:" + "a" * 64, 1_000_000), ("sha256:" + "b" * 64, 1_000)])
    steps: int = 4
    status: int = 200
    """Anything but 200 answers `{"error": error_message}` with that status, before any stream."""
    error_message: str = "pull model manifest: file does not exist"
    error_after: int | None = None
    """Send `{"error": error_message}` as the stream's line after this many lines, and end."""
    drop_after: int | None = None
    """Close the connection after this many lines (a dropped stream)."""
    no_success: bool = False
    """End the stream cleanly but without the "success" line."""
    gate: threading.Event | None = None
    gate_after: int = 0
    """As Reply's: the lines after `gate_after` wait for the gate."""

    def status_lines(self) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = [{"status": "pulling manifest"}]
        for digest, total in self.layers:
            lines.append({"status": f"pulling {digest[7:19]}", "digest": digest, "total": total})
            for step in range(1, self.steps + 1):
                lines.append({"status": f"pulling {digest[7:19]}", "digest": digest,
                              "total": total, "completed": total * step // self.steps})
        return lines + [{"status": "verifying sha256 digest"}, {"status": "writing manifest"}]

    def frames(self) -> list[bytes]:
        lines = self.status_lines()
        if not self.no_success:
            lines.append({"status": "success"})
        if self.error_after is not None:
            lines = [*lines[:self.error_after], {"error": self.error_message}]
        return [(json.dumps(line) + "\n").encode() for line in lines]

    def as_reply(self) -> Reply:
        return Reply(raw_frames=self.frames(), drop_after=self.drop_after, gate=self.gate,
                     gate_after=self.gate_after)


@dataclass
class Create(Pull):
    """One scripted answer to Ollama's `/api/create` of a GGUF: "parsing GGUF", "using existing
    layer", "writing manifest", "success" (Ollama's API reference, "Create a Model"); the
    failure fields are Pull's."""

    error_message: str = "invalid file magic"

    def status_lines(self) -> list[dict[str, Any]]:
        return [{"status": "parsing GGUF"}, {"status": "using existing layer sha256:..."},
                {"status": "writing manifest"}]


class FakeServer:
    """A scripted Ollama + OpenAI-compatible server in a background thread."""

    def __init__(
        self,
        replies: list[Reply] | None = None,
        *,
        tools_capable: bool = True,
        context_length: int | None = 32_768,
        models: list[str] | None = None,
        port: int = 0,
    ) -> None:
        self.port = port
        self.tools_capable = tools_capable
        self.context_length = context_length
        """What `/api/show` reports as the model's trained context (None: not reported)."""
        self.parameter_size: str | None = None
        """What `/api/show` reports as `details.parameter_size`, e.g. "1.5B" (None: not reported)."""
        self.parameter_count: int | None = None
        """The model's exact parameter count: `/api/show`'s `model_info["general.parameter_count"]`
        and, as llama.cpp's server states it, `meta.n_params` in each `/v1/models` entry
        (None: not reported)."""
        self.slot_context: int | None = None
        """llama.cpp's `meta.n_ctx` in each `/v1/models` entry: the context of one slot, what
        `-c` gives each of `-np` slots (None: not reported)."""
        self.models = list(DEFAULT_MODELS if models is None else models)
        self.owned_by = "fake"
        """`owned_by` of each `/v1/models` entry: the server's name ("llamacpp", "vllm")."""
        self.default_reply: Reply | None = None
        self.requests: list[tuple[str, dict]] = []
        self.headers: list[dict[str, str]] = []
        """The headers of each request, parallel to `requests` (names lower-cased)."""
        self.queries: list[str] = []
        """The query string of each request ("" when none), parallel to `requests`."""
        self.connections = 0
        """How many connections clients opened (a kept-alive one serves several requests)."""
        self._queue: deque[Reply] = deque(replies or [])
        self.pulls: deque[Pull] = deque()
        """Answers to `/api/pull`, in order; when empty, a pull that succeeds."""
        self.creates: deque[Create] = deque()
        """Answers to `/api/create`, in order; when empty, a create that succeeds."""
        self.blobs: dict[str, int] = {}
        """The blobs uploaded, "sha256:HEX" to size in bytes."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- lifecycle

    def start(self) -> FakeServer:
        self._stopping.clear()
        handler = type("BoundHandler", (_Handler,), {"fake": self})
        self._httpd = QuietServer(("127.0.0.1", self.port), handler)
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- script

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def bodies(self, path: str) -> list[dict]:
        """The bodies of the requests made to one path, in order."""
        with self._lock:
            return [body for p, body in self.requests if p == path]

    def _record(self, path: str, body: dict, headers: dict[str, str], query: str = "") -> None:
        with self._lock:
            self.requests.append((path, body))
            self.headers.append(headers)
            self.queries.append(query)

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default_reply

    def _pause(self, seconds: float) -> None:
        # Returns early when the server stops, so a slow reply never delays teardown.
        if seconds > 0:
            self._stopping.wait(seconds)


# ---------------------------------------------------------------- wire formats


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _ollama_frames(reply: Reply, model: str) -> list[bytes]:
    def line(message: dict[str, Any], **extra: Any) -> bytes:
        chunk = {"model": model, "created_at": CREATED_AT, "message": message, **extra}
        return (json.dumps(chunk) + "\n").encode()

    frames = [
        line({"role": "assistant", "content": "", "thinking": p}, done=False)
        for p in _pieces(reply.thinking, reply.chunk_size)
    ]
    frames += [
        line({"role": "assistant", "content": p}, done=False)
        for p in _pieces(reply.text, reply.chunk_size)
    ]
    if reply.tool_calls:
        calls = [{"function": {"name": n, "arguments": a}} for n, a in reply.tool_calls]
        frames.append(line({"role": "assistant", "content": "", "tool_calls": calls}, done=False))
    frames.append(
        line(
            {"role": "assistant", "content": ""},
            done=True,
            done_reason=reply.finish_reason or "stop",
            total_duration=1_000_000,
            prompt_eval_count=reply.usage[0],
            eval_count=reply.usage[1],
        )
    )
    if reply.malformed_chunk:
        frames.insert(len(frames) // 2, b'{"model": "broken", "message": {"content": \n')
    return frames


def _openai_tool_fragments(reply: Reply, reply_id: str) -> list[dict[str, Any]]:
    per_call: list[list[dict[str, Any]]] = []
    for i, (name, arguments) in enumerate(reply.tool_calls):
        first = {
            "index": i,
            "id": f"call_{reply_id}_{i}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        rest = [
            {"index": i, "function": {"arguments": piece}}
            for piece in _pieces(json.dumps(arguments), reply.chunk_size)
        ]
        per_call.append([first, *rest])
    if not reply.interleave_tool_calls:
        return [fragment for call in per_call for fragment in call]
    longest = max((len(c) for c in per_call), default=0)
    return [call[k] for k in range(longest) for call in per_call if k < len(call)]


def _openai_frames(reply: Reply, model: str, include_usage: bool, reply_id: str) -> list[bytes]:
    def event(choices: list[dict[str, Any]], usage: Any = None) -> bytes:
        chunk: dict[str, Any] = {
            "id": f"chatcmpl-{reply_id}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": choices,
        }
        if include_usage:
            chunk["usage"] = usage
        return f"data: {json.dumps(chunk)}\n\n".encode()

    def delta(d: dict[str, Any], finish: str | None = None) -> bytes:
        return event([{"index": 0, "delta": d, "finish_reason": finish}])

    frames = [delta({"role": "assistant", "content": ""})]
    frames += [delta({"reasoning_content": p}) for p in _pieces(reply.thinking, reply.chunk_size)]
    frames += [delta({"content": p}) for p in _pieces(reply.text, reply.chunk_size)]
    frames += [delta({"tool_calls": [f]}) for f in _openai_tool_fragments(reply, reply_id)]
    natural = "tool_calls" if reply.tool_calls else "stop"
    frames.append(delta({}, reply.finish_reason or natural))
    if include_usage:
        prompt, completion = reply.usage
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        }
        frames.append(event([], usage))
    if reply.malformed_chunk:
        frames.insert(len(frames) // 2, b'data: {"choices": [{"delta": {"content": "oops\n\n')
    frames.append(b"data: [DONE]\n\n")
    return frames


def _sse(event: str, payload: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(payload)}\n\n".encode()


def _anthropic_block(
    index: int, block: dict[str, Any], deltas: list[dict[str, Any]]
) -> list[bytes]:
    start = {"type": "content_block_start", "index": index, "content_block": block}
    frames = [_sse("content_block_start", start)]
    frames += [
        _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    frames.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return frames


def _anthropic_frames(reply: Reply, model: str, reply_id: str) -> list[bytes]:
    size = reply.chunk_size
    usage = {
        "input_tokens": reply.usage[0],
        "cache_creation_input_tokens": reply.cache_write_tokens,
        "cache_read_input_tokens": reply.cached_tokens,
        "output_tokens": 1,
    }
    message = {
        "id": f"msg_{reply_id}",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    frames = [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse("ping", {"type": "ping"}),
    ]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if reply.thinking:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(reply.thinking, size)]
        deltas.append({"type": "signature_delta", "signature": "EqQBCgIYAhIM" + reply_id})
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
    if reply.text:
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(reply.text, size)]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for i, (name, arguments) in enumerate(reply.tool_calls):
        start = {"type": "tool_use", "id": f"toolu_{reply_id}_{i}", "name": name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": ""}]
        deltas += [
            {"type": "input_json_delta", "partial_json": p}
            for p in _pieces(json.dumps(arguments), size)
        ]
        blocks.append((start, deltas))
    for index, (block, deltas) in enumerate(blocks):
        frames += _anthropic_block(index, block, deltas)
    natural = "tool_use" if reply.tool_calls else "end_turn"
    frames.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.finish_reason or natural, "stop_sequence": None},
                "usage": {"output_tokens": reply.usage[1]},
            },
        )
    )
    frames.append(_sse("message_stop", {"type": "message_stop"}))
    if reply.malformed_chunk:
        broken = b'event: content_block_delta\ndata: {"type": "content_bl\n\n'
        frames.insert(len(frames) // 2, broken)
    return frames


ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _gemini_frames(reply: Reply, model: str, reply_id: str) -> list[bytes]:
    prompt, output = reply.usage
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output + reply.reasoning_tokens,
    }
    if reply.cached_tokens:
        usage["cachedContentTokenCount"] = reply.cached_tokens
    if reply.reasoning_tokens:
        usage["thoughtsTokenCount"] = reply.reasoning_tokens

    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        payload = {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": f"resp-{reply_id}",
        }
        return f"data: {json.dumps(payload)}\r\n\r\n".encode()

    size = reply.chunk_size
    frames = [chunk([{"text": p, "thought": True}]) for p in _pieces(reply.thinking, size)]
    frames += [chunk([{"text": p}]) for p in _pieces(reply.text, size)]
    if reply.tool_calls:
        calls: list[dict[str, Any]] = [
            {"functionCall": {"name": n, "args": a}} for n, a in reply.tool_calls
        ]
        if reply.thought_signature:
            calls[0]["thoughtSignature"] = reply.thought_signature
        frames.append(chunk(calls))
    frames.append(chunk([{"text": ""}], reply.finish_reason or "STOP"))
    if reply.malformed_chunk:
        frames.insert(len(frames) // 2, b'data: {"candidates": [{"content": \r\n\r\n')
    return frames


GEMINI_ERROR_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


# ---------------------------------------------------------------- history checks
#
# The real APIs refuse a request whose history pairs calls and results wrongly (OpenAI: "An
# assistant message with 'tool_calls' must be followed by tool messages responding to each
# 'tool_call_id'"; Anthropic: "tool_use ids were found without tool_result blocks immediately
# after"; Gemini: "the number of function response parts is equal to the number of function
# call parts"). So does this server, with a 400 in the provider's format. Ollama itself does not
# check, but a tool model's chat template expects each call answered, so it is held to the same.


def openai_history_problem(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        ids = [c["id"] for c in message.get("tool_calls") or []]
        following = messages[i + 1 : i + 1 + len(ids)]
        if ids and [m.get("tool_call_id") for m in following if m.get("role") == "tool"] != ids:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Message {i} calls {ids}."
            )
        if message.get("role") == "tool":
            earlier = [c["id"] for m in messages[:i] for c in m.get("tool_calls") or []]
            if message.get("tool_call_id") not in earlier:
                return f"Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (message {i})."
    return ""


def ollama_history_problem(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        names = [c["function"]["name"] for c in message.get("tool_calls") or []]
        following = messages[i + 1 : i + 1 + len(names)]
        if names and [m.get("tool_name") for m in following if m.get("role") == "tool"] != names:
            return f"message {i} calls {names} without a tool message answering each"
        if message.get("role") == "tool" and (i == 0 or messages[i - 1]["role"] not in ("assistant", "tool")):
            return f"message {i}: a tool message without the call it answers"
    return ""


def anthropic_history_problem(body: dict[str, Any]) -> str:
    turns = body.get("messages") or []
    if not turns or turns[0]["role"] != "user":
        return "messages: the first message must use the user role"
    for i, (earlier, later) in enumerate(zip(turns, turns[1:], strict=False)):
        if earlier["role"] == later["role"]:
            return f"messages.{i + 1}: roles must alternate between user and assistant"
    for i, turn in enumerate(turns):
        if not turn["content"]:
            return f"messages.{i}: all messages must have non-empty content"
        if any(b["type"] == "text" and not b["text"].strip() for b in turn["content"]):
            return f"messages.{i}: text content blocks must contain non-whitespace text"
        uses = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
        answer = turns[i + 1]["content"] if i + 1 < len(turns) else []
        leading = [b.get("tool_use_id") for b in answer[: len(uses)] if b["type"] == "tool_result"]
        if turn["role"] == "assistant" and uses and leading != uses:
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(uses)}"
            )
        called = {b["id"] for b in turns[i - 1]["content"] if b["type"] == "tool_use"} if i else set()
        for block in turn["content"]:
            if block["type"] == "tool_result" and block["tool_use_id"] not in called:
                return f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks"
    return ""


def gemini_history_problem(body: dict[str, Any]) -> str:
    contents = body.get("contents") or []
    if not contents or contents[0]["role"] != "user":
        return "Please ensure that the conversation starts with a user turn."
    for i, content in enumerate(contents):
        if i and content["role"] == contents[i - 1]["role"]:
            return "Please ensure that multiturn requests alternate between user and model."
        if content["role"] not in ("user", "model") or not content["parts"]:
            return f"contents[{i}]: a turn needs a role and at least one part"
        if any(not part.get("text", "x").strip() for part in content["parts"]):
            return f"contents[{i}]: a text part must not be empty"
        calls = [p["functionCall"]["name"] for p in content["parts"] if "functionCall" in p]
        following = contents[i + 1]["parts"] if i + 1 < len(contents) else []
        responses = [p["functionResponse"]["name"] for p in following if "functionResponse" in p]
        asked = [p for p in contents[i - 1]["parts"] if "functionCall" in p] if i else []
        answered = [p for p in content["parts"] if "functionResponse" in p]
        if (calls and responses != calls) or len(answered) not in (0, len(asked)):
            return (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
    return ""


# ---------------------------------------------------------------- handler


class QuietServer(ThreadingHTTPServer):
    """A test server whose clients may hang up: that is no error to print."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (closed streams, read timeouts) are normal in tests.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked streams and keep-alive, like the real servers
    # Each chunk is its own small write: with Nagle's algorithm on, every one after the first
    # waited for the client's delayed ACK (about 40 ms a request).
    disable_nagle_algorithm = True
    fake: FakeServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake.connections += 1

    def do_GET(self) -> None:
        self._dispatch({})

    def do_HEAD(self) -> None:
        self._dispatch({})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith("/api/blobs/"):  # a file's bytes, not JSON
            self._dispatch({"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)})
            return
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"__unparsed__": raw.decode("utf-8", errors="replace")}
        self._dispatch(body if isinstance(body, dict) else {"__body__": body})

    def _dispatch(self, body: dict) -> None:
        path, _, query = self.path.partition("?")
        self.fake._record(path, body, {k.lower(): v for k, v in self.headers.items()}, query)
        routes = {
            ("POST", "/api/chat"): self._ollama_chat,
            ("POST", "/api/show"): self._ollama_show,
            ("GET", "/api/tags"): self._ollama_tags,
            ("GET", "/api/version"): self._ollama_version,
            ("POST", "/api/pull"): self._ollama_pull,
            ("POST", "/api/create"): self._ollama_create,
            ("POST", "/v1/chat/completions"): self._openai_chat,
            ("GET", "/v1/models"): self._openai_models,
            ("POST", "/v1/messages"): self._anthropic_messages,
            ("GET", "/v1beta/models"): self._gemini_models,
        }
        if path.startswith("/api/blobs/") and self.command in ("HEAD", "POST"):
            routes[(self.command, path)] = functools.partial(self._ollama_blob,
                                                             digest=path[len("/api/blobs/"):])
        route = routes.get((self.command, path))
        gemini_model = _gemini_model(path)
        if route is None and self.command == "POST" and gemini_model is not None:
            route = functools.partial(self._gemini_stream, model=gemini_model, query=query)
        try:
            if route is None:
                self._send_json(404, {"error": f"fake server has no route {self.command} {path}"})
            else:
                route(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its read timeout)

    # -- Ollama

    def _ollama_chat(self, body: dict) -> None:
        problem = ollama_history_problem(body)
        if problem:
            self._send_json(400, {"error": problem})
            return
        reply = self.fake._next_reply()
        if reply is None:
            self._send_json(500, {"error": "fake server script exhausted: no reply queued"})
        elif reply.status != 200:
            self._send_json(reply.status, {"error": reply.error_message}, reply.retry_after)
        else:
            model = str(body.get("model", "fake"))
            frames = (
                reply.raw_frames if reply.raw_frames is not None else _ollama_frames(reply, model)
            )
            self._stream("application/x-ndjson", frames, reply)

    def _ollama_show(self, body: dict) -> None:
        capabilities = ["completion", "tools"] if self.fake.tools_capable else ["completion"]
        self._send_json(
            200,
            {
                "modelfile": "",
                "parameters": "",
                "template": "",
                "details": {"format": "gguf", **(
                    {"parameter_size": self.fake.parameter_size} if self.fake.parameter_size else {}
                )},
                "capabilities": capabilities,
                "model_info": {
                    **({"general.architecture": "qwen2", "qwen2.context_length": self.fake.context_length}
                       if self.fake.context_length else {}),
                    **({"general.parameter_count": self.fake.parameter_count} if self.fake.parameter_count else {}),
                },
            },
        )

    def _ollama_tags(self, body: dict) -> None:
        models = [
            {"name": m, "model": m, "modified_at": CREATED_AT, "size": 1, "digest": "0"}
            for m in self.fake.models
        ]
        self._send_json(200, {"models": models})

    def _ollama_version(self, body: dict) -> None:
        self._send_json(200, {"version": "0.12.0"})

    def _ollama_pull(self, body: dict) -> None:
        with self.fake._lock:
            pull = self.fake.pulls.popleft() if self.fake.pulls else Pull()
        if pull.status != 200:
            self._send_json(pull.status, {"error": pull.error_message})
            return
        self._stream("application/x-ndjson", pull.frames(), pull.as_reply())
        whole = pull.error_after is None and pull.drop_after is None and not pull.no_success
        name = str(body.get("model", ""))
        if whole and name:
            with self.fake._lock:
                self.fake.models.append(name)

    def _ollama_blob(self, body: dict, digest: str) -> None:
        if self.command == "HEAD":
            self._send_status(200 if digest in self.fake.blobs else 404)
        elif digest != f"sha256:{body['sha256']}":
            self._send_json(400, {"error": f"digest mismatch, expected \"{digest}\", got "
                                           f"\"sha256:{body['sha256']}\""})
        else:
            with self.fake._lock:
                self.fake.blobs[digest] = body["size"]
            self._send_status(201)

    def _ollama_create(self, body: dict) -> None:
        files = body.get("files") or {}
        missing = [d for d in files.values() if d not in self.fake.blobs]
        with self.fake._lock:
            create = self.fake.creates.popleft() if self.fake.creates else Create()
        if missing or create.status != 200:
            self._send_json(400 if missing else create.status,
                            {"error": f"blob {missing[0]} not found" if missing
                             else create.error_message})
            return
        self._stream("application/x-ndjson", create.frames(), create.as_reply())
        whole = create.error_after is None and create.drop_after is None and not create.no_success
        if whole and body.get("model"):
            with self.fake._lock:
                self.fake.models.append(f"{body['model']}:latest")

    # -- OpenAI

    def _openai_chat(self, body: dict) -> None:
        problem = openai_history_problem(body)
        if problem:
            self._send_openai_error(400, problem, None)
            return
        reply = self.fake._next_reply()
        if reply is None:
            self._send_openai_error(500, "fake server script exhausted: no reply queued", None)
        elif reply.status != 200:
            self._send_openai_error(reply.status, reply.error_message, reply.retry_after)
        else:
            model = str(body.get("model", "fake"))
            reply = self._llama_prefilled(body, reply)
            options = body.get("stream_options") or {}
            include_usage = bool(options.get("include_usage"))
            reply_id = str(len(self.fake.requests))
            frames = reply.raw_frames
            if frames is None:
                frames = _openai_frames(reply, model, include_usage, reply_id)
            self._stream("text/event-stream", frames, reply)

    def _llama_prefilled(self, body: dict, reply: Reply) -> Reply:
        """As llama.cpp's server answers a request whose last message is the assistant's: the
        model carries that message on, and the stream sends it back first."""
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        if self.fake.owned_by != "llamacpp" or last.get("role") != "assistant":
            return reply
        return dataclasses.replace(reply, text=str(last.get("content") or "") + reply.text)

    def _openai_models(self, body: dict) -> None:
        data = [
            {"id": m, "object": "model", "created": CREATED, "owned_by": self.fake.owned_by,
             **({"max_model_len": self.fake.context_length} if self.fake.context_length else {}),
             **({"meta": self._llama_meta()} if self.fake.parameter_count or self.fake.slot_context else {})}
            for m in self.fake.models
        ]
        self._send_json(200, {"object": "list", "data": data})

    def _llama_meta(self) -> dict:
        """A model entry's `meta` as llama.cpp's server writes it."""
        meta: dict = {"vocab_type": 2, "n_ctx_train": self.fake.context_length or 4096}
        if self.fake.slot_context:
            meta["n_ctx"] = self.fake.slot_context
        if self.fake.parameter_count:
            meta |= {"n_params": self.fake.parameter_count, "size": self.fake.parameter_count * 2}
        return meta

    def _send_openai_error(self, status: int, message: str, retry_after: float | None) -> None:
        kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "api_error")
        error = {"message": message, "type": kind, "param": None, "code": None}
        self._send_json(status, {"error": error}, retry_after)

    # -- Anthropic

    def _anthropic_messages(self, body: dict) -> None:
        if "anthropic-version" not in {k.lower() for k in self.headers}:
            self._send_anthropic_error(400, "anthropic-version: header is required", None)
            return
        if not isinstance(body.get("max_tokens"), int):
            self._send_anthropic_error(400, "max_tokens: Field required", None)
            return
        problem = anthropic_history_problem(body)
        if problem:
            self._send_anthropic_error(400, problem, None)
            return
        reply = self.fake._next_reply()
        if reply is None:
            self._send_anthropic_error(500, "fake server script exhausted: no reply queued", None)
        elif reply.status != 200:
            self._send_anthropic_error(reply.status, reply.error_message, reply.retry_after)
        else:
            reply_id = str(len(self.fake.requests))
            frames = reply.raw_frames
            if frames is None:
                frames = _anthropic_frames(reply, str(body.get("model", "fake")), reply_id)
            self._stream("text/event-stream", frames, reply)

    def _send_anthropic_error(self, status: int, message: str, retry_after: float | None) -> None:
        kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        self._send_json(
            status, {"type": "error", "error": {"type": kind, "message": message}}, retry_after
        )

    # -- Gemini

    def _gemini_stream(self, body: dict, model: str, query: str) -> None:
        if "alt=sse" not in query.split("&"):
            self._send_gemini_error(400, "fake server speaks only alt=sse", None)
            return
        problem = gemini_history_problem(body)
        if problem:
            self._send_gemini_error(400, problem, None)
            return
        reply = self.fake._next_reply()
        if reply is None:
            self._send_gemini_error(500, "fake server script exhausted: no reply queued", None)
        elif reply.status != 200:
            self._send_gemini_error(reply.status, reply.error_message, reply.retry_after)
        else:
            reply_id = str(len(self.fake.requests))
            frames = reply.raw_frames
            if frames is None:
                frames = _gemini_frames(reply, model, reply_id)
            self._stream("text/event-stream", frames, reply)

    def _gemini_models(self, body: dict) -> None:
        chat = ["generateContent", "countTokens"]
        models = [
            {"name": f"models/{m}", "displayName": m, "supportedGenerationMethods": chat}
            for m in self.fake.models
        ]
        models.append(
            {"name": "models/fake-embedding-001", "supportedGenerationMethods": ["embedContent"]}
        )
        self._send_json(200, {"models": models})

    def _send_gemini_error(self, status: int, message: str, retry_after: float | None) -> None:
        error = {
            "code": status,
            "message": message,
            "status": GEMINI_ERROR_STATUSES.get(status, "UNKNOWN"),
        }
        self._send_json(status, {"error": error}, retry_after)

    # -- plumbing

    def _send_json(self, status: int, payload: Any, retry_after: float | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if retry_after is not None:
            self.send_header("Retry-After", f"{retry_after:g}")
        self.end_headers()
        self.wfile.write(data)

    def _send_status(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _stream(self, content_type: str, frames: list[bytes], reply: Reply) -> None:
        if reply.gate_after == 0 and not self._passed_gate(reply):
            return
        if reply.hang_up:
            self._drop_connection()
            return
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, frame in enumerate(_frames_until_drop(frames, reply.drop_after)):
            if index == reply.gate_after > 0 and not self._passed_gate(reply):
                return
            self.fake._pause(reply.delay)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
        if reply.drop_after is not None and reply.drop_after < len(frames):
            self._drop_connection()
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _passed_gate(self, reply: Reply) -> bool:
        """Wait for the reply's gate; False when the server stopped first."""
        while reply.gate is not None and not reply.gate.wait(0.05):
            if self.fake._stopping.is_set():
                return False
        return True

    def _drop_connection(self) -> None:
        # No terminating chunk: the client sees the body end mid-stream.
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _gemini_model(path: str) -> str | None:
    """The model named by a Gemini streaming path, or None for any other path."""
    prefix, suffix = "/v1beta/models/", ":streamGenerateContent"
    if path.startswith(prefix) and path.endswith(suffix):
        return path[len(prefix) : -len(suffix)] or None
    return None


def _frames_until_drop(frames: list[bytes], drop_after: int | None) -> Iterator[bytes]:
    yield from frames if drop_after is None else frames[:drop_after]


def closed_port() -> int:
    """A local port with nothing listening on it (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
