"""What a write's or an edit's result says about the code it left: it no longer parses (Python,
or a data file's format), it imports names its project modules lack, it adds options nothing
reads."""

from __future__ import annotations

import ast
from pathlib import Path

from tether.core.toolspec import ToolContext

from .data_syntax import data_syntax_note
from .file_text import SYNTAX_CHECK_CHARS, python_syntax_note
from .import_check import missing_imports_note
from .option_check import unread_options_note


def code_notes(path: Path, text: str, shown: str, ctx: ToolContext, before: str | None = None) -> str:
    """The warnings for `text`, now the content of `path` ("" for none); `before`: its text
    before the change (None: a new file). The text is parsed once for the checks that read
    its tree."""
    if path.suffix not in (".py", ".pyw") or len(text) > SYNTAX_CHECK_CHARS:
        return data_syntax_note(path, text, shown, before)
    broken = python_syntax_note(path, text, shown)
    if broken:
        return broken  # the other checks need a file that parses
    tree = ast.parse(text)  # compiled just now: it parses
    return missing_imports_note(path, tree, ctx) + unread_options_note(path, tree, ctx)
