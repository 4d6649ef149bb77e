"""Google's Gemini API: `/v1beta/models/{model}:streamGenerateContent?alt=sse`.

What differs from the other formats: the assistant's role is `model`, the
system prompt is `systemInstruction`, tool calls are `functionCall` parts and
their results `functionResponse` parts, and calls carry no ids. Ids are made up
when an answer is decoded; when a history is encoded, results are put in the
order of the calls they answer, which is how Gemini pairs them. Tool schemas
are converted to the OpenAPI subset Gemini accepts. The key travels in the
`x-goog-api-key` header, never in the URL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

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
from ..core.model_table import builtin_table
from ..core.toolspec import Tool
from . import DEFAULT_MODELS
from ._common import HttpChatProvider
from ._http import (
    StatusDescriber,
    StatusInfo,
    alternating_turns,
    as_int,
    chunk_object,
    object_field,
    one_line,
    parse_tool_arguments,
)
from .base import ProviderError, RequestOptions

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
CONTINUED = "(continuing the conversation)"
EMPTY_RESULT = "(no output)"
UNAVAILABLE_TOOL = "Not available in this request."
FOREIGN_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in for a thought signature the model did not issue
(history from another model or session); Gemini 3 refuses a function call
turn whose first call has no signature at all."""
MODEL_LIST_PAGES = 5

Part = dict[str, Any]


# ---------------------------------------------------------------- tool schemas


UNSUPPORTED_SCHEMA_KEYS = frozenset(
    {
        "additionalProperties",
        "default",
        "title",
        "$defs",
        "definitions",
        "$schema",
        "$id",
        "$comment",
        "examples",
        "const",
        "unevaluatedProperties",
        "patternProperties",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
        "readOnly",
        "writeOnly",
        "deprecated",
        "discriminator",
    }
)
SUPPORTED_FORMATS = frozenset({"enum", "date-time", "int32", "int64", "float", "double"})


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema reduced to the OpenAPI subset Gemini's functionDeclarations accept.

    References are inlined, keys Gemini rejects are dropped, `anyOf` with a
    null branch becomes `nullable`, and a list of types becomes its first
    non-null type (plus `nullable`).
    """
    definitions = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    return _convert(schema, definitions, depth=0)


def _convert(node: Any, definitions: dict[str, Any], depth: int) -> Any:
    if isinstance(node, list):
        return [_convert(item, definitions, depth) for item in node]
    if not isinstance(node, dict):
        return node
    if depth > 20:  # a recursive model: stop expanding rather than loop forever
        return {"type": "object"}
    node = _resolve_ref(_collapse_nullable(node), definitions)
    out: dict[str, Any] = {}
    if "const" in node and "enum" not in node:  # a single allowed value
        out["enum"] = [node["const"]]
    for key, value in node.items():
        if key in UNSUPPORTED_SCHEMA_KEYS:
            continue
        if key == "format" and value not in SUPPORTED_FORMATS:
            continue
        if key == "type" and isinstance(value, list):
            kinds = [k for k in value if k != "null"]
            out["type"] = kinds[0] if kinds else "string"
            if "null" in value:
                out["nullable"] = True
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _convert(v, definitions, depth + 1) for name, v in value.items()}
        else:
            out[key] = _convert(value, definitions, depth + 1)
    return out


def _resolve_ref(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    target = definitions.get(ref.rsplit("/", 1)[-1], {"type": "object"})
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _collapse_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [X, {"type": "null"}]}` (pydantic's Optional) is X with nullable."""
    branches = node.get("anyOf")
    if not isinstance(branches, list):
        return node
    others = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
    if len(others) == len(branches):
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if len(others) == 1 and isinstance(others[0], dict):
        return {**others[0], **rest, "nullable": True}
    return {**rest, "anyOf": others, "nullable": True}


def function_declaration(tool: Tool) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
    parameters = gemini_schema(tool.json_schema())
    if parameters.get("properties"):  # an empty object schema is rejected
        declaration["parameters"] = parameters
    return declaration


# ---------------------------------------------------------------- encoding


def _response_part(result: ToolResult) -> Part:
    # Gemini reads "output" as the function's result and "error" as its failure.
    content = result.content if result.content.strip() else EMPTY_RESULT
    key = "error" if result.is_error else "output"
    return {"functionResponse": {"name": result.name, "response": {key: content}}}


def _call_part(call: ToolCall, signature: str | None) -> Part:
    part: Part = {"functionCall": {"name": call.name, "args": call.arguments}}
    if signature:
        part["thoughtSignature"] = signature
    return part


def encode_parts(message: Message, signatures: dict[str, str] | None = None) -> list[Part]:
    """A message as Gemini parts. Thinking is not sent back; empty text never is.

    The first call of a reply carries its thought signature (the one Gemini
    issued if this session saw it, else the documented stand-in).
    """
    signatures = signatures or {}
    parts: list[Part] = []
    first_call = True
    for part in message.parts:
        if isinstance(part, Text) and part.text.strip():
            parts.append({"text": part.text})
        elif isinstance(part, ToolCall):
            signature = signatures.get(part.id) or (FOREIGN_SIGNATURE if first_call else None)
            parts.append(_call_part(part, signature))
            first_call = False
        elif isinstance(part, ToolResult):
            parts.append(_response_part(part))
        elif isinstance(part, Image):
            parts.append({"inline_data": {"mime_type": part.mime, "data": part.data}})
    return parts


def encode_contents(
    messages: Sequence[Message], signatures: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The conversation as alternating user/model contents.

    Results follow their calls in call order (Gemini pairs them by position),
    function responses come first in their user content, and a conversation
    cannot open with the model.
    """
    return alternating_turns(
        messages,
        lambda message: encode_parts(message, signatures),
        model_role="model",
        items="parts",
        is_result=lambda part: "functionResponse" in part,
        opener={"text": CONTINUED},
    )


def _history_tool_names(contents: list[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for content in contents:
        for part in content["parts"]:
            name = part.get("functionCall", {}).get("name")
            if name and name not in names:
                names.append(name)
    return names


def thinks(model: str) -> bool:
    """Whether the model thinks (Gemini 2.5 and later), so it may be asked for its thoughts:
    the model table's `thoughts` for its family."""
    entry = builtin_table().entry(model)
    return bool(entry is not None and entry.thoughts)


def build_chat_body(
    messages: Sequence[Message],
    tools: Sequence[Tool] | None,
    options: RequestOptions,
    signatures: dict[str, str] | None = None,
) -> dict[str, Any]:
    contents = encode_contents(messages, signatures)
    body: dict[str, Any] = {"contents": contents}
    system = "\n\n".join(m.text for m in messages if m.role == "system" and m.text.strip())
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if tools:
        body["tools"] = [{"functionDeclarations": [function_declaration(t) for t in tools]}]
    else:
        used = _history_tool_names(contents)
        if used:  # history with calls but no calls wanted now: declare them, forbid calling
            stubs = [{"name": n, "description": UNAVAILABLE_TOOL} for n in used]
            body["tools"] = [{"functionDeclarations": stubs}]
            body["toolConfig"] = {"functionCallingConfig": {"mode": "NONE"}}
    config: dict[str, Any] = {}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if options.max_tokens is not None:
        config["maxOutputTokens"] = options.max_tokens
    if thinks(options.model):
        config["thinkingConfig"] = {"includeThoughts": True}
    if config:
        body["generationConfig"] = config
    return body


def model_path(model: str) -> str:
    name = model.removeprefix("models/")
    return f"/v1beta/models/{quote(name, safe='-._~')}:streamGenerateContent?alt=sse"


# ---------------------------------------------------------------- decoding


REFUSALS = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"}
)
FINISH_REASONS = {
    "STOP": "end_turn",
    "FINISH_REASON_UNSPECIFIED": "end_turn",
    "OTHER": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "MALFORMED_FUNCTION_CALL": "malformed_tool_call",
    "UNEXPECTED_TOOL_CALL": "malformed_tool_call",
    "TOO_MANY_TOOL_CALLS": "malformed_tool_call",
    **{reason: "refusal" for reason in REFUSALS},
}


class GeminiStreamDecoder:
    """Turns the SSE lines of one answer into events.

    Each event is a whole `GenerateContentResponse`; function calls arrive
    complete, so they are emitted at once. There is no end marker: the answer
    is complete when a candidate reported its `finishReason` and the stream
    ended. A `data:` line that is not a JSON object raises UnreadableChunk.
    """

    finished = False
    """Never set while reading: the answer has no end marker, the stream's end ends it."""

    def __init__(self, signatures: dict[str, str] | None = None) -> None:
        """`signatures` is where thought signatures are recorded (default: a new dict)."""
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.valid_events = 0
        self.calls_made = 0
        self.signatures: dict[str, str] = {} if signatures is None else signatures
        """Thought signatures of the calls decoded, by call id, to send back later."""

    def feed(self, line: str) -> list[Event]:
        if not line.startswith("data:"):
            return []
        payload = line[len("data:") :].strip()
        if not payload:
            return []  # an empty event carries no piece of the answer
        chunk = chunk_object(payload)
        self.valid_events += 1
        if chunk.get("error"):
            raise _stream_error(chunk["error"])
        self._read_usage(chunk.get("usageMetadata"))
        self._read_prompt_feedback(chunk.get("promptFeedback"))
        candidates = chunk.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        if not isinstance(first, dict):
            return []
        content = object_field(first, "content")
        events = [e for part in content.get("parts") or [] for e in self._part_events(part)]
        if first.get("finishReason"):
            self.finish_reason = str(first["finishReason"])
        return events

    def _part_events(self, part: Any) -> list[Event]:
        if not isinstance(part, dict):
            return []
        text = part.get("text")
        if isinstance(text, str) and text:
            if part.get("thought") is True:
                return [ThinkingDelta(text)]
            return [TextDelta(text)]
        call = part.get("functionCall")
        name = call.get("name") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(name, str) or not name:
            return []
        raw_id = call.get("id")
        call_id = raw_id if isinstance(raw_id, str) and raw_id else new_call_id()
        if isinstance(part.get("thoughtSignature"), str):
            self.signatures[call_id] = part["thoughtSignature"]
        self.calls_made += 1
        return [
            ToolCallEvent(ToolCall(call_id, name, parse_tool_arguments(call.get("args"))))
        ]

    def _read_usage(self, usage: Any) -> None:
        # Every chunk repeats the running totals; the last one is the answer's.
        if not isinstance(usage, dict):
            return
        output = as_int(usage.get("candidatesTokenCount")) + as_int(usage.get("thoughtsTokenCount"))
        self.usage = Usage(
            as_int(usage.get("promptTokenCount")),
            output,
            as_int(usage.get("cachedContentTokenCount")),
        )

    def _read_prompt_feedback(self, feedback: Any) -> None:
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self.finish_reason = "BLOCKED:" + str(feedback["blockReason"])

    @property
    def stop_reason(self) -> str:
        reason = self.finish_reason or "STOP"
        if reason.startswith("BLOCKED:"):
            return "refusal"
        if self.calls_made and reason in ("STOP", "OTHER", "FINISH_REASON_UNSPECIFIED"):
            return "tool_use"
        return FINISH_REASONS.get(reason, reason.lower())

    def stop_notice(self) -> str | None:
        """A line for the user when the answer stopped for a reason they should know."""
        reason = self.finish_reason or ""
        if reason.startswith("BLOCKED:"):
            return f"Gemini refused the request ({reason.removeprefix('BLOCKED:')})."
        if reason in REFUSALS:
            return f"Gemini stopped the answer ({reason})."
        if FINISH_REASONS.get(reason) == "malformed_tool_call":
            return f"Gemini produced a tool call it could not complete ({reason})."
        return None

    def finish(self) -> Done:
        return Done(self.usage, self.stop_reason)


def _stream_error(error: Any) -> ProviderError:
    if isinstance(error, dict):
        status = str(error.get("status") or "")
        text = one_line(str(error.get("message") or status or error))
        kind = {"RESOURCE_EXHAUSTED": "rate_limit", "UNAVAILABLE": "overloaded"}.get(status, "api")
        return ProviderError(f"Gemini reported an error while answering: {text}", kind)
    return ProviderError(f"Gemini reported an error while answering: {one_line(str(error))}", "api")


# ---------------------------------------------------------------- provider


class GeminiProvider(HttpChatProvider[GeminiStreamDecoder]):
    """Gemini models through the Generative Language API."""

    name = "gemini"
    default_model = DEFAULT_MODELS["gemini"]
    default_base_url = DEFAULT_BASE_URL
    label = "Gemini"
    connect_hint = "Check GEMINI_BASE_URL or --base-url (without /v1beta)."
    key_env = KEY_ENVS[0]
    key_header = "x-goog-api-key"
    chat_path_shown = "/v1beta"

    def __init__(self, base_url: str, **transport: Any) -> None:
        """`transport` is what every HTTP provider takes (api_key, timeouts, retry, notice)."""
        super().__init__(base_url, **transport)
        self._signatures: dict[str, str] = {}
        """Thought signatures of the calls this session decoded, sent back with those calls."""

    def _chat_request(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> tuple[str, dict[str, Any]]:
        body = build_chat_body(messages, tools, options, self._signatures)
        return model_path(options.model), body

    def _decoder(self) -> GeminiStreamDecoder:
        return GeminiStreamDecoder(self._signatures)

    def _stream_ended(self, decoder: GeminiStreamDecoder) -> list[Event]:
        # No end marker: a clean end after a finish reason is the whole answer.
        if decoder.finish_reason is None:
            raise self._http.incomplete_stream_error(decoder.valid_events > 0)
        notice = decoder.stop_notice()
        if notice and self._notice is not None:
            self._notice(notice)
        return [decoder.finish()]

    def _chat_status_error(self, model: str) -> StatusDescriber:
        describe = super()._chat_status_error(model)

        def describe_gemini(info: StatusInfo) -> ProviderError:
            if info.status == 400 and "api key" in info.message.lower():
                info = StatusInfo(401, info.message, info.retry_after)  # Gemini's bad key is a 400
            return describe(info)

        return describe_gemini

    async def list_models(self) -> list[str]:
        """Models that can chat, without the `models/` prefix (every page, up to a few)."""
        names: list[str] = []
        token = ""
        for _ in range(MODEL_LIST_PAGES):
            query = "pageSize=1000" + (f"&pageToken={quote(token)}" if token else "")
            data = await self._http.get_json(f"/v1beta/models?{query}")
            names += [n for n in map(_chat_model_name, self._model_list(data, "models")) if n]
            token = data.get("nextPageToken") or ""
            if not isinstance(token, str) or not token:
                break
        return names

    async def supports_native_tools(self, model: str) -> bool:
        """Gemini models take function declarations."""
        return True


def _chat_model_name(model: Any) -> str | None:
    if not isinstance(model, dict) or not isinstance(model.get("name"), str):
        return None
    methods = model.get("supportedGenerationMethods")
    if isinstance(methods, list) and "generateContent" not in methods:
        return None  # embedding and other non-chat models
    return model["name"].removeprefix("models/") or None
