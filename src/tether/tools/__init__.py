"""The built-in tool table, assembled from each tool module."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..toolspec import ToolContext, ToolTable

Closer = Callable[[], Awaitable[None]]


def builtin_tools(ctx: ToolContext) -> tuple[ToolTable, list[Closer]]:
    """Every built-in tool, plus the closers for what they keep running (shell sessions)."""
    from ..shell_session import ShellSessions
    from .files import FILE_TOOLS
    from .git import GIT_TOOLS
    from .shell import shell_tools
    from .system import SYSTEM_TOOLS

    sessions = ShellSessions(ctx.root)
    table = ToolTable([*FILE_TOOLS, *shell_tools(sessions), *GIT_TOOLS, *SYSTEM_TOOLS])
    return table, [sessions.close_all]
