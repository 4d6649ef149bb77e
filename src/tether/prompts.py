"""The system prompt: a few lines of stance, the place, and (text protocol only) the tool menu.

Every token here is prefill time on a small local model, so it stays short;
the tool menu is rendered from the tool table, never written by hand.
"""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

from .protocol import render_tool_prompt
from .toolspec import ToolTable

BASE = """You are tether, an assistant working in the user's terminal on a real machine.
Project root: {root} ({system}). Today is {date}.
Use the tools to look and act instead of guessing: read a file before editing it, run the code or tests to check your work. Paths are relative to the project root.
If a call is blocked or refused, do not retry it; continue without it or explain.
When you are done, answer briefly in plain text, without a tool call, and say what you checked."""


def system_prompt(root: Path, table: ToolTable, mode: str) -> str:
    text = BASE.format(
        root=root,
        system=platform.system() or "unknown OS",
        date=datetime.date.today().isoformat(),
    )
    if mode == "text" and len(table):
        text += "\n\n" + render_tool_prompt(table)
    return text
