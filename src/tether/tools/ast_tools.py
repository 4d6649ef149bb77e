"""The code-structure tools: get_code_skeleton, query_ast_node and repo_map.

They read files, so each path goes through `ctx.resolve` (the resolution the approval
policy checked, the saved keys refused) and each file through read_file's loader (no
FIFOs, no huge or binary files); repo_map's walk applies search_in_file's checks to
every file it finds.

Code structure, in detail:

`tools/ast_tools.AstTools` holds one `Grammars` (the optional `ast` extra: tree-sitter and
the per-language grammar wheels, imported on first use) and one `RepoMapper`; its methods are
the handlers. `builtin_tools` adds the three entries of `tools/ast_table.py`, which name them
as methods of one `Shared` AstTools, made (and this module imported) at the first call of any
of them. They are not in `profile.CORE_TOOLS`, so the small profile defers them (its
system-prompt project map is `engine/projectmap.py`, which does not use them).
`get_code_skeleton` and `query_ast_node` resolve their path with `ctx.resolve` and read
with read_file's `_load_text`; the outline is the tags query's `definition.*` captures
(`ast_outline.tree_sitter_outline`), or `python_outline` (stdlib `ast`) when
`GrammarMissing` says tree-sitter is absent.

`repo_map`: `RepoMapper.build` lists files with `host/project_files.searchable_files` (git's, else the
walk), keeps those with a grammar that `WalkGuard` lets through, stamps them (mtime, size) and
takes each one's `FileTags` from the `TagCache` (parsed again only when its stamp changed;
entries of vanished files dropped). The focus comes from `mentions_in(CONVERSATION.get())`:
`core/toolspec.CONVERSATION` is a context variable the loop sets around a reply's calls
(`TurnLoop.dispatch_all`; `in_daemon_thread` copies the context, and a sub-agent's loop sets
its own), matched against the repository: files named by path arguments or text, and
mentioned words that are defined names. The map is cached by (file set with stamps, budget,
focus); the ranking by (file set, focus), so a new budget only refits. `repo_rank.rank_definitions`
builds the use -> definition graph (edge weights: sqrt of the use count, times the name and
file weights), runs `pagerank` with the focus as the restart distribution, and shares each
file's rank out along its edges to the definitions; `fit_to_budget` binary-searches the count
of ranked definitions whose rendering fits `tokens_of` (the context guard's characters per
token).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.toolspec import CONVERSATION, ToolContext, ToolError, ToolOutput
from ._paths import display_path
from .ast_grammars import EXTRA_HINT, GRAMMARS, GrammarMissing, Grammars, language_of
from .ast_outline import Symbol, python_outline, render_outline, tree_sitter_outline
from .file_text import _load_text, _os_errors_as_tool_errors
from .limits import DEFAULT_MAP_BUDGET

if TYPE_CHECKING:
    from .params import QueryAstParams, RepoMapParams, SkeletonParams
    from .repo_map import RepoMapper

CAPTURE_CAP = 100
CAPTURE_TEXT_CAP = 300
CAPTURE_LINES = 5
QUERY_EXAMPLE = "(function_definition name: (identifier) @name) for Python"


@dataclass
class _Source:
    path: Path
    shown: str
    language: str
    text: str


@dataclass
class AstTools:
    """The three tools' handlers over one set of grammars and one map cache."""

    grammars: Grammars = field(default_factory=Grammars)
    tag_store: Path | None = None
    """The folder of the on-disk tag caches (TETHER_HOME/cache/tags); None: memory only."""

    @functools.cached_property
    def mapper(self) -> RepoMapper:
        """Made at the first repo_map call: its modules (and sqlite3) are no start's business."""
        from .repo_map import RepoMapper

        return RepoMapper(self.grammars, self.tag_store)

    @_os_errors_as_tool_errors  # as in the file tools: an unexpected OSError becomes a message
    def skeleton(self, args: SkeletonParams, ctx: ToolContext) -> ToolOutput:
        source = _source_file(args.filepath, ctx)
        heading = f"{source.shown} ({source.language}, {source.text.count(chr(10)) + 1:,} lines)"
        try:
            symbols = tree_sitter_outline(self.grammars, source.language, source.text.encode())
        except GrammarMissing as err:
            if source.language != "python":
                raise ToolError(f"Outlining {source.language} needs tree-sitter: {err}.") from err
            symbols = _stdlib_outline(source)
            heading += f"\n[from Python's ast module; for other languages {EXTRA_HINT}]"
        return ToolOutput(render_outline(symbols, heading), summary=f"{source.shown}: "
                          f"{len(symbols)} definitions")

    @_os_errors_as_tool_errors
    def query(self, args: QueryAstParams, ctx: ToolContext) -> ToolOutput:
        source = _source_file(args.filepath, ctx)
        try:
            compiled = self.grammars.query(source.language, args.query)
            tree = self.grammars.parse(source.language, source.text.encode())
        except GrammarMissing as err:
            raise ToolError(
                f"query_ast_node needs tree-sitter: {err}. get_code_skeleton still outlines "
                "Python files without it."
            ) from err
        except ValueError as err:
            raise ToolError(
                f"Invalid tree-sitter query for {source.language}: {err}. A query is an "
                f"S-expression of node types with @captures, e.g. {QUERY_EXAMPLE}."
            ) from err
        found = self.grammars.captures(compiled, tree.root_node)
        return _render_captures(found, source.shown, "@" in args.query)

    @_os_errors_as_tool_errors
    def repo_map(self, args: RepoMapParams, ctx: ToolContext) -> ToolOutput:
        target = ctx.resolve(args.path)
        shown = display_path(target, ctx.root)
        if not target.is_dir():
            raise ToolError(f"{shown} is not a folder; repo_map maps a folder (default: '.').")
        from .repo_map import mentions_in

        mentions = mentions_in(CONVERSATION.get(), args.focus)
        built = self.mapper.build(ctx, target, args.budget or DEFAULT_MAP_BUDGET, mentions)
        cached = " (cached)" if built.cached else ""
        parsed = f" ({built.parsed} parsed)" if built.parsed < built.files else ""
        return ToolOutput(built.text, summary=f"{built.shown_definitions} definitions from "
                          f"{built.files} files{parsed}{cached}")


def _source_file(filepath: str, ctx: ToolContext) -> _Source:
    path = ctx.resolve(filepath)
    shown = display_path(path, ctx.root)
    language = language_of(path)
    if language is None:
        known = ", ".join(sorted(GRAMMARS))
        raise ToolError(
            f"{shown}: no grammar for '{path.suffix or path.name}' files (known: {known}). "
            "Use read_file or search_in_file."
        )
    return _Source(path, shown, language, _load_text(path, ctx).text)


def _stdlib_outline(source: _Source) -> list[Symbol]:
    try:
        return python_outline(source.text)
    except SyntaxError as err:
        raise ToolError(
            f"{source.shown} is not valid Python (line {err.lineno}: {err.msg}); "
            "read it with read_file."
        ) from err
    except (ValueError, RecursionError) as err:
        raise ToolError(f"{source.shown} cannot be outlined: {err}.") from err


def _render_captures(found: dict[str, list], shown: str, names_captures: bool) -> ToolOutput:
    ordered = sorted(
        ((node.start_byte, -node.end_byte, name, node) for name, nodes in found.items()
         for node in nodes),
        key=lambda item: item[:3],
    )
    if not ordered:
        why = "" if names_captures else " (it names no @captures; add one to see what matches)"
        return ToolOutput(f"No captures in {shown}{why}.", summary="0 captures")
    lines = [f"{len(ordered):,} captures in {shown}:"]
    for _, _, name, node in ordered[:CAPTURE_CAP]:
        start, end = node.start_point[0] + 1, node.end_point[0] + 1
        lines.append(f"@{name} L{start}-{end} ({node.type}):")
        lines.append(_capture_text(node.text or b""))
    if len(ordered) > CAPTURE_CAP:
        lines.append(f"[... {len(ordered) - CAPTURE_CAP:,} more captures; narrow the query]")
    return ToolOutput("\n".join(lines), summary=f"{len(ordered)} captures")


def _capture_text(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    clipped = "\n".join(lines[:CAPTURE_LINES])
    if len(clipped) > CAPTURE_TEXT_CAP:
        clipped = clipped[:CAPTURE_TEXT_CAP]
    if clipped != text:
        clipped += f" [... {len(text):,} characters in all]"
    return "\n".join("    " + line for line in clipped.split("\n"))
