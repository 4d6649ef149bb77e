"""The provider seam: every backend yields the same normalized event stream."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.messages import Event, Message
from ..core.toolspec import Tool


@dataclass(frozen=True)
class RequestOptions:
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    """Text that ends the reply where it appears (servers that take no stop list ignore it)."""
    grammar: str | None = None
    """A GBNF grammar the reply must follow (protocol/grammar.py: one call on the menu, or an
    answer). Sent only where the server is known to take it (llama.cpp's server, vLLM, the
    in-process model); any other provider leaves it out."""
    prefill: str = ""
    """The start of the reply, already written: the model carries it on, and the stream holds
    only what follows it. Set only for a provider whose `continues_replies` said yes."""


class ProviderError(Exception):
    """A failure the user must see as one clear line (never a traceback).

    `kind` is one of: connection, auth, rate_limit, overloaded, api, stream, dropped (the
    connection closed before any of the answer: sent again once, see retry.py).
    Messages must never contain an API key.
    """

    def __init__(
        self,
        message: str,
        kind: str = "api",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after  # seconds the server asked us to wait, if it said


class Provider(Protocol):
    name: str
    default_model: str
    """The model used when the settings name none."""

    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None,
        options: RequestOptions,
    ) -> AsyncGenerator[Event, None]:
        """Yield TextDelta/ThinkingDelta/ToolCallEvent and exactly one final Done.

        `messages[0]` may be a system message. `tools=None` means no native tools
        are offered (the text protocol, or a tool-free final request).
        Raises ProviderError for anything the user must be told about.
        """
        ...

    async def list_models(self) -> list[str]: ...

    async def supports_native_tools(self, model: str) -> bool: ...

    async def context_window(self, model: str) -> int | None:
        """How many tokens `model` takes, as this provider knows it (a table of hosted
        models, or the server's own answer); None when it cannot tell. May raise
        ProviderError, which counts as None."""
        ...

    async def continues_replies(self, model: str) -> bool:
        """Whether a request may carry the start of its reply (`RequestOptions.prefill`) for
        `model` to carry on: the server is known to continue a last assistant message."""
        ...

    async def aclose(self) -> None: ...
