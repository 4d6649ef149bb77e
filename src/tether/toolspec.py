"""The tool table: one entry per tool, from which every rendering is derived.

A `Tool` carries its parameters as a pydantic model. Native schemas (for each
provider) and the text-protocol section of the system prompt are both rendered
from that model, so the table, the prompt and the handlers cannot drift apart.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

DEFAULT_RESULT_CAP = 16_000


class ToolError(Exception):
    """Raised by a handler for an expected failure; becomes an `is_error` result."""


@dataclass
class ToolOutput:
    """What a handler returns when it has more to say than a string."""

    text: str
    summary: str = ""
    changed_paths: tuple[Path, ...] = ()


@dataclass
class ToolContext:
    """What a handler may know about the world. Handlers never print."""

    root: Path
    notice: Callable[[str], None] = lambda message: None

    def resolve(self, path: str) -> Path:
        """A path as the user means it: relative paths are inside the project root."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.root / p


HandlerResult = str | ToolOutput
Handler = Callable[[Any, ToolContext], HandlerResult | Awaitable[HandlerResult]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: type[BaseModel]
    handler: Handler
    reads: bool = False
    writes_files: bool = False
    runs_commands: bool = False
    network: bool = False
    block_params: tuple[str, ...] = ()
    path_params: tuple[str, ...] = ()
    """Arguments that name files or directories: the approval policy checks every one of
    them (path rules, the project root, tether's saved keys), not only the main argument."""
    written_params: tuple[str, ...] = ()
    """Those of `path_params` a call may change (copy_file's source is only read): they are
    snapshotted before the call runs, and /deepthink reviews them."""
    result_cap: int | None = None
    """Characters of result kept (head and tail); None uses the configured default."""
    main_arg: str | None = None
    """The argument that permission rules match against and the UI shows first."""
    timeout: float | None = None
    """Seconds the handler may run; None uses the configured default."""
    needs_approval: bool | None = None
    """None: ask exactly when the tool has side effects. False: never ask (tools that talk to
    the user themselves, or touch only tether's own state). Deny rules apply either way."""

    @property
    def read_only(self) -> bool:
        return not (self.writes_files or self.runs_commands) and self.reads

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the parameters model (a fresh copy: callers may adapt it)."""
        return copy.deepcopy(_schema_of(self.params))

    def path_values(self, arguments: dict[str, Any], *, written_only: bool = False) -> dict[str, str]:
        """The call's non-empty path arguments by name, in declaration order;
        `written_only`: just those the call may change."""
        names = self.written_params if written_only else self.path_params
        return {k: v for k in names if isinstance(v := arguments.get(k), str) and v}

    def main_value(self, arguments: dict[str, Any]) -> str:
        if self.main_arg is None:
            return ""
        value = arguments.get(self.main_arg, "")
        return value if isinstance(value, str) else str(value)


@functools.lru_cache(maxsize=256)
def _schema_of(params: type[BaseModel]) -> dict[str, Any]:
    """Schema generation is slow in pydantic; it is done once per model, not per request."""
    schema = params.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    return schema


class ToolTable:
    """The ordered set of tools a conversation offers."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"duplicate tool name: {tool.name}")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def remove(self, name: str) -> None:
        self._tools.pop(name, None)

    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def block_params(self) -> dict[str, tuple[str, ...]]:
        return {t.name: t.block_params for t in self if t.block_params}
