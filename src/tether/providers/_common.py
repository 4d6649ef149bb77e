"""What the HTTP providers share around their transport: the constructor they all take,
reading a streamed answer line by line, the model-list check, and closing.

A provider class says only what is its own: where a chat request goes and what it
sends (`_chat_request`, handed a history whose every call is answered), how its answer is read (`_decoder`), what a clean end of
the stream means before the decoder saw the end of the answer (`_stream_ended`),
and, where its service says it differently, how an error status reads.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from types import MappingProxyType
from typing import Any, Generic, Protocol, TypeVar

from ..core.messages import Done, Event, Message, TextDelta
from ..core.model_table import known_context_window
from ..core.toolspec import Tool
from ._http import AnsweredHistories, HttpTransport, StatusDescriber, StatusInfo, UnreadableChunk
from .base import ProviderError, RequestOptions
from .retry import RetryPolicy


class StreamDecoder(Protocol):
    """Turns the lines of one answer into events; `finished` once the answer said it is whole.

    `feed` raises UnreadableChunk for a line that should hold a JSON object and does not;
    `valid_events` counts the readable pieces of the answer (an end marker is none).
    """

    finished: bool
    valid_events: int

    def feed(self, line: str) -> list[Event]: ...


DecoderT = TypeVar("DecoderT", bound=StreamDecoder)

TRAILING_LINES = 16
TRAILING_SECONDS = 0.5


async def read_past_the_end(lines: AsyncIterator[str]) -> None:
    """Read what a server sends after the end of an answer (a blank line, the body's
    last chunk), so the connection goes back to the pool for the next request.

    A response closed before its body ended takes its connection with it: every step
    of a turn then opened a new one (a new TLS handshake to a hosted API). Bounded in
    lines and time, for a server that keeps talking or holds the stream open.
    """

    async def rest() -> None:
        count = 0
        async for _ in lines:
            count += 1
            if count >= TRAILING_LINES:
                return

    try:
        await asyncio.wait_for(rest(), TRAILING_SECONDS)
    except (asyncio.TimeoutError, ProviderError):
        pass  # the answer is whole; the connection is closed instead of reused


class EchoedStart:
    """Drops the start of a reply the request carried (`RequestOptions.prefill`) from the
    stream when the server sends it back first, as llama.cpp's does; a server that sends only
    what follows it (vLLM) passes through untouched."""

    def __init__(self, start: str) -> None:
        self.start = start
        self.held = ""

    def dropped(self, events: list[Event]) -> list[Event]:
        if not self.start:
            return events
        out: list[Event] = []
        for event in events:
            if isinstance(event, TextDelta):
                out += self._feed(event.text)
                continue
            if isinstance(event, Done):  # the reply is over: what was held is its text
                out += self._release()
            out.append(event)
        return out

    def _feed(self, text: str) -> list[Event]:
        self.held += text
        if self.start.startswith(self.held):
            return []  # still inside what may be the echo
        if self.held.startswith(self.start):
            rest, self.start, self.held = self.held[len(self.start):], "", ""
            return [TextDelta(rest)] if rest else []
        return self._release()  # not an echo: the text is the continuation itself

    def _release(self) -> list[Event]:
        """What was held back, at the end or once it is no echo (the whole echo and
        nothing after it is no text of the reply)."""
        held = "" if self.held == self.start else self.held
        self.start = self.held = ""
        return [TextDelta(held)] if held else []


class HttpChatProvider(ABC, Generic[DecoderT]):
    """A provider that streams chat answers over one HttpTransport (`self._http`)."""

    name: str
    default_base_url: str
    label: str
    """How messages name the service: "Anthropic", "the OpenAI-compatible API", ..."""
    connect_hint: str
    """What to check when the server cannot be reached or the URL is wrong."""
    key_env: str = ""
    """The environment variable the auth hint names."""
    key_header: str | None = None
    """The header that carries the key; None sends it as a Bearer token."""
    extra_headers: Mapping[str, str] = MappingProxyType({})
    """Headers sent with every request."""
    chat_path_shown: str | None = None
    """What a 404 names as not found when the URL is wrong; None: the plain status message."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        connect_timeout: float = 10,
        read_timeout: float = 300,
        retry: RetryPolicy | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        """`notice` hears about retries and skipped pieces of an answer."""
        self.base_url = self._clean_base_url(base_url)
        self._notice = notice
        self._answered = AnsweredHistories()
        self._http = HttpTransport(
            self.base_url,
            label=self.label,
            connect_hint=self.connect_hint,
            auth_hint=self._auth_hint(api_key),
            api_key=api_key,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            key_header=self.key_header,
            headers=self.extra_headers,
            retry=retry,
            notice=notice,
        )

    @classmethod
    def _clean_base_url(cls, base_url: str) -> str:
        return (base_url or cls.default_base_url).strip().rstrip("/")

    def _auth_hint(self, api_key: str | None) -> str:
        """What to do about a rejected key; a missing key is to be set, a given one checked."""
        verb = "Check" if api_key else "Set"
        return f"{verb} {self.key_env}, or run /connect {self.name} to save a key."

    # -- streaming

    def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> AsyncGenerator[Event, None]:
        # In-stream errors carry the server's words, which can echo the key.
        return self._http.redacting(self._stream(messages, tools, options))

    async def _stream(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> AsyncGenerator[Event, None]:
        await self._before_request(options)
        # Every API wants each call answered in the next message: one repair for all of them.
        path, body = self._chat_request(self._answered(messages), tools, options)
        decoder = self._decoder()
        echo = EchoedStart(options.prefill)
        lines = self._http.stream_lines(path, body, self._chat_status_error(options.model))
        async with aclosing(lines):
            async for line in lines:
                events = echo.dropped(self._decoded(decoder, line))
                if decoder.finished:
                    # Before the last events: a caller may stop reading at them.
                    await read_past_the_end(lines)
                for event in events:
                    yield event
                if decoder.finished:
                    return
        for event in echo.dropped(self._stream_ended(decoder)):
            yield event

    def _decoded(self, decoder: DecoderT, line: str) -> list[Event]:
        """The events of one line. An unreadable line, or an end marker before any piece of
        an answer, is a ProviderError: what arrived is not a whole answer."""
        try:
            events = decoder.feed(line)
        except UnreadableChunk as exc:
            raise self._http.unreadable_chunk_error(exc.text, decoder.valid_events > 0) from None
        if decoder.finished and not decoder.valid_events:
            raise self._http.incomplete_stream_error(False)
        return events

    async def _before_request(self, options: RequestOptions) -> None:
        """What a provider must learn from its server before it can write a request
        (nothing, unless it says otherwise)."""

    @abstractmethod
    def _chat_request(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> tuple[str, dict[str, Any]]:
        """The path a chat request is posted to and its body."""

    @abstractmethod
    def _decoder(self) -> DecoderT:
        """A fresh decoder for one answer."""

    @abstractmethod
    def _stream_ended(self, decoder: DecoderT) -> list[Event]:
        """The last events when the stream ended before `decoder` was finished.

        Raises ProviderError when that leaves the answer incomplete.
        """

    def _chat_status_error(self, model: str) -> StatusDescriber:
        """How an error status of a chat request for `model` reads.

        A 404 that speaks of a model means the model is unknown; any other 404
        means the URL is wrong (where `chat_path_shown` is set).
        """

        def describe(info: StatusInfo) -> ProviderError:
            if info.status != 404:
                return self._http.status_error(info)
            if "model" in info.message.lower():
                return ProviderError(self._model_not_found(model, info.message), "api", 404)
            if self.chat_path_shown is None:
                return self._http.status_error(info)
            return ProviderError(
                f"{self._http.shown_url}{self.chat_path_shown} was not found (404). "
                + self.connect_hint,
                "api",
                404,
            )

        return describe

    def _model_not_found(self, model: str, message: str) -> str:
        return (
            f"model '{model}' not found at {self.label} ({message}). "
            f"Choose another with --model (/connect {self.name} lists them)."
        )

    # -- models and closing

    async def context_window(self, model: str) -> int | None:
        """A hosted model's window from the table of known ones; None for any other."""
        return known_context_window(model)

    async def continues_replies(self, model: str) -> bool:
        """No start of a reply is sent (a provider that knows its server does says so)."""
        return False

    def _model_list(self, data: Any, key: str) -> list[Any]:
        """The list under `key` in a model-list answer; ProviderError if there is none."""
        models = data.get(key) if isinstance(data, dict) else None
        if not isinstance(models, list):
            raise ProviderError(
                f"{self.label} at {self._http.shown_url} gave an unexpected model list.", "api"
            )
        return models

    async def aclose(self) -> None:
        await self._http.aclose()


def model_ids(models: list[Any]) -> list[str]:
    """The `id` of each entry of a `{"data": [{"id": ...}, ...]}` model list."""
    ids = (m.get("id") for m in models if isinstance(m, dict))
    return [i for i in ids if isinstance(i, str) and i]
