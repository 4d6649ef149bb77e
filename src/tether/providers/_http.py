"""What the HTTP providers share: one transport that turns every network failure
into a one-line ProviderError, and the small wire helpers both chat formats use.

Opening a request happens in exactly one place (`HttpTransport._send`), and
that is where rate-limited and overloaded requests are retried (see retry.py). What a
failure says is worded in `_errors`.

httpx is imported when the transport first sends with it. A JSON request to a model server
on this machine over plain http:// goes out without it while no client was made
(`loopback_http`): the chat's start asks what the model can do before it is ready, and httpx's
import cost about 45 ms of CPU there. What that path cannot answer cleanly goes through httpx.
"""

from __future__ import annotations

import importlib.util
import json
import ssl
import sys
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit
from urllib.request import getproxies

from ..core.history_prefix import SeenPrefix
from ..core.messages import INVALID_JSON_KEY, Event, Message, Part, Text, ToolCall, ToolResult
from ..core.toolspec import Tool
from ._errors import (
    StatusDescriber,
    StatusInfo,
    TransportErrors,
    display_url,
    one_line,
    parse_retry_after,
    redact,
    server_error_message,
)

# Error wording lives in ._errors; the providers and their tests import these from here.
from ._errors import connect_failure_reason as connect_failure_reason
from .base import ProviderError
from .loopback_http import Endpoint, LoopbackFailure, LoopbackTimeout, exchange, loopback_endpoint
from .retry import NO_RETRIES, RetryPolicy, gave_up, retry_notice
from .wire import encode_body

if TYPE_CHECKING:
    import httpx

CAPABILITY_TIMEOUT = 3.0
JSON_CONTENT = {"Content-Type": "application/json"}

T = TypeVar("T")

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


def certificates_for(base_url: str) -> ssl.SSLContext | bool:
    """What the client checks TLS with: httpx's certificate store (True), except for a plain
    http:// server reached without a proxy (a local model server), which never shows a
    certificate; loading the store there cost a tenth of the chat's start. The context that
    stands in trusts nothing, so whatever does reach for TLS fails closed."""
    if urlsplit(base_url).scheme != "http" or getproxies():
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def remember_missing(module: str) -> None:
    """Record that `module` is not installed, so that importing it fails at once. httpcore
    imports sniffio (optional) several times a request, and a failed import is not
    remembered: each one searched the whole import path again, a cost per round trip."""
    if module not in sys.modules and importlib.util.find_spec(module) is None:
        sys.modules[module] = None  # type: ignore[assignment]  # the import system's own "absent"


class AnsweredHistories:
    """`answered_history` for a history that grows at its end, as a turn's does: the part
    already found answered is not walked again (the walk grew with every round trip).

    What the history still starts with of the stretch seen last is kept (the note a
    request ends with is gone from the next, a condensed history keeps only its first
    message), except a call whose results may be gone: the walk starts again at it."""

    def __init__(self) -> None:
        self._seen: SeenPrefix[None] = SeenPrefix()

    def __call__(self, messages: Sequence[Message]) -> list[Message]:
        kept = self._seen.follow(messages)
        if kept and messages[kept - 1].role == "assistant" and messages[kept - 1].tool_calls:
            kept = self._seen.follow(messages[: kept - 1])
        end = _answered_until(messages, kept)
        for message in messages[kept:end]:
            self._seen.add(message, None)
        return list(messages) if end == len(messages) else answered_history(messages)


def _answered_until(messages: Sequence[Message], start: int) -> int:
    """From `start` (where no call waits for its result), the end of the stretch that
    `answered_history` would give back as it is: each assistant message's calls answered by
    the next message, a tool message with their results in their order and nothing else."""
    index = start
    while index < len(messages):
        message = messages[index]
        if message.tool_results:
            return index  # a result not right after its call
        calls = message.tool_calls if message.role == "assistant" else []
        if not calls:
            index += 1
            continue
        if index + 1 == len(messages) or not _answers(messages[index + 1], calls):
            return index
        index += 2
    return index


def _answers(message: Message, calls: list[ToolCall]) -> bool:
    ids = [call.id for call in calls]
    return (message.role == "tool" and len(message.parts) == len(ids) == len(set(ids))
            and all(isinstance(part, ToolResult) and part.call_id == call_id
                    for part, call_id in zip(message.parts, ids, strict=True)))


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
    `opener` first. Messages that encode to nothing are left out. The history is taken
    as already answered (`answered_history`, which every provider's stream applies).
    """
    turns: list[dict[str, Any]] = []
    for message in (m for m in messages if m.role != "system"):
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


class UnreadableChunk(Exception):
    """A line of a streamed answer that should hold one JSON object and does not."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def chunk_object(text: str) -> dict[str, Any]:
    """The JSON object a stream line holds, else UnreadableChunk: a piece of the answer that
    cannot be read may have been a piece of the text or of a call, so the answer is not whole
    (skipping it would hand on an answer with a hole in it as if it were complete)."""
    value = loads_object(text)
    if value is None:
        raise UnreadableChunk(text)
    return value


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


@dataclass(frozen=True)
class _Request:
    """One request as the transport sends it, and sends again when it retries."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    describe: StatusDescriber | None = None
    timeout: float | None = None


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
        self.errors = TransportErrors(
            label, display_url(self.base_url), connect_hint, auth_hint,
            connect_timeout, read_timeout, api_key,
        )

    @property
    def shown_url(self) -> str:
        return display_url(self.base_url)

    def _request_headers(self) -> dict[str, str]:
        """The headers every request carries: the provider's own, and the key."""
        headers = dict(self._headers)
        if self._api_key:
            if self._key_header:
                headers[self._key_header] = self._api_key
            else:
                headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _http(self) -> httpx.AsyncClient:
        # Created on first use so the client belongs to the running event loop.
        if self._client is None:
            import httpx

            remember_missing("sniffio")
            self._client = httpx.AsyncClient(
                headers=self._request_headers(), verify=certificates_for(self.base_url),
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

    async def redacting(self, events: AsyncGenerator[Event, None]) -> AsyncGenerator[Event, None]:
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
        status, raw = await self._answer(request)
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, ValueError):
            raise ProviderError(
                f"{self.label} at {self.shown_url} answered {request.path} with something that is not JSON.",
                kind="api",
                status=status,
            ) from None

    async def _answer(self, request: _Request) -> tuple[int, str]:
        """The status and text of the successful answer to `request`."""
        endpoint = self._loopback_endpoint(request)
        if endpoint is not None:
            try:
                return await self._with_retries(lambda: self._ask_loopback(endpoint, request))
            except LoopbackFailure:
                pass  # no clean answer: httpx asks again, and says what is wrong as always
        async with self._send(request) as response:
            return response.status_code, await self._read_all(response)

    def _loopback_endpoint(self, request: _Request) -> Endpoint | None:
        """Where `request` goes when it may go without httpx: to a loopback server over
        plain http, while no httpx client was made (once one is, its kept connection serves)."""
        return loopback_endpoint(self.base_url + request.path) if self._client is None else None

    async def _ask_loopback(self, endpoint: Endpoint, request: _Request) -> tuple[int, str]:
        """One attempt without httpx: a success's status and text, an error status as the
        ProviderError httpx's path gives, LoopbackFailure for anything httpx should ask again
        (no clean answer, a redirect). Timeouts are httpx's: the request's, else the transport's."""
        content = None if request.body is None else encode_body(request.body)
        headers = self._request_headers() | (JSON_CONTENT if content is not None else {})
        try:
            answer = await exchange(
                endpoint, request.method, headers, content,
                connect_timeout=request.timeout or self.connect_timeout,
                read_timeout=request.timeout or self.read_timeout,
            )
        except LoopbackTimeout:
            raise self.errors.stopped_responding() from None
        text = answer.body.decode("utf-8", errors="replace")
        if answer.status >= 400:
            raise self._status_failure(request, answer.status, answer.headers, text)
        if answer.status >= 300:  # httpx hands a redirect on as it is; let it
            raise LoopbackFailure(f"a redirect ({answer.status})")
        return answer.status, text

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
        return await self._with_retries(lambda: self._open(request))

    async def _with_retries(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt`'s result, made again after each "not now" failure the policy retries."""
        retries = 0
        while True:
            try:
                return await attempt()
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
        import httpx

        timeout: httpx.Timeout | Any = (
            httpx.USE_CLIENT_DEFAULT if request.timeout is None else httpx.Timeout(request.timeout)
        )
        with self._failures_as_provider_errors(answer_started=False):
            client = self._http()
            url = self.base_url + request.path
            # A lone surrogate anywhere (a file name that is not UTF-8, a broken
            # character in a prompt) must not stop the request: it is cleaned here,
            # where every provider's body is encoded.
            content = None if request.body is None else encode_body(request.body)
            sent = client.build_request(request.method, url, content=content, timeout=timeout,
                                        headers=JSON_CONTENT if content is not None else None)
            response = await client.send(sent, stream=True)
        if response.status_code < 400:
            return response
        try:
            text = await self._read_all(response)
        finally:
            await response.aclose()
        raise self._status_failure(request, response.status_code, response.headers, text)

    def _status_failure(self, request: _Request, status: int, headers: Mapping[str, str],
                        text: str) -> ProviderError:
        """An error status as `request` describes it (or as the generic mapping does)."""
        info = StatusInfo(status, one_line(redact(server_error_message(text), self._api_key)),
                          parse_retry_after(headers, text))
        return (request.describe or self.errors.status_error)(info)

    async def _read_all(self, response: httpx.Response) -> str:
        with self._failures_as_provider_errors(answer_started=True):
            return (await response.aread()).decode("utf-8", errors="replace")

    @contextmanager
    def _failures_as_provider_errors(self, *, answer_started: bool) -> Iterator[None]:
        """Any failure of the network layer in the block, as a one-line ProviderError.

        (`httpx.InvalidURL` is not an `httpx.HTTPError`; only building a request raises it.)
        """
        import httpx

        try:
            yield
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self.errors.transport_error(exc, answer_started=answer_started) from exc
        except Exception as exc:
            raise self.errors.unexpected_error(exc, answer_started=answer_started) from exc

    def status_error(self, info: StatusInfo) -> ProviderError:
        """The generic mapping of an HTTP error status to a one-line ProviderError."""
        return self.errors.status_error(info)

    def incomplete_stream_error(self, received_valid_data: bool) -> ProviderError:
        """The stream ended cleanly but the answer never said it was finished."""
        return self.errors.incomplete_stream_error(received_valid_data)

    def unreadable_chunk_error(self, text: str, received_valid_data: bool) -> ProviderError:
        """A line of the answer was not the JSON object it should be."""
        return self.errors.unreadable_chunk_error(text, received_valid_data)
