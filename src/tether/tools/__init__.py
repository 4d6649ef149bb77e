"""The built-in tool table, assembled from each tool module."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a helper module of the package (the chat's prompt reads files through one)
    from ..core.toolspec import ToolContext, ToolTable  # must not bring in every tool
    from ..safety.sandbox import Sandbox
    from .ask import Asker

Closer = Callable[[], Awaitable[None]]
TAG_CACHE = Path("cache", "tags")
"""Under TETHER_HOME: repo_map's on-disk tag caches, one file per project."""


def builtin_tools(
    ctx: ToolContext,
    home: Path | None = None,
    asker: Asker | None = None,
    on_output: Callable[[str], None] | None = None,
    sandbox: Sandbox | None = None,
) -> tuple[ToolTable, list[Closer]]:
    """Every built-in tool, plus the closers for what they keep running (shell sessions).

    `home` (TETHER_HOME) enables the memory tools and repo_map's on-disk tag cache; `asker` is how get_user_input
    reaches a person (None: nobody can answer); `on_output` sees command output live;
    `sandbox` wraps every command run_cmd starts (None: commands run unconfined).
    """
    from ..core.toolspec import ToolTable
    from ..safety.shell_session import ShellSessions
    from ..store.memory import MEMORY_FILE, MemoryStore
    from .ask import ask_tools
    from .ast_table import ast_tools
    from .file_table import FILE_TOOLS
    from .git import GIT_TOOLS
    from .memory import memory_tools
    from .shell import shell_tools
    from .system import SYSTEM_TOOLS

    sessions = ShellSessions(ctx.root, on_output=on_output, launcher=sandbox)
    ctx.runs_unconfined = sessions.runs_unconfined
    tools = [*FILE_TOOLS, *shell_tools(sessions, sandbox), *GIT_TOOLS, *SYSTEM_TOOLS, *ask_tools(asker),
             *ast_tools(home / TAG_CACHE if home is not None else None)]
    if home is not None:
        tools += memory_tools(MemoryStore(home / MEMORY_FILE))
    return ToolTable(tools), [sessions.close_all]
