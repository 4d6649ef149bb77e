"""A scripted model for loop tests: replies are scripted, every request is recorded."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from tether.core.messages import (
    Done,
    Event,
    Message,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    new_call_id,
)
from tether.core.toolspec import Tool
from tether.providers.base import ProviderError, RequestOptions


def say(text: str, chunk: int = 5) -> list[Event]:
    events: list[Event] = [TextDelta(text[i : i + chunk]) for i in range(0, len(text), chunk)]
    return [*events, Done(Usage(10, 5), "end_turn")]


def call(*calls: tuple[str, dict[str, Any]], text: str = "") -> list[Event]:
    events: list[Event] = [TextDelta(text)] if text else []
    for name, args in calls:
        events.append(ToolCallEvent(ToolCall(new_call_id(), name, args)))
    return [*events, Done(Usage(10, 5), "tool_use")]


@dataclass
class Request:
    messages: list[Message]
    tools: list[Tool] | None
    options: RequestOptions


@dataclass
class ScriptedProvider:
    """Each reply is a list of events, a ProviderError to raise, or a callable of the request."""

    replies: list[Any] = field(default_factory=list)
    native: bool = True
    name: str = "scripted"
    default_model: str = "scripted-model"
    requests: list[Request] = field(default_factory=list)
    repeat_last: bool = False
    window: int | None = None
    """What `context_window` answers (None: the provider cannot tell)."""
    continues: bool = False
    """What `continues_replies` answers."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> AsyncGenerator[Event, None]:
        request = Request(list(messages), list(tools) if tools is not None else None, options)
        self.requests.append(request)
        reply = self._next()
        if callable(reply):
            reply = reply(request)
        for event in reply:
            if isinstance(event, ProviderError):
                raise event
            yield event

    def _next(self) -> Any:
        if not self.replies:
            raise AssertionError("the scripted model ran out of replies")
        if self.repeat_last and len(self.replies) == 1:
            return self.replies[0]
        return self.replies.pop(0)

    async def list_models(self) -> list[str]:
        return [self.default_model]

    async def supports_native_tools(self, model: str) -> bool:
        return self.native

    async def context_window(self, model: str) -> int | None:
        return self.window

    async def continues_replies(self, model: str) -> bool:
        return self.continues

    async def aclose(self) -> None:
        pass


class PathArgs(BaseModel):
    filepath: str


class TextArgs(BaseModel):
    filepath: str
    content: str


def make_tool(
    name: str, handler: Callable, params: type[BaseModel] = PathArgs, **flags: Any
) -> Tool:
    flags.setdefault("reads", True)
    flags.setdefault("main_arg", "filepath")
    return Tool(name, f"The {name} tool.", params, handler, **flags)
