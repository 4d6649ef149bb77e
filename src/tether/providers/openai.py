"""OpenAI-compatible chat completions (OpenAI itself, vLLM, llama.cpp, LM Studio, ...).

Streams Server-Sent Events from `{base_url}/chat/completions`; `base_url`
already ends in `/v1`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..core.messages import (
    Done,
    Event,
    Message,
    Text,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    new_call_id,
)
from ..core.model_table import known_context_window
from ..core.toolspec import Tool
from . import DEFAULT_MODELS
from ._common import HttpChatProvider, model_ids
from ._http import (
    CAPABILITY_TIMEOUT,
    as_int,
    chunk_object,
    function_tool_schema,
    map_stop_reason,
    object_field,
    one_line,
    parse_tool_arguments,
    tool_result_text,
)
from .base import ProviderError, RequestOptions
from .wire import WireCache

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CHAT_PATH = "/chat/completions"


# ---------------------------------------------------------------- encoding


def encode_message(message: Message) -> list[dict[str, Any]]:
    """One history entry as chat-completions messages (a tool message per result)."""
    if message.role == "tool" or message.tool_results:
        return [
            {"role": "tool", "tool_call_id": r.call_id, "content": tool_result_text(r)}
            for r in message.tool_results
        ]
    calls = message.tool_calls
    if message.images:
        return [{"role": message.role, "content": content_parts(message)}]
    if message.role != "assistant" or not calls:
        return [{"role": message.role, "content": message.text}]
    return [
        {
            "role": "assistant",
            # null content is the documented shape of a reply that only calls tools
            "content": message.text or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                }
                for c in calls
            ],
        }
    ]


def content_parts(message: Message) -> list[dict[str, Any]]:
    """A user message with images as content parts: its text, then each image as an
    `image_url` part holding a data URL."""
    text = [{"type": "text", "text": message.text}] if message.text else []
    return text + [{"type": "image_url", "image_url": {"url": f"data:{i.mime};base64,{i.data}"}}
                   for i in message.images]


GRAMMAR_FIELDS: dict[str, Callable[[str], dict[str, Any]]] = {
    # llama.cpp's server: `grammar` (GBNF) on /v1/chat/completions (tools/server/README.md)
    "llamacpp": lambda grammar: {"grammar": grammar},
    # vLLM: structured outputs, `{"structured_outputs": {"grammar": ...}}` (the `guided_grammar`
    # field it replaced was removed in v0.12); its xgrammar backend reads GBNF
    "vllm": lambda grammar: {"structured_outputs": {"grammar": grammar}},
}
"""How each server that takes a grammar wants it, by the `owned_by` its model list states."""

CONTINUE_FIELDS: dict[str, dict[str, Any]] = {
    # llama.cpp's server carries on a last assistant message unless started with
    # --no-prefill-assistant, and streams that message back first (EchoedStart drops it)
    "llamacpp": {},
    # vLLM: the last message left open instead of a new one begun
    "vllm": {"continue_final_message": True, "add_generation_prompt": False},
}
"""The servers known to carry on the start of a reply sent as the last assistant message,
by `owned_by`, and the fields that ask for it."""


def build_chat_body(
    messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions,
    wire: WireCache | None = None, server: str = "",
) -> dict[str, Any]:
    """`wire` reuses what earlier requests encoded of the same history and tools; `server`
    (the `owned_by` of the model list) says whether and how a grammar is sent, and whether
    the reply's start goes as the last assistant message (`options.prefill`)."""
    continues = bool(options.prefill) and server in CONTINUE_FIELDS
    if continues:
        messages = [*messages, Message("assistant", [Text(options.prefill)])]
    body: dict[str, Any] = {
        "model": options.model,
        "messages": wire.messages(messages) if wire is not None
        else [m for message in messages for m in encode_message(message)],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools is not None:
        body["tools"] = wire.tools(tools, function_tool_schema) if wire is not None \
            else [function_tool_schema(t) for t in tools]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if options.stop:
        body["stop"] = list(options.stop)
    if options.grammar and server in GRAMMAR_FIELDS:
        body.update(GRAMMAR_FIELDS[server](options.grammar))
    if continues:
        body.update(CONTINUE_FIELDS[server])
    return body


# ---------------------------------------------------------------- decoding


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Rebuilds streamed tool calls from `delta.tool_calls` fragments.

    Fragments are grouped by `index`; the id and name usually come only in a
    call's first fragment and the arguments arrive as arbitrary slices of a
    JSON string (even mid-escape), so nothing is parsed until the end. Servers
    that omit `index` are handled too: a fragment with a new id starts a new
    call, any other continues the latest one.
    """

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}
        self._last_index: int | None = None

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, fragment: Any) -> None:
        if not isinstance(fragment, dict):
            return
        partial = self._calls.setdefault(self._index_of(fragment), _PartialCall())
        if isinstance(fragment.get("id"), str) and fragment["id"] and not partial.id:
            partial.id = fragment["id"]
        function = object_field(fragment, "function")
        if isinstance(function.get("name"), str) and function["name"] and not partial.name:
            partial.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            partial.arguments.append(arguments)
        elif isinstance(arguments, dict):  # a few servers send the object itself
            partial.arguments.append(json.dumps(arguments))

    def _index_of(self, fragment: dict[str, Any]) -> int:
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            new_id = fragment.get("id")
            known_ids = {c.id for c in self._calls.values()}
            if self._last_index is None or (new_id and new_id not in known_ids):
                index = len(self._calls)
            else:
                index = self._last_index
        self._last_index = index
        return index

    def complete_calls(self) -> list[ToolCall]:
        """The finished calls in index order (fragments without a name are dropped)."""
        return [
            ToolCall(p.id or new_call_id(), p.name, parse_tool_arguments("".join(p.arguments)))
            for _, p in sorted(self._calls.items())
            if p.name
        ]


class OpenAIStreamDecoder:
    """Turns SSE lines into events; a `data:` line that is not a JSON object raises
    UnreadableChunk.

    Tool calls are emitted when the choice finishes; `Done` when the server
    sends `[DONE]` (after the usage chunk), or at a clean end of the stream if
    the choice had finished.
    """

    def __init__(self) -> None:
        self.calls = ToolCallAssembler()
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.finished = False
        self.valid_events = 0
        self.calls_made = 0
        self._calls_emitted = False

    def feed(self, line: str) -> list[Event]:
        if self.finished or not line.startswith("data:"):
            return []  # blank separators, `event:` lines and `:` comments
        payload = line[len("data:") :].strip()
        if not payload:
            return []  # an empty event carries no piece of the answer
        if payload == "[DONE]":
            return self.finish()
        chunk = chunk_object(payload)
        self.valid_events += 1
        if chunk.get("error"):
            raise ProviderError(
                f"the server reported an error while answering: {_error_text(chunk['error'])}",
                "api",
            )
        self._read_usage(chunk.get("usage"))
        events: list[Event] = []
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                events.extend(self._choice_events(choice))
        return events

    def _choice_events(self, choice: dict[str, Any]) -> list[Event]:
        delta = object_field(choice, "delta")
        events: list[Event] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            events.append(ThinkingDelta(reasoning))
        if isinstance(delta.get("content"), str) and delta["content"]:
            events.append(TextDelta(delta["content"]))
        for fragment in delta.get("tool_calls") or []:
            self.calls.add(fragment)
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
            events.extend(self._emit_calls())
        return events

    def _read_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else 0
        self.usage = Usage(
            as_int(usage.get("prompt_tokens")),
            as_int(usage.get("completion_tokens")),
            as_int(cached),
        )

    def _emit_calls(self) -> list[Event]:
        if self._calls_emitted:
            return []
        self._calls_emitted = True
        calls = self.calls.complete_calls()
        self.calls_made = len(calls)
        return [ToolCallEvent(call) for call in calls]

    def finish(self) -> list[Event]:
        """The closing events: any calls not yet emitted, then the one Done."""
        events = self._emit_calls()
        self.finished = True
        events.append(Done(self.usage, map_stop_reason(self.finish_reason, self.calls_made > 0)))
        return events


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return one_line(str(error.get("message") or json.dumps(error)))
    return one_line(str(error))


# ---------------------------------------------------------------- provider


WINDOW_KEYS = ("max_model_len", "context_length", "context_window")
"""Where OpenAI-compatible servers state a model's context window in their model list."""


def stated_window(entry: dict[str, Any]) -> int | None:
    """The window a model list entry states: one of WINDOW_KEYS, else llama.cpp's
    `meta.n_ctx`, the context of one of its slots (what `-c` gives each of `-np`), which is
    what a request may fill (its `n_ctx_train` is only what the model was trained on)."""
    meta = entry.get("meta")
    for value in (*(entry.get(key) for key in WINDOW_KEYS),
                  meta.get("n_ctx") if isinstance(meta, dict) else None):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


class OpenAIProvider(HttpChatProvider[OpenAIStreamDecoder]):
    """Any server speaking OpenAI chat completions with streaming."""

    name = "openai"
    default_model = DEFAULT_MODELS["openai"]
    default_base_url = DEFAULT_BASE_URL
    label = "the OpenAI-compatible API"
    connect_hint = "Check OPENAI_BASE_URL or --base-url (it should end in /v1)."
    key_env = "OPENAI_API_KEY"
    chat_path_shown = CHAT_PATH
    _model_entries: dict[str, dict[str, Any]] | None = None
    """`/models` by id, once the server answered (see `_model_entry`)."""

    def _chat_request(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> tuple[str, dict[str, Any]]:
        return CHAT_PATH, build_chat_body(messages, tools, options, self._wire,
                                          self._server_kind(options.model))

    async def _before_request(self, options: RequestOptions) -> None:
        if options.grammar or options.prefill:  # which server is it? (its model list, asked once)
            await self._model_entry(options.model)

    async def continues_replies(self, model: str) -> bool:
        await self._model_entry(model)
        return self._server_kind(model) in CONTINUE_FIELDS

    def _server_kind(self, model: str) -> str:
        """The server behind the API as its model list names it (`owned_by`: "llamacpp",
        "vllm", "openai" ...); "" before the list was read or when it does not say."""
        entry = (self._model_entries or {}).get(model)
        if entry is None and self._model_entries:  # a server of one model takes any name
            entry = next(iter(self._model_entries.values())) if len(self._model_entries) == 1 else None
        owner = entry.get("owned_by") if entry is not None else None
        return owner if isinstance(owner, str) else ""

    @cached_property
    def _wire(self) -> WireCache:
        return WireCache(encode_message)

    def _decoder(self) -> OpenAIStreamDecoder:
        return OpenAIStreamDecoder()

    def _stream_ended(self, decoder: OpenAIStreamDecoder) -> list[Event]:
        # Some servers close without `[DONE]`; a finished choice is still a whole answer.
        if decoder.finish_reason is None:
            raise self._http.incomplete_stream_error(decoder.valid_events > 0)
        return decoder.finish()

    def _model_not_found(self, model: str, message: str) -> str:
        return (
            f"model '{model}' not found at {self._http.shown_url} ({message}). "
            "Choose another with --model."
        )

    async def list_models(self) -> list[str]:
        data = await self._http.get_json("/models")
        return model_ids(self._model_list(data, "data"))

    async def context_window(self, model: str) -> int | None:
        """A known hosted model's window without a round trip; otherwise the window the
        server states in its model list (vLLM's `max_model_len`, OpenRouter's
        `context_length`); None when it states none."""
        known = known_context_window(model)
        if known:
            return known
        entry = await self._model_entry(model)
        return stated_window(entry) if entry is not None else None

    async def stated_billions(self, model: str) -> float | None:
        """The model's parameters in billions as the server's model list states them
        (llama.cpp's `meta.n_params`); None when it states none or cannot be asked."""
        entry = await self._model_entry(model)
        meta = entry.get("meta") if entry is not None else None
        count = meta.get("n_params") if isinstance(meta, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
            return None
        return count / 1e9

    async def _model_entry(self, model: str) -> dict[str, Any] | None:
        """The model's entry in `/models` (short timeout), asked once per provider while
        the server answers; None when it cannot be asked or does not list the model."""
        if self._model_entries is None:
            try:
                data = await self._http.get_json("/models", timeout=CAPABILITY_TIMEOUT)
            except ProviderError:
                return None
            entries = data.get("data") if isinstance(data, dict) else None
            self._model_entries = {
                entry["id"]: entry for entry in (entries if isinstance(entries, list) else [])
                if isinstance(entry, dict) and isinstance(entry.get("id"), str)
            }
        return self._model_entries.get(model)

    async def supports_native_tools(self, model: str) -> bool:
        """Assumed for every chat-completions server: the API offers no way to ask. A server
        without tool support rejects or ignores the tools; `--protocol text` works round it."""
        return True
