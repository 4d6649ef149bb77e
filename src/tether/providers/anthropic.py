"""Anthropic's Messages API: `/v1/messages` streamed as server-sent events.

The wire format differs from the chat-completions family in ways that matter:
the system prompt is its own field, roles must alternate user/assistant, tool
results are `tool_result` blocks inside a user message, and every `tool_use`
must be answered in the very next message. The system prompt and the tool list
are marked for prompt caching, and so is the last block of the conversation (a
breakpoint that moves with it: the API reads the longest cached prefix, and the
marker is no part of the cached text), so a long session does not pay for the same
prefix on every request. The API caches tools, then system, then messages: the
project context, which differs by project and day, opens the first user message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..core.messages import (
    Done,
    Event,
    Image,
    Message,
    Text,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    Usage,
    new_call_id,
)
from ..core.toolspec import Tool
from . import DEFAULT_MODELS
from ._common import HttpChatProvider, model_ids
from ._http import (
    alternating_turns,
    as_int,
    chunk_object,
    map_stop_reason,
    object_field,
    one_line,
    parse_tool_arguments,
)
from .base import ProviderError, RequestOptions

DEFAULT_BASE_URL = "https://api.anthropic.com"
CHAT_PATH = "/v1/messages"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
"""The API requires max_tokens; this is used when the caller does not choose."""
CACHE = {"type": "ephemeral"}
CONTINUED = "(continuing the conversation)"
"""Stands in for a missing first user message: the API requires one."""
EMPTY_RESULT = "(no output)"
UNAVAILABLE_TOOL = "Not available in this request."
KEY_ENV = "ANTHROPIC_API_KEY"

Block = dict[str, Any]


# ---------------------------------------------------------------- encoding


def _safe_id(call_id: str) -> str:
    """Tool ids must match ^[a-zA-Z0-9_-]+$; ids from other providers may not."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", call_id) or "call"


def _text_block(text: str) -> list[Block]:
    # The API rejects empty and whitespace-only text blocks.
    return [{"type": "text", "text": text}] if text.strip() else []


def _result_block(result: ToolResult) -> Block:
    block: Block = {
        "type": "tool_result",
        "tool_use_id": _safe_id(result.call_id),
        "content": result.content if result.content.strip() else EMPTY_RESULT,
    }
    if result.is_error:
        block["is_error"] = True
    return block


def encode_blocks(message: Message) -> list[Block]:
    """A message's parts as content blocks. Thinking is not sent back: without the
    signature the API issued with it, the API would refuse it."""
    blocks: list[Block] = []
    for part in message.parts:
        if isinstance(part, Text):
            blocks += _text_block(part.text)
        elif isinstance(part, ToolCall):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": _safe_id(part.id),
                    "name": part.name,
                    "input": part.arguments,
                }
            )
        elif isinstance(part, ToolResult):
            blocks.append(_result_block(part))
        elif isinstance(part, Image):
            blocks.append({"type": "image",
                           "source": {"type": "base64", "media_type": part.mime, "data": part.data}})
    return blocks


def encode_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation (without system messages) as strictly alternating turns.

    Tool results come first in their user turn (the API wants them at its start),
    and a conversation that would open with the assistant gets a user turn first.
    """
    return alternating_turns(
        messages,
        encode_blocks,
        model_role="assistant",
        items="content",
        is_result=lambda block: block["type"] == "tool_result",
        opener={"type": "text", "text": CONTINUED},
    )


def tool_schema(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.json_schema()}


def _history_tool_names(turns: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for turn in turns:
        for block in turn["content"]:
            if block["type"] == "tool_use" and block["name"] not in names:
                names.append(block["name"])
    return names


def _tools_field(
    tools: Sequence[Tool] | None, turns: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, str] | None]:
    """The tool definitions and, when tools are withheld, the choice that forbids calls.

    A request whose history holds tool blocks must define those tools even when
    no call is wanted (the step cap's final request): they are declared as
    stubs with `tool_choice: none`.
    """
    if tools:
        return [tool_schema(t) for t in tools], None
    used = _history_tool_names(turns)
    stubs = [
        {"name": n, "description": UNAVAILABLE_TOOL, "input_schema": {"type": "object"}}
        for n in used
    ]
    return stubs, ({"type": "none"} if stubs else None)


def build_chat_body(
    messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
) -> dict[str, Any]:
    turns = encode_messages(messages)
    body: dict[str, Any] = {
        "model": options.model,
        "max_tokens": options.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": turns,
        "stream": True,
    }
    system = "\n\n".join(m.text for m in messages if m.role == "system" and m.text.strip())
    if system:
        body["system"] = [{"type": "text", "text": system, "cache_control": CACHE}]
    if turns and turns[-1]["content"]:
        turns[-1]["content"][-1] = {**turns[-1]["content"][-1], "cache_control": CACHE}
    definitions, choice = _tools_field(tools, turns)
    if definitions:
        definitions[-1]["cache_control"] = CACHE  # caches system + tools as one prefix
        body["tools"] = definitions
    if choice:
        body["tool_choice"] = choice
    if options.temperature is not None:
        body["temperature"] = min(options.temperature, 1.0)  # the API's range is 0..1
    return body


# ---------------------------------------------------------------- decoding


STOP_REASONS = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}

ERROR_KINDS = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "authentication_error": "auth",
    "permission_error": "auth",
}


@dataclass
class _Block:
    kind: str
    call_id: str = ""
    name: str = ""
    start_input: Any = None
    json_parts: list[str] = field(default_factory=list)


class AnthropicStreamDecoder:
    """Turns the SSE lines of one answer into events.

    Text and thinking deltas pass straight through; a tool call is emitted
    whole when its block stops (its JSON input arrives as arbitrary slices).
    `Done` comes with `message_stop`. A `data:` line that is not a JSON object raises
    UnreadableChunk.
    """

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.input_tokens = 0
        self.cache_read = 0
        self.cache_creation = 0
        self.output_tokens = 0
        self.stop_reason: str | None = None
        self.finished = False
        self.valid_events = 0
        self.calls_made = 0

    @property
    def usage(self) -> Usage:
        total_input = self.input_tokens + self.cache_read + self.cache_creation
        return Usage(total_input, self.output_tokens, self.cache_read)

    def feed(self, line: str) -> list[Event]:
        if self.finished or not line.startswith("data:"):
            return []  # `event:` names repeat the data's "type"; blank separators
        payload = line[len("data:") :].strip()
        if not payload:
            return []  # an empty event carries no piece of the answer
        event = chunk_object(payload)
        kind = str(event.get("type"))
        if kind != "message_stop":  # the end marker alone is no answer
            self.valid_events += 1
        handler = self._HANDLERS.get(kind)
        return handler(self, event) if handler else []  # ping and future event types

    def _message_start(self, event: dict[str, Any]) -> list[Event]:
        message = event.get("message")
        if isinstance(message, dict):
            self._read_usage(message.get("usage"))
        return []

    def _block_start(self, event: dict[str, Any]) -> list[Event]:
        block = event.get("content_block")
        if not isinstance(block, dict):
            return []
        kind = str(block.get("type", ""))
        state = _Block(kind)
        if kind == "tool_use":
            state.call_id = str(block.get("id") or "")
            state.name = str(block.get("name") or "")
            state.start_input = block.get("input")
        self.blocks[as_int(event.get("index"))] = state
        initial = block.get("text") if kind == "text" else block.get("thinking")
        if kind in ("text", "thinking") and isinstance(initial, str) and initial:
            return [TextDelta(initial) if kind == "text" else ThinkingDelta(initial)]
        return []

    def _block_delta(self, event: dict[str, Any]) -> list[Event]:
        delta = event.get("delta")
        if not isinstance(delta, dict):
            return []
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str) and delta["text"]:
            return [TextDelta(delta["text"])]
        if (
            kind == "thinking_delta"
            and isinstance(delta.get("thinking"), str)
            and delta["thinking"]
        ):
            return [ThinkingDelta(delta["thinking"])]
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block = self.blocks.get(as_int(event.get("index")))
            if block is not None:
                block.json_parts.append(delta["partial_json"])
        return []  # signature_delta and citations are not needed: thinking is not sent back

    def _block_stop(self, event: dict[str, Any]) -> list[Event]:
        block = self.blocks.pop(as_int(event.get("index")), None)
        return self._call_event(block) if block is not None else []

    def _call_event(self, block: _Block) -> list[Event]:
        if block.kind != "tool_use" or not block.name:
            return []
        raw = "".join(block.json_parts)
        arguments = parse_tool_arguments(raw if raw.strip() else block.start_input)
        self.calls_made += 1
        return [ToolCallEvent(ToolCall(block.call_id or new_call_id(), block.name, arguments))]

    def _message_delta(self, event: dict[str, Any]) -> list[Event]:
        delta = event.get("delta")
        if isinstance(delta, dict) and delta.get("stop_reason"):
            self.stop_reason = str(delta["stop_reason"])
        self._read_usage(event.get("usage"))
        return []

    def _message_stop(self, event: dict[str, Any]) -> list[Event]:
        return self.finish()

    def _error(self, event: dict[str, Any]) -> list[Event]:
        error = object_field(event, "error")
        kind = str(error.get("type") or "api_error")
        message = one_line(str(error.get("message") or kind))
        raise ProviderError(
            f"Anthropic reported an error while answering ({kind}: {message}).",
            ERROR_KINDS.get(kind, "api"),
        )

    def _read_usage(self, usage: Any) -> None:
        # message_start carries the input counts; message_delta the (cumulative) output,
        # and on newer API versions the input counts again.
        if not isinstance(usage, dict):
            return
        if "input_tokens" in usage:
            self.input_tokens = as_int(usage.get("input_tokens"))
        if "cache_read_input_tokens" in usage:
            self.cache_read = as_int(usage.get("cache_read_input_tokens"))
        if "cache_creation_input_tokens" in usage:
            self.cache_creation = as_int(usage.get("cache_creation_input_tokens"))
        if "output_tokens" in usage:
            self.output_tokens = as_int(usage.get("output_tokens"))

    def finish(self) -> list[Event]:
        """Any tool call whose block never said it stopped, then the one Done."""
        events: list[Event] = []
        for index in sorted(self.blocks):
            events += self._call_event(self.blocks[index])
        self.blocks.clear()
        self.finished = True
        reason = STOP_REASONS.get(self.stop_reason or "end_turn", self.stop_reason or "end_turn")
        events.append(Done(self.usage, map_stop_reason(reason, self.calls_made > 0)))
        return events

    _HANDLERS: dict[str, Callable[[AnthropicStreamDecoder, dict[str, Any]], list[Event]]] = {
        "message_start": _message_start,
        "content_block_start": _block_start,
        "content_block_delta": _block_delta,
        "content_block_stop": _block_stop,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
        "error": _error,
    }


# ---------------------------------------------------------------- provider


class AnthropicProvider(HttpChatProvider[AnthropicStreamDecoder]):
    """Claude models through the Messages API."""

    name = "anthropic"
    default_model = DEFAULT_MODELS["anthropic"]
    default_base_url = DEFAULT_BASE_URL
    label = "Anthropic"
    connect_hint = "Check ANTHROPIC_BASE_URL or --base-url (without /v1)."
    key_env = KEY_ENV
    key_header = "x-api-key"
    extra_headers = MappingProxyType({"anthropic-version": API_VERSION})
    chat_path_shown = CHAT_PATH

    def _chat_request(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> tuple[str, dict[str, Any]]:
        return CHAT_PATH, build_chat_body(messages, tools, options)

    def _decoder(self) -> AnthropicStreamDecoder:
        return AnthropicStreamDecoder()

    def _stream_ended(self, decoder: AnthropicStreamDecoder) -> list[Event]:
        # A clean end after message_delta named the stop reason is still a whole answer.
        if decoder.stop_reason is None:
            raise self._http.incomplete_stream_error(decoder.valid_events > 0)
        return decoder.finish()

    async def list_models(self) -> list[str]:
        data = await self._http.get_json("/v1/models?limit=1000")
        return model_ids(self._model_list(data, "data"))

    async def supports_native_tools(self, model: str) -> bool:
        """Every current Claude model takes native tools."""
        return True
