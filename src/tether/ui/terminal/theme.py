"""Named styles for the terminal UI, so colours are chosen in one place."""

from __future__ import annotations

from rich.theme import Theme

CODE_THEME = "monokai"
"""Pygments theme for fenced code blocks in replies."""

THEME = Theme(
    {
        "tool": "cyan",
        "tool.error": "bold red",
        "notice": "yellow",
        "thinking": "dim italic",
        "diff.add": "green",
        "diff.del": "red",
        "status": "dim",
        "escape": "reverse",
        "statusbar": "reverse",
    }
)
