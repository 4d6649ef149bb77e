"""The tool table: one entry per tool, from which every rendering is derived.

A `Tool` carries its parameters as a pydantic model. Native schemas (for each
provider) and the text-protocol section of the system prompt are both rendered
from that model, so the table, the prompt and the handlers cannot drift apart.
A tool may name its model, and its handler, by where it lives ("module:name"; a handler may
also be a method of a `Shared` object): the model (and pydantic with it) is imported at its
first use, the handler's module at the tool's first call, not when the table is built.
"""

from __future__ import annotations

import contextvars
import copy
import functools
import importlib
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar, overload

from ..host import ProjectFiles, resolve_user_path
from .messages import CommandStatus, Message, ToolCall

if TYPE_CHECKING:
    from pydantic import BaseModel

CONVERSATION: contextvars.ContextVar[Sequence[Message]] = contextvars.ContextVar(
    "tether_conversation", default=()
)
"""The history of the conversation whose calls are running (the loop sets it around a
reply's calls; a sub-agent's calls see its own): repo_map leans toward what it talks about."""

CURRENT_CALL: contextvars.ContextVar[ToolCall | None] = contextvars.ContextVar(
    "tether_current_call", default=None
)
"""The call whose handler is running (an async handler's task sees its own): a sub-agent
names the spawn call that started it."""

DEFAULT_RESULT_CAP = 16_000
MCP_NAMESPACE = "mcp__"
"""Names starting with this are MCP servers' tools (`mcp__<server>__<tool>`) and only theirs:
a skill script cannot take one, so the rules and hooks written for an MCP tool reach
nothing else."""
SECRETS_REFUSED = (
    "tether's saved keys (credentials.json in its state directory) are never read or "
    "written through a tool"
)


class SecretGuard(Protocol):
    """tether's saved keys, as a tool sees them (safety.secret_files.SecretFiles is the one in use)."""

    def is_secret(self, resolved: str) -> bool:
        """True for a resolved path that is a saved key, by name or by identity."""
        ...

    def identities(self) -> set[tuple[int, int]]:
        """(device, inode) of every saved key there now."""
        ...


class ToolError(Exception):
    """Raised by a handler for an expected failure; becomes an `is_error` result."""


@dataclass
class ToolOutput:
    """What a handler returns when it has more to say than a string."""

    text: str
    summary: str = ""
    changed_paths: tuple[Path, ...] = ()
    command: CommandStatus | None = None
    """How the command a shell tool ran stood when it returned (its exit code, state, time)."""
    details: tuple[str, ...] = ()
    """Lines for /evidence that the model does not need (which sources answered, and so on)."""


@dataclass
class ToolContext:
    """What a handler may know about the world. Handlers never print."""

    root: Path
    notice: Callable[[str], None] = lambda message: None
    secrets: SecretGuard | None = None
    """tether's saved keys: no path a tool resolves may be one of them, no file it reads either."""
    may_read: Callable[[Path], bool] = lambda path: True
    """Whether the deny rules let a tool read a file it found by itself (a search walking a
    directory): the approval policy judged only the paths the call named."""
    runs_unconfined: Callable[[str], bool] = lambda session: False
    """Whether a shell session runs outside the sandbox (run_cmd with unsandboxed: true):
    input sent to it runs there too, so the approval policy treats it as escalation."""
    files: ProjectFiles = field(init=False)
    """The project's file list, taken at most every few seconds (project_files.LIST_TTL)."""

    def __post_init__(self) -> None:
        self.files = ProjectFiles(self.root)

    def resolve(self, path: str, *, follow_symlinks: bool = True) -> Path:
        """The path open() will reach: `~` expanded, relative to the project root, every
        symlink followed where the kernel meets it (before a `..` after it), the last one
        only with `follow_symlinks`. The approval policy checked this same resolution.
        Raises ToolError for tether's saved keys, OSError for a symlink loop."""
        resolved = resolve_user_path(path, str(self.root), follow_final=follow_symlinks)
        if self.is_secret(resolved):
            raise ToolError(f"Refused: {SECRETS_REFUSED}.")
        return Path(resolved)

    def is_secret(self, resolved: str | Path) -> bool:
        """True when a resolved path is one of tether's saved keys (by name or identity)."""
        return self.secrets is not None and self.secrets.is_secret(str(resolved))


class Access(NamedTuple):
    """A tool's kinds of access, as capability rules name them: "read" (a path it only
    reads), "write" (a path it changes), "run" (a command)."""

    primary: frozenset[str]
    """What it does on purpose: what allow rules of a kind cover, and what a deny rule
    naming this tool extends to through the other tools."""
    every: frozenset[str]
    """That plus what it does on the way (edit_file reads the file it changes): what deny
    rules of a kind look at."""


def object_at(location: str) -> Any:
    """The object at "package.module:name" (its module imported now if it was not yet)."""
    module, _, name = location.partition(":")
    return getattr(importlib.import_module(module), name)


class Shared:
    """What the tools of a group share (a client, caches), made by the maker at
    "package.module:name" with the arguments the start knows, at the first call of any of
    them: building the table imports none of the group's code. `method` names a handler."""

    def __init__(self, maker: str, /, **arguments: Any) -> None:
        self.maker = maker
        self.arguments = arguments
        self._made: Any = None
        self._lock = threading.Lock()  # two of its tools may be first called at once

    @property
    def made(self) -> bool:
        return self._made is not None

    def get(self) -> Any:
        """The object, made now if no tool of the group was called yet."""
        with self._lock:
            if self._made is None:
                self._made = object_at(self.maker)(**self.arguments)
            return self._made

    def method(self, name: str) -> SharedMethod:
        return SharedMethod(self, name)


@dataclass(frozen=True)
class SharedMethod:
    """A handler that is the method `name` of a `Shared` object."""

    shared: Shared
    name: str

    def resolve(self) -> Any:
        return getattr(self.shared.get(), self.name)


T = TypeVar("T")


class LateSlot(Generic[T]):
    """`Tool.params` and `Tool.handler`: the value, or where it lives ("package.module:name",
    or a `SharedMethod`), which is imported (or made) at the first read and kept. A start
    builds the table without importing any model (nor pydantic) or any handler named so;
    the dispatcher's first call of a tool reads its handler."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = "_" + name

    @overload
    def __get__(self, tool: None, owner: type) -> LateSlot[T]: ...
    @overload
    def __get__(self, tool: Tool, owner: type) -> T: ...
    def __get__(self, tool: Tool | None, owner: type) -> T | LateSlot[T]:
        if tool is None:  # a dataclass asking for a default: there is none
            raise AttributeError(self.key[1:])
        value = tool.__dict__[self.key]
        if isinstance(value, str):
            value = tool.__dict__[self.key] = object_at(value)
        elif isinstance(value, SharedMethod):
            value = tool.__dict__[self.key] = value.resolve()
        found: T = value
        return found

    def __set__(self, tool: Tool, value: T | str | SharedMethod) -> None:
        tool.__dict__[self.key] = value

    @staticmethod
    def given(tool: Tool, name: str) -> Any:
        """What the field `name` of `tool` was given, left unread (a location stays one)."""
        return tool.__dict__["_" + name]


HandlerResult = str | ToolOutput
Handler = Callable[[Any, ToolContext], HandlerResult | Awaitable[HandlerResult]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: LateSlot[type[BaseModel]] = LateSlot()
    """The parameters model, or where it lives ("package.module:Name"): see LateSlot.
    Required all the same (a descriptor is not a default; mypy takes it for one)."""
    handler: LateSlot[Handler] = LateSlot()
    """The handler, or where it lives ("package.module:name", a `SharedMethod`): see LateSlot.
    Required, as `params` is."""
    reads: bool = False
    writes_files: bool = False
    runs_commands: bool = False
    network: bool = False
    """Its arguments leave tether for another machine or a program that may pass them on (a
    web request, an MCP server): once outside content entered the request, a call asks."""
    block_params: tuple[str, ...] = ()
    path_params: tuple[str, ...] = ()
    """Arguments that name files or directories: the approval policy checks every one of
    them (path rules, the project root, tether's saved keys), not only the main argument."""
    written_params: tuple[str, ...] = ()
    """Those of `path_params` a call may change (copy_file's source is only read): they are
    snapshotted before the call runs, and /deepthink reviews them. The others are read:
    `read(...)` rules cover those, `write(...)` rules these."""
    reads_written: bool = False
    """The call also reads what it changes and may show some of it (edit_file's diff and
    near-match hints): deny `read(...)` rules cover its written paths too."""
    result_cap: int | None = None
    """Characters of result kept (head and tail); None uses the configured default."""
    keeps_full_result: bool = False
    """A result over the cap is saved whole to a file the model pages with read_file (an
    MCP server's answer: asking again may cost, or answer differently)."""
    main_arg: str | None = None
    """The argument that permission rules match against and the UI shows first."""
    timeout: float | None = None
    """Seconds the handler may run; None uses the configured default."""
    needs_approval: bool | None = None
    """None: ask exactly when the tool has side effects. False: never ask (tools that talk to
    the user themselves, or touch only tether's own state). Deny rules apply either way."""
    effect: str = ""
    """What the approval question says the call does ("": told by the flags above)."""
    batch_of: tuple[str, str] | None = None
    """(tool, argument): a call is a batch of calls to that tool, one per item of the list
    `argument` (spawn_agents' jobs are spawn_agent calls): the rules naming that tool judge
    each item, and the handler refuses an item they deny (`approval.denial`)."""
    schema: dict[str, Any] | None = field(default=None, hash=False)
    """A JSON schema given as it is (an MCP server's tool), used instead of the params
    model's; `params` then only has to accept the arguments."""

    def changed(self, **changes: Any) -> Tool:
        """A copy with `changes` (as dataclasses.replace) that leaves a model or a handler
        named by where it lives unread: a variant made at start (the small profile's
        read_file) loads nothing."""
        for late in ("params", "handler"):
            changes.setdefault(late, LateSlot.given(self, late))
        return replace(self, **changes)

    @property
    def read_only(self) -> bool:
        return not (self.writes_files or self.runs_commands) and self.reads

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the parameters model (a fresh copy: callers may adapt it)."""
        return copy.deepcopy(self.schema if self.schema is not None else _schema_of(self.params))

    def path_values(self, arguments: dict[str, Any], *, written_only: bool = False) -> dict[str, str]:
        """The call's non-empty path arguments by name, in declaration order;
        `written_only`: just those the call may change."""
        names = self.written_params if written_only else self.path_params
        return {k: v for k in names if isinstance(v := arguments.get(k), str) and v}

    def path_accesses(self, arguments: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
        """(argument, value, kinds) for each non-empty path argument. kinds[0] is what the call
        does to the path ("write" or "read"), which allow rules must cover; deny rules look at
        every kind listed."""
        accesses: list[tuple[str, str, tuple[str, ...]]] = []
        for name, value in self.path_values(arguments).items():
            if name not in self.written_params:
                accesses.append((name, value, ("read",)))
            else:
                accesses.append((name, value, ("write", "read") if self.reads_written else ("write",)))
        return accesses

    @property
    def access(self) -> Access:
        """What the tool does, as capability rules name it (see Access)."""
        kinds = {"run"} if self.runs_commands else set()
        if any(p not in self.written_params for p in self.path_params):
            kinds.add("read")
        if self.written_params:
            kinds.add("write")
        every = kinds | {"read"} if self.reads_written and self.written_params else kinds
        return Access(frozenset(kinds), frozenset(every))

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

    def replace(self, tool: Tool) -> None:
        """Put `tool` in the place of the tool of the same name (a variant of it), or at the end."""
        self._tools[tool.name] = tool  # assigning to an existing key keeps its position

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

    def access(self) -> dict[str, Access]:
        """What each tool does (see Tool.access), for the permission rules."""
        return {t.name: t.access for t in self}

    def block_params(self) -> dict[str, tuple[str, ...]]:
        return {t.name: t.block_params for t in self if t.block_params}
