"""What the HTTP providers share: one transport that turns every network failure
into a one-line ProviderError, and the small wire helpers both chat formats use.

Opening a request happens in exactly one place (`HttpTransport._send`), and
that is where rate-limited and overloaded requests are retried (see retry.py).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager, contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from ..core.messages import INVALID_JSON_KEY, Event, Message, Part, Text, ToolCall, ToolResult
from ..core.toolspec import Tool
from ..safety.safetext import clean_data
from .base import ProviderError
from .retry import NO_RETRIES, RetryPolicy, gave_up, retry_after_from, retry_notice

SERVER_MESSAGE_LIMIT = 300
CAPABILITY_TIMEOUT = 3.0


# ---------------------------------------------------------------- wire helpers


def function_tool_schema(tool: Tool) -> dict[str, Any]:
    """A tool in the `{"type": "function", ...}` shape both Ollama and OpenAI accept."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.json_schema(),
        },
    }


def tool_result_text(result: ToolResult) -> str:
    """The content sent back to the model; errors are marked so the model notices."""
    if result.is_error and not result.content.startswith("Error"):
        return "Error: " + result.content
    return result.content


MISSING_RESULT = "No result was recorded for this call."


def answered_history(messages: Sequence[Message]) -> list[Message]:
    """The history with every tool call answered in the message right after it.

    Native APIs reject a call whose result is not in the next message, and a
    result whose call is not in the message before. The loop never writes
    either, but a history that was trimmed, cancelled or replayed from another
    provider can hold one: a missing result is filled in as an error result,
    and a stray result becomes a user message in the text protocol's wording.
    Results come back in the order of their calls. The input is not changed.
    """
    out: list[Message] = []
    pending: list[ToolCall] = []
    answers: dict[str, ToolResult] = {}
    strays: list[ToolResult] = []

    def close_pending() -> None:
        if pending:
            out.append(Message("tool", [answers.get(c.id) or _missing(c) for c in pending]))
        if strays:
            out.append(Message("user", [Text(_stray_text(r)) for r in strays]))
        pending.clear()
        answers.clear()
        strays.clear()

    for message in messages:
        results = message.tool_results
        if results:
            for result in results:
                wanted = any(c.id == result.call_id for c in pending)
                if wanted and result.call_id not in answers:
                    answers[result.call_id] = result
                else:
                    strays.append(result)
            rest: list[Part] = [p for p in message.parts if not isinstance(p, ToolResult)]
            if not rest:
                continue
            message = Message("user", rest)
        close_pending()
        out.append(message)
        if message.role == "assistant":
            pending.extend(message.tool_calls)
    close_pending()
    return out


def alternating_turns(
    messages: Sequence[Message],
    encode: Callable[[Message], list[dict[str, Any]]],
    *,
    model_role: str,
    items: str,
    is_result: Callable[[dict[str, Any]], bool],
    opener: dict[str, Any],
) -> list[dict[str, Any]]:
    """The conversation (without system messages) as strictly alternating turns.

    For the APIs that want one user turn, then one model turn, and so on
    (Anthropic, Gemini): `encode` turns a message into the items of a turn
    (kept under the key `items`); tool messages become user turns; consecutive
    turns of one role are merged with tool results first (`is_result`), and a
    conversation that would open with the model gets a user turn holding
    `opener` first. Messages that encode to nothing are left out.
    """
    turns: list[dict[str, Any]] = []
    for message in answered_history([m for m in messages if m.role != "system"]):
        role = model_role if message.role == "assistant" else "user"
        encoded = encode(message)
        if not encoded:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1][items] += encoded
        else:
            turns.append({"role": role, items: encoded})
    for turn in turns:
        turn[items].sort(key=lambda item: not is_result(item))  # stable: keeps order
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", items: [dict(opener)]})
    return turns


def _missing(call: ToolCall) -> ToolResult:
    return ToolResult(call.id, call.name, MISSING_RESULT, is_error=True)


def _stray_text(result: ToolResult) -> str:
    label = "Tool Error" if result.is_error else "Tool Result"
    return f"[{label} for '{result.name}']\n{result.content}"


def object_field(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """`parent[key]` when it is a JSON object, else an empty one: wire data is never trusted."""
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def parse_tool_arguments(raw: Any) -> dict[str, Any]:
    """Turn a model's tool-call arguments into a dict.

    Convention: arguments that are not a JSON object come back as
    `{"__invalid_json__": "<raw text>"}` instead of raising, so the turn loop
    can tell the model exactly what it sent and ask it to try again. Empty
    arguments mean a call without parameters (`{}`), and an object that was
    JSON-encoded twice (a string holding an object) is unwrapped once.
    """
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return {}
    text = raw if isinstance(raw, str) else json.dumps(raw)
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
        if isinstance(value, str):
            value = json.loads(value)
    except json.JSONDecodeError:
        return {INVALID_JSON_KEY: text}
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: text}


def loads_object(text: str) -> dict[str, Any] | None:
    """One JSON object from a stream line, or None when the line is not one."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def map_stop_reason(reason: str | None, made_calls: bool) -> str:
    """Provider finish reasons in the vocabulary the loop speaks."""
    if made_calls:
        return "tool_use"
    return {
        None: "end_turn",
        "": "end_turn",
        "stop": "end_turn",
        "length": "max_tokens",
        "tool_calls": "tool_use",
    }.get(reason, reason or "end_turn")


# ---------------------------------------------------------------- error text


_SECRET_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_*.\-]{6,}"),  # OpenAI-style keys, even when partly masked
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),  # Google-style keys
    re.compile(r"Bearer\s+\S+", re.IGNORECASE),
)


# A shorter "key" is a placeholder such as the "x" local servers accept; hiding
# every occurrence of it would garble the message ("does not e[redacted]ist").
REDACT_MIN_SECRET = 8


def redact(text: str, secret: str | None = None) -> str:
    """Remove anything that looks like a key: servers sometimes echo part of one."""
    if secret and len(secret) >= REDACT_MIN_SECRET:
        text = _redact_cut_secret(text.replace(secret, "[redacted]"), secret)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub("[redacted]", text)
    return text


_CUT_WORD = re.compile(r"(\S+)…")
_CUT_SECRET_MIN = 4


def _redact_cut_secret(text: str, secret: str) -> str:
    """Remove the start of `secret` where `one_line` cut the text off in the middle of it."""

    def cut(match: re.Match[str]) -> str:
        word = match.group(1)
        for start in range(max(0, len(word) - len(secret)), len(word) - _CUT_SECRET_MIN + 1):
            if secret.startswith(word[start:]):
                return word[:start] + "[redacted]…"
        return match.group(0)

    return _CUT_WORD.sub(cut, text)


def one_line(text: str, limit: int = SERVER_MESSAGE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def display_url(url: str) -> str:
    """The URL as shown to the user: no credentials, query or fragment. Never raises."""
    try:
        parts = urlsplit(url)
    except ValueError:  # malformed (an unclosed IPv6 bracket): cut the same parts by hand
        head = re.split(r"[?#]", url, maxsplit=1)[0]
        return re.sub(r"(?<=//)[^/]*@", "", head, count=1)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")) or url


def server_error_message(body: str) -> str:
    """The human part of an error body: `error.message`, an `error` string, or the text."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        return body.strip()
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, dict):
        return body.strip()
    error = data.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))
    if isinstance(error, str):
        return error
    return str(data.get("message") or data.get("detail") or body.strip())


def status_phrase(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def parse_retry_after(headers: Mapping[str, str], body: str = "") -> float | None:
    """Seconds the server asked us to wait (header in seconds or as a date, or the body)."""
    return retry_after_from(headers, body)


@dataclass(frozen=True)
class StatusInfo:
    """A non-2xx answer, already reduced to what an error message needs."""

    status: int
    message: str
    retry_after: float | None = None


StatusDescriber = Callable[[StatusInfo], ProviderError]


@dataclass(frozen=True)
class _Request:
    """One request as the transport sends it, and sends again when it retries."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    describe: StatusDescriber | None = None
    timeout: float | None = None


def _exception_chain(exc: BaseException) -> list[BaseException]:
    """The exception and everything behind it (causes, contexts, grouped errors)."""
    seen: list[BaseException] = []
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        stack += [current.__cause__, current.__context__, *getattr(current, "exceptions", ())]
    return seen


def connect_failure_reason(exc: Exception, connect_timeout: float) -> str:
    """A few words on why a connection failed.

    httpx reports a refused connection as "All connection attempts failed";
    the real reason sits further down the exception chain.
    """
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connection timed out after {connect_timeout:g} s"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return "invalid URL: it must start with http:// or https://"
    if isinstance(exc, httpx.InvalidURL):
        return f"invalid URL: {exc}"
    chain = _exception_chain(exc)
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "connection refused"
    if any(isinstance(e, socket.gaierror) for e in chain):
        return "host name not found"
    text = " ".join(str(e) for e in chain).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service" in text or "name resolution" in text or "nodename" in text:
        return "host name not found"
    if "unreachable" in text:
        return "network unreachable"
    return "connection failed"


# ---------------------------------------------------------------- transport


class HttpTransport:
    """One provider's HTTP client: JSON requests and line streams, failures as ProviderError."""

    def __init__(
        self,
        base_url: str,
        *,
        label: str,
        connect_hint: str,
        auth_hint: str,
        api_key: str | None = None,
        connect_timeout: float = 10,
        read_timeout: float = 300,
        key_header: str | None = None,
        headers: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        """`key_header` names the header that carries the key (default: a Bearer token);
        `headers` are sent with every request; `notice` hears about each retry."""
        self.base_url = base_url.rstrip("/")
        self.label = label
        self.connect_hint = connect_hint
        self.auth_hint = auth_hint
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.retry = retry or NO_RETRIES
        self._api_key = api_key
        self._key_header = key_header
        self._headers = dict(headers or {})
        self._notice = notice
        self._client: httpx.AsyncClient | None = None

    @property
    def shown_url(self) -> str:
        return display_url(self.base_url)

    def _http(self) -> httpx.AsyncClient:
        # Created on first use so the client belongs to the running event loop.
        if self._client is None:
            headers = dict(self._headers)
            if self._api_key:
                if self._key_header:
                    headers[self._key_header] = self._api_key
                else:
                    headers["Authorization"] = f"Bearer {self._api_key}"
            self._client = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self.read_timeout, connect=self.connect_timeout),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- redaction

    def redacted(self, error: ProviderError) -> ProviderError:
        """`error` with the key (or anything like one) removed from its message."""
        text = redact(str(error), self._api_key)
        if text == str(error):
            return error
        return ProviderError(text, error.kind, error.status, error.retry_after)

    async def redacting(self, events: AsyncGenerator[Event, None]) -> AsyncIterator[Event]:
        """`events` passed through; a ProviderError they raise loses any echo of the key.

        Servers put their own text into errors sent inside a stream, and some
        repeat the key they were given. Every provider's `stream` goes through
        here, so no decoder has to remember to redact.
        """
        try:
            async with aclosing(events):
                async for event in events:
                    yield event
        except ProviderError as exc:
            clean = self.redacted(exc)
            if clean is exc:
                raise
            raise clean from None

    # -- requests

    async def get_json(
        self, path: str, describe: StatusDescriber | None = None, *, timeout: float | None = None
    ) -> Any:
        return await self._request_json(_Request("GET", path, None, describe, timeout))

    async def post_json(
        self,
        path: str,
        body: dict[str, Any],
        describe: StatusDescriber | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        return await self._request_json(_Request("POST", path, body, describe, timeout))

    async def _request_json(self, request: _Request) -> Any:
        async with self._send(request) as response:
            raw = await self._read_all(response)
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, ValueError):
            raise ProviderError(
                f"{self.label} at {self.shown_url} answered {request.path} with something that is not JSON.",
                kind="api",
                status=response.status_code,
            ) from None

    async def stream_lines(
        self, path: str, body: dict[str, Any], describe: StatusDescriber | None = None
    ) -> AsyncGenerator[str, None]:
        """POST `body` and yield the answer line by line as it arrives.

        A connection that breaks after the answer started raises
        ProviderError(kind="stream") once the lines already received are yielded.
        """
        async with self._send(_Request("POST", path, body, describe)) as response:
            with self._failures_as_provider_errors(answer_started=True):
                async for line in response.aiter_lines():
                    yield line

    @asynccontextmanager
    async def _send(self, request: _Request) -> AsyncIterator[httpx.Response]:
        """Open one request, retrying "not now" answers; yields the successful response.

        Retries happen here, before the caller has read a byte of the answer.
        """
        response = await self._open_with_retries(request)
        try:
            yield response
        finally:
            await response.aclose()

    async def _open_with_retries(self, request: _Request) -> httpx.Response:
        retries = 0
        while True:
            try:
                return await self._open(request)
            except ProviderError as exc:
                wait = self.retry.wait_before_retry(exc, retries)
                if wait is None:
                    if retries == 0:
                        raise
                    raise gave_up(exc, retries) from exc
                retries += 1
                if self._notice is not None:
                    limit = self.retry.max_retries
                    self._notice(retry_notice(self.label, exc, wait, retries, limit))
                await self.retry.sleep(wait)

    async def _open(self, request: _Request) -> httpx.Response:
        """One attempt: the response when it is a success, else a ProviderError."""
        timeout: httpx.Timeout | Any = (
            httpx.USE_CLIENT_DEFAULT if request.timeout is None else httpx.Timeout(request.timeout)
        )
        with self._failures_as_provider_errors(answer_started=False):
            client = self._http()
            url = self.base_url + request.path
            # A lone surrogate anywhere (a file name that is not UTF-8, a broken
            # character in a prompt) must not stop the request: it is cleaned here,
            # where every provider's body is encoded.
            body = clean_data(request.body)
            sent = client.build_request(request.method, url, json=body, timeout=timeout)
            response = await client.send(sent, stream=True)
        if response.status_code < 400:
            return response
        try:
            text = await self._read_all(response)
        finally:
            await response.aclose()
        info = StatusInfo(
            response.status_code,
            one_line(redact(server_error_message(text), self._api_key)),
            parse_retry_after(response.headers, text),
        )
        raise (request.describe or self.status_error)(info)

    async def _read_all(self, response: httpx.Response) -> str:
        with self._failures_as_provider_errors(answer_started=True):
            return (await response.aread()).decode("utf-8", errors="replace")

    @contextmanager
    def _failures_as_provider_errors(self, *, answer_started: bool) -> Iterator[None]:
        """Any failure of the network layer in the block, as a one-line ProviderError.

        (`httpx.InvalidURL` is not an `httpx.HTTPError`; only building a request raises it.)
        """
        try:
            yield
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._transport_error(exc, answer_started=answer_started) from exc
        except Exception as exc:
            raise self._unexpected_error(exc, answer_started=answer_started) from exc

    # -- error messages

    def status_error(self, info: StatusInfo) -> ProviderError:
        """The generic mapping of an HTTP error status to a one-line ProviderError."""
        status, where = info.status, f"{self.label} at {self.shown_url}"
        detail = (
            f"{status_phrase(status)}: {info.message}" if info.message else status_phrase(status)
        )
        if status in (401, 403):
            return ProviderError(
                f"{where} rejected the request ({detail}). {self.auth_hint}", "auth", status
            )
        if status == 429:
            wait = f" Retry after {info.retry_after:g} s." if info.retry_after is not None else ""
            return ProviderError(
                f"{where} is rate limiting requests ({detail}).{wait}",
                "rate_limit",
                status,
                info.retry_after,
            )
        if status in (503, 529):
            return ProviderError(
                f"{where} is overloaded ({detail}); try again shortly.",
                "overloaded",
                status,
                info.retry_after,
            )
        return ProviderError(f"{where} returned an error ({detail}).", "api", status)

    def _transport_error(self, exc: Exception, *, answer_started: bool) -> ProviderError:
        where = f"{self.label} at {self.shown_url}"
        if isinstance(exc, httpx.ReadTimeout):
            return ProviderError(
                f"the model stopped responding for {self.read_timeout:g} s ({where}); "
                "if it is just slow, raise request_timeout.",
                "stream",
            )
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
            what = "in the middle of the answer" if answer_started else "without answering"
            return ProviderError(f"{where} closed the connection {what}.", "stream")
        if isinstance(exc, (httpx.WriteTimeout, httpx.PoolTimeout)):
            return ProviderError(f"{where} did not accept the request in time.", "connection")
        reason = connect_failure_reason(exc, self.connect_timeout)
        return ProviderError(f"cannot reach {where} ({reason}). {self.connect_hint}", "connection")

    def _unexpected_error(self, exc: Exception, *, answer_started: bool) -> ProviderError:
        """A failure the network layer does not wrap as an httpx error (a port out of
        range, a header it cannot encode, ...): still one line, never a traceback."""
        where = f"{self.label} at {self.shown_url}"
        while getattr(exc, "exceptions", None):  # the real error inside a task group's
            exc = exc.exceptions[0]  # type: ignore[attr-defined]
        detail = one_line(redact(str(exc), self._api_key), 160).rstrip(".") or type(exc).__name__
        if answer_started:
            return ProviderError(f"reading the answer from {where} failed ({detail}).", "connection")
        if isinstance(exc, UnicodeEncodeError):  # a local failure: nothing was sent
            # The body is cleaned before it is encoded (see _open), so this is a header:
            # they are ASCII/Latin-1, and usually a key was pasted with a typographic quote.
            what = "a request header (the API key?) holds a character that cannot be sent"
            return ProviderError(f"nothing was sent to {where}: {what} ({detail}).", "connection")
        return ProviderError(f"cannot reach {where} ({detail}). {self.connect_hint}", "connection")

    def incomplete_stream_error(self, received_valid_data: bool) -> ProviderError:
        """The stream ended cleanly but the answer never said it was finished."""
        where = f"{self.label} at {self.shown_url}"
        if not received_valid_data:
            return ProviderError(
                f"{where} sent no readable answer; is that URL really {self.label}?", "stream"
            )
        return ProviderError(f"{where} ended the answer before it was complete.", "stream")
