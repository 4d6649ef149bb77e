"""The code-structure tools' table: get_code_skeleton, query_ast_node and repo_map.

Their handlers are the methods of one `ast_tools.AstTools` (one set of grammars, one map
cache), made at the first call of any of the three: a start builds these entries without
importing the grammars, the outlines or the file loading.
"""

from __future__ import annotations

from pathlib import Path

from ..core.toolspec import Shared, Tool
from .limits import MAX_MAP_BUDGET, params_named


def ast_tools(tag_store: Path | None) -> list[Tool]:
    """The three entries over one AstTools; `tag_store` is the folder of repo_map's on-disk
    tag caches (None: memory only)."""
    code = Shared("tether.tools.ast_tools:AstTools", tag_store=tag_store)
    return [
        Tool("get_code_skeleton", "Outline a source file: classes, functions and methods "
             "with signatures and line ranges, no bodies. Cheaper than read_file for "
             "finding where things are.", params_named("SkeletonParams"), code.method("skeleton"),
             reads=True, main_arg="filepath", path_params=("filepath",)),
        Tool("query_ast_node", "Run a tree-sitter S-expression query on a source file's "
             "syntax tree; shows each capture's text and lines.", params_named("QueryAstParams"),
             code.method("query"), reads=True, main_arg="filepath", path_params=("filepath",)),
        Tool("repo_map", "A map of the repository: its most referenced definitions "
             "(signatures only), ranked toward what the conversation is about, within "
             "a token budget.", params_named("RepoMapParams"), code.method("repo_map"), reads=True,
             main_arg="path", path_params=("path",), result_cap=MAX_MAP_BUDGET * 4 + 1_000),
    ]
