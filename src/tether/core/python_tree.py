"""Parsing Python text that may not be Python: the one place the checks and notes that read a
file's syntax tree get it, or None for text that does not parse (a syntax error, a NUL byte)."""

from __future__ import annotations

import ast


def parsed_python(text: str | None) -> ast.Module | None:
    """The syntax tree of `text`; None when there is no text or it does not parse."""
    if text is None:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
