"""The memory tools: the assistant's own notebook, kept across sessions.

Reading (`read_memory`, `get_memory_list`) is read-only and runs without
asking. Writing, editing and deleting are marked `reads=False`: they change
state that outlives the session, so they go through approval like any other
side effect, and the loop never answers a repeated write from the cache of
read results.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from tether.core.toolspec import Tool, ToolContext, ToolError, ToolOutput
from tether.store.memory import MemoryCorrupt, MemoryStore

from .limits import params_named

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .params import (
        DeleteMemoryParams,
        EditMemoryParams,
        MemoryListParams,
        ReadMemoryParams,
        WriteMemoryParams,
    )

_Params = TypeVar("_Params", bound="BaseModel")
_Handler = Callable[[_Params, ToolContext], ToolOutput]


def _store_errors_as_tool_errors(handler: _Handler[_Params]) -> _Handler[_Params]:
    """Every expected failure (bad name, missing memory, corrupt file) becomes a plain message."""

    @functools.wraps(handler)
    def wrapper(args: _Params, ctx: ToolContext) -> ToolOutput:
        try:
            return handler(args, ctx)
        except (MemoryCorrupt, LookupError, ValueError) as exc:
            raise ToolError(str(exc)) from exc
        except OSError as exc:
            raise ToolError(f"Could not save memory: {exc.strerror or exc}") from exc

    return wrapper


def memory_tools(store: MemoryStore) -> list[Tool]:
    """The five memory tools, all working on `store`."""

    @_store_errors_as_tool_errors
    def write_memory(args: WriteMemoryParams, ctx: ToolContext) -> ToolOutput:
        replaced = store.write(args.name, args.content)
        verb = "Replaced" if replaced else "Saved"
        return ToolOutput(
            f"{verb} memory {args.name.strip()!r} ({len(args.content)} characters).",
            summary=f"{verb.lower()} {args.name.strip()}",
        )

    @_store_errors_as_tool_errors
    def read_memory(args: ReadMemoryParams, ctx: ToolContext) -> ToolOutput:
        content = store.read(args.name)
        return ToolOutput(content, summary=f"{args.name.strip()} ({len(content)} characters)")

    @_store_errors_as_tool_errors
    def get_memory_list(args: MemoryListParams, ctx: ToolContext) -> ToolOutput:
        entries = store.list()
        if not entries:
            return ToolOutput("No memories saved yet.", summary="none")
        lines = [f"- {name}: {preview}" if preview else f"- {name}" for name, preview in entries]
        return ToolOutput("\n".join(lines), summary=f"{len(entries)} memories")

    @_store_errors_as_tool_errors
    def edit_memory(args: EditMemoryParams, ctx: ToolContext) -> ToolOutput:
        store.edit(args.name, args.old_content, args.new_content)
        return ToolOutput(
            f"Edited memory {args.name.strip()!r}.", summary=f"edited {args.name.strip()}"
        )

    @_store_errors_as_tool_errors
    def delete_memory(args: DeleteMemoryParams, ctx: ToolContext) -> ToolOutput:
        store.delete(args.name)
        return ToolOutput(
            f"Deleted memory {args.name.strip()!r}.", summary=f"deleted {args.name.strip()}"
        )

    return [
        _tool(
            "write_memory",
            "Save a note under a name for future sessions (facts about the user, the "
            "project, decisions). Replaces a memory with the same name.",
            params_named("WriteMemoryParams"),
            write_memory,
            block_params=("content",),
        ),
        _tool(
            "read_memory",
            "Read one saved memory by name.",
            params_named("ReadMemoryParams"),
            read_memory,
            reads=True,
        ),
        _tool(
            "get_memory_list",
            "List saved memories: each name with the first line of its content.",
            params_named("MemoryListParams"),
            get_memory_list,
            reads=True,
            main_arg=None,
        ),
        _tool(
            "edit_memory",
            "Change part of a memory: replace old_content (exact text occurring once) with "
            "new_content.",
            params_named("EditMemoryParams"),
            edit_memory,
            block_params=("old_content", "new_content"),
        ),
        _tool("delete_memory", "Delete a saved memory.", params_named("DeleteMemoryParams"), delete_memory),
    ]


def _tool(name: str, description: str, params: str, handler: Any, **flags: Any) -> Tool:
    flags.setdefault("main_arg", "name")
    # reads=False on write/edit/delete: a change that outlives the session asks first
    # and is never treated as a repeatable read.
    flags.setdefault("reads", False)
    return Tool(name=name, description=description, params=params, handler=handler, **flags)
