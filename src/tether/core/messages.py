"""The data shapes every other module speaks: message parts, stream events, evidence.

One history, many renderings: tool calls and results stay structured parts with
their ids, and each provider (or the text protocol) encodes them at send time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thinking:
    text: str


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


INVALID_JSON_KEY = "__invalid_json__"
"""Providers put native arguments that are not a JSON object under this key, as the only
argument, so dispatch can tell the model what it sent instead of running the call."""


def arguments_fields(arguments: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments for people and scripts: the internal key never shows; arguments
    that were not a JSON object are `{}` with the text the model sent as `invalid_arguments`."""
    if INVALID_JSON_KEY in arguments:
        return {"arguments": {}, "invalid_arguments": str(arguments[INVALID_JSON_KEY])}
    return {"arguments": arguments}


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Image:
    """An image the user attached: its MIME type (from its bytes, engine/images.py) and the
    bytes in base64, the form every API takes them in."""

    mime: str
    data: str


Part = Text | Thinking | ToolCall | ToolResult | Image


def new_call_id() -> str:
    """A provider-neutral call id (short enough for every API's limits)."""
    import uuid  # with the platform module it imports, at the first call: no start makes an id

    return "call_" + uuid.uuid4().hex[:20]


@dataclass
class Message:
    """One entry of the history. Tool results live in `role="tool"` messages."""

    role: Role
    parts: list[Part] = field(default_factory=list)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", [Text(text)])

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", [Text(text)])

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def images(self) -> list[Image]:
        return [p for p in self.parts if isinstance(p, Image)]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p for p in self.parts if isinstance(p, ToolCall)]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [p for p in self.parts if isinstance(p, ToolResult)]

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "parts": [part_to_dict(p) for p in self.parts]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(data["role"], [part_from_dict(p) for p in data.get("parts", [])])


_PART_TYPES: dict[str, type] = {
    "text": Text,
    "thinking": Thinking,
    "tool_call": ToolCall,
    "tool_result": ToolResult,
    "image": Image,
}
_PART_NAMES = {cls: name for name, cls in _PART_TYPES.items()}


def part_to_dict(part: Part) -> dict[str, Any]:
    return {"type": _PART_NAMES[type(part)], **part.__dict__}


def part_from_dict(data: dict[str, Any]) -> Part:
    fields = {k: v for k, v in data.items() if k != "type"}
    kind = _PART_TYPES.get(data.get("type", ""))
    if kind is None:
        raise ValueError(f"unknown message part type: {data.get('type')!r}")
    return kind(**fields)


# ---------------------------------------------------------------- stream events


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
        }


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    call: ToolCall


@dataclass(frozen=True)
class Done:
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "end_turn"


Event = TextDelta | ThinkingDelta | ToolCallEvent | Done


# ---------------------------------------------------------------- evidence


CommandState = Literal["exited", "waiting_for_input", "timed_out", "killed"]


@dataclass(frozen=True)
class CommandStatus:
    """How a command stood when a shell tool returned: the typed form of its status line.

    Set by run_cmd, send_input and end_process (and by the dispatcher when a command tool
    never came back); whoever reports on commands reads these fields, never the text.
    """

    state: CommandState
    exit_code: int | None = None
    """The exit status (negative: the signal that ended it); None while it runs or waits."""
    elapsed: float = 0.0
    """Seconds this call waited on the command."""
    session: str | None = None
    """The session to answer while `waiting_for_input`."""

    @property
    def failed(self) -> bool:
        """It ran and what it ran failed: a non-zero exit or a timeout."""
        return self.state == "timed_out" or (self.state == "exited" and self.exit_code != 0)

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"state": self.state, "exit_code": self.exit_code,
                                 "elapsed_ms": round(self.elapsed * 1000, 1)}
        if self.session is not None:
            shown["session"] = self.session
        return shown


@dataclass
class Evidence:
    """What one tool call did: kept for the turn, shown with the answer, stored with the session."""

    call: ToolCall
    started: float
    elapsed: float
    summary: str
    result: str
    error: bool = False
    command: CommandStatus | None = None
    """How the command stood afterwards, for the shell tools; None for every other call."""
    details: tuple[str, ...] = ()
    """Lines a tool adds for /evidence beyond its result (search_web: each source's answer,
    each page read, why a page was rejected)."""
    changed_paths: tuple[str, ...] = ()
    """The files a file tool reported it changed (absolute paths); () for every other call."""

    def as_dict(self) -> dict[str, Any]:
        shown = {
            "name": self.call.name,
            **arguments_fields(self.call.arguments),
            "is_error": self.error,
            "elapsed_ms": round(self.elapsed * 1000, 1),
            "summary": self.summary,
        }
        if self.command is not None:
            shown["command"] = self.command.as_dict()
        if self.details:
            shown["details"] = list(self.details)
        return shown
