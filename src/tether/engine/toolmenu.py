"""The tool menu: which tools a request offers, and the rest deferred behind tool_search.

A small model follows a short menu far better than a long one, and every schema
costs prefill time. So a menu may name a few core tools; every other tool in the
table is deferred: listed by name only in tool_search's description, loaded on
request (`select:a,b` for exact names, keywords otherwise), and from then on
offered for the rest of the conversation. A deferred tool called before it is
loaded is not run; its result says how to load it.

The mechanism knows nothing about which tools exist: any tool is deferred by being
in the table and not in `core`.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.messages import Message
from ..core.toolspec import Tool, ToolContext, ToolTable
from ..tools.limits import params_named

if TYPE_CHECKING:
    from ..tools.params import ToolSearchParams

TOOL_SEARCH = "tool_search"
SEARCH_RESULT_LIMIT = 5


class ToolMenu:
    """Core tools plus those loaded so far; `core=None` offers the whole table except what
    `defer` names (MCP tools, when many are attached)."""

    def __init__(
        self, table: ToolTable, core: Sequence[str] | None = None,
        defer: Callable[[str], bool] | None = None,
    ) -> None:
        self.table = table
        self.core = None if core is None else frozenset(core)
        self.defer = defer
        self.loaded: set[str] = set()

    @property
    def deferring(self) -> bool:
        return self.core is not None or self.defer is not None

    def is_offered(self, name: str) -> bool:
        if name in self.loaded or name == TOOL_SEARCH:
            return True
        if self.defer is not None and self.defer(name):
            return False
        return self.core is None or name in self.core

    def offered(self) -> list[Tool]:
        """The tools a request offers, in table order (tool_search only while some wait)."""
        waiting = bool(self.deferred())
        return [
            t for t in self.table
            if self.is_offered(t.name) and (t.name != TOOL_SEARCH or waiting)
        ]

    def offered_table(self) -> ToolTable:
        return ToolTable(self.offered())

    def deferred(self) -> list[Tool]:
        return [t for t in self.table if not self.is_offered(t.name)]

    def start_conversation(self, history: Iterable[Message], loaded: set[str]) -> None:
        """Use the conversation's own loaded set; tools its history already called count as
        loaded (a resumed session keeps using them)."""
        self.loaded = loaded
        for message in history:
            for call in message.tool_calls:
                if call.name in self.table and not self.is_offered(call.name):
                    loaded.add(call.name)

    def refusal(self, name: str) -> str | None:
        """Why a call to `name` may not run yet, or None when it may."""
        if name not in self.table or self.is_offered(name):
            return None
        return (
            f"{name} is not loaded yet, so nothing was run. Load it first with "
            f'{TOOL_SEARCH}: {{"query": "select:{name}"}}, then call it again.'
        )

    # ------------------------------------------------------------ tool_search

    def search(self, query: str) -> str:
        query = query.strip()
        if query.lower().startswith("select:"):
            return self._select([n.strip() for n in query[7:].split(",") if n.strip()])
        matches = self._matching(query)
        if not matches:
            return (
                f"No tool matches {query!r}. Tools you can load: "
                f"{', '.join(t.name for t in self.deferred()) or '(none)'}."
            )
        return self._select([t.name for t in matches[:SEARCH_RESULT_LIMIT]])

    def _matching(self, query: str) -> list[Tool]:
        words = [w for w in re.split(r"[^a-z0-9]+", query.lower()) if len(w) > 1]
        scored = []
        for tool in self.deferred():
            haystack = (tool.name.replace("_", " ") + " " + tool.description).lower()
            score = sum(2 if w in tool.name else 1 for w in words if w in haystack)
            if score:
                scored.append((-score, tool.name, tool))
        return [tool for _, _, tool in sorted(scored, key=lambda s: s[:2])]

    def _select(self, names: list[str]) -> str:
        lines, unknown = [], []
        for name in names:
            tool = self.table.get(name)
            if tool is None or name == TOOL_SEARCH:
                unknown.append(name)
                continue
            self.loaded.add(name)
            lines.append(f"- {describe_tool(tool)}")
        if unknown:
            lines.append(f"Unknown: {', '.join(unknown)}.")
        if len(lines) > len(unknown):
            lines.insert(0, "Loaded; you can call these now:")
        return "\n".join(lines) or "Give tool names after select:, e.g. select:git_diff."


def describe_tool(tool: Tool) -> str:
    """`name(param, param?): description` in one line."""
    schema = tool.json_schema()
    required = set(schema.get("required", []))
    params = ", ".join(
        name + ("" if name in required else "?") for name in schema.get("properties", {})
    )
    return f"{tool.name}({params}): {tool.description}"


SCRIPT_NOT_TOOL = (
    "{path} is a file in the project, not a tool: run it with run_cmd (for example "
    "`python {path} --help`), or read it with read_file. Nothing was loaded."
)


QUERY_WORDS_CHECKED = 16
"""Words of one query looked up as project files: a query is a few keywords."""
QUERY_WORD_CHARS = 255


def _project_file_named(query: str, ctx: ToolContext) -> str | None:
    """A word of the query that names a file of the project, by its path (`scripts/build.py`)
    or by a base name only one file has (`build.py`): a small model takes the project's
    script for a tool to load. Only the project's file list is consulted, never the path the
    word spells, so a word leading out (`../../etc/passwd`, `~/.ssh/id_rsa`) is not looked
    at and the answer never depends on what exists outside the project."""
    words = (w.strip("`'\",") for w in query.replace("select:", " ").split())
    named = [w for w in words if ("." in w or "/" in w) and len(w) <= QUERY_WORD_CHARS]
    for word in named[:QUERY_WORDS_CHECKED]:
        path = _listed_file(word, ctx)
        if path is not None:
            return path.relative_to(ctx.root).as_posix()
    return None


def _listed_file(word: str, ctx: ToolContext) -> Path | None:
    """The one listed regular file `word` names, or None."""
    relative = _as_relative(word, ctx.root)
    if relative is None:
        return None
    same_name = ctx.files.named(posixpath.basename(relative))
    if "/" in relative:
        same_name = [p for p in same_name if p == ctx.root / relative]
    if len(same_name) != 1 or not _regular_file_here(same_name[0], ctx):
        return None
    return same_name[0]


def _as_relative(word: str, root: Path) -> str | None:
    """`word` as a path relative to the root, lexically; None for one that leaves it."""
    if word.startswith("~"):
        return None
    if os.path.isabs(word):
        absolute = posixpath.normpath(word)
        base = posixpath.normpath(str(root))
        if not absolute.startswith(base.rstrip("/") + "/"):
            return None
        word = absolute[len(base.rstrip("/")) + 1:]
    relative = posixpath.normpath(word)
    if relative in (".", "..") or relative.startswith("../"):
        return None
    return relative


def _regular_file_here(path: Path, ctx: ToolContext) -> bool:
    """The listed entry itself is a regular file (a symlink is not followed: it may lead out)
    and not tether's saved keys."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode) and not ctx.is_secret(path)
    except (OSError, ValueError):
        return False


def tool_search_tool(menu: ToolMenu) -> Tool:
    """The tool that loads deferred tools; its description names every one of them."""

    def handler(args: ToolSearchParams, ctx: ToolContext) -> str:
        script = _project_file_named(args.query, ctx)
        if script is not None:
            return SCRIPT_NOT_TOOL.format(path=script)
        return menu.search(args.query)

    names = ", ".join(t.name for t in menu.deferred())
    return Tool(
        name=TOOL_SEARCH,
        description=(
            f"Load more tools ({names}). query 'select:NAME' loads tools by name; "
            "keywords find them."
        ),
        params=params_named("ToolSearchParams"),
        handler=handler,
        reads=True,
        needs_approval=False,
        main_arg="query",
    )
