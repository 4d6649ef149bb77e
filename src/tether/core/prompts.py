"""The system prompt: a few lines of stance, the place, and (text protocol only) the tool menu.

Every token here is prefill time on a small local model, so it stays short;
the tool menu is rendered from the tool table, never written by hand. The small
profile adds a worked example and a project map (see profile.py), and keeps the
date out: a prefix that never changes stays in the server's prompt cache.
"""

from __future__ import annotations

import datetime
import platform
from dataclasses import dataclass
from pathlib import Path

from ..protocol import render_call_as_text, render_tool_prompt
from .messages import ToolCall
from .toolspec import ToolTable

BASE = """You are tether, an assistant working in the user's terminal on a real machine.
Use the tools to look and act instead of guessing: read a file before editing it, run the code or tests to check your work. Paths are relative to the project root.
If a call is blocked or refused, do not retry it; continue without it or explain.
When you are done, answer briefly in plain text, without a tool call, and say what you checked."""

PLACE = "Project root: {root} ({system}). Today is {date}."
"""The full profile's line that changes with the project and the day: after the stable part."""

SMALL_BASE = """You are tether, a coding assistant. You work in a project on the user's machine through tools.
Never answer about the code or guess a path without looking: use the tools to read and search first.
Make changes with the tools (edit_file or write_file); do not just show code to the user. Run what you changed with run_cmd to check it. To make a failing test pass, fix the code it tests, not the test.
If a call fails, read the error and try again another way.
When the task is done, give a short final answer in plain text, without a tool call."""

EXAMPLE_FILE = "hello.py"
"""The worked example's file (small models run it in projects that have none)."""
EXAMPLE_TASK = f'Example. User: "make {EXAMPLE_FILE} greet Ann"'


@dataclass(frozen=True)
class PromptExtras:
    """What a profile adds to the prompt."""

    small: bool = False
    worked_example: bool = False
    project_map: str = ""


def system_prompt(
    root: Path, table: ToolTable, mode: str, extras: PromptExtras | None = None, steady: str = ""
) -> str:
    """What is the same in every project and on every day comes first (the stance, the tool
    menu, the worked example), then what is not (the project root, the OS and the date; `steady`,
    the project instructions and the skill index; the project map): a local server reuses
    its prompt cache for the whole stable prefix, whatever the project."""
    extras = extras or PromptExtras()
    text = SMALL_BASE if extras.small else BASE
    if mode == "text" and len(table):
        text += "\n\n" + render_tool_prompt(table, one_call=extras.small)
        if extras.worked_example:
            example = worked_example(table)
            text += "\n\n" + example if example else ""
    if not extras.small:  # the small profile keeps the place and the date out altogether
        text += "\n\n" + PLACE.format(
            root=root,
            system=platform.system() or "unknown OS",
            date=datetime.date.today().isoformat(),
        )
    text += steady
    if extras.project_map:
        text += "\n\n# Project files (path size)\n" + extras.project_map
    return text


def worked_example(table: ToolTable) -> str:
    """Look, change, check, answer: the three calls rendered as the text protocol writes them."""
    steps = [
        (ToolCall("ex1", "read_file", {"filepath": "hello.py"}), '1| print("Hello")'),
        (
            ToolCall("ex2", "edit_file", {
                "filepath": "hello.py",
                "old_content": 'print("Hello")',
                "new_content": 'print("Hello, Ann")',
            }),
            "Edited hello.py (+1 -1 lines).",
        ),
        (ToolCall("ex3", "run_cmd", {"command": "python hello.py"}), "Hello, Ann"),
    ]
    if any(call.name not in table for call, _ in steps):
        return ""
    lines = [EXAMPLE_TASK]
    for call, result in steps:
        lines += [render_call_as_text(call, table), f"[Tool Result for '{call.name}']", result]
    lines.append("Done: hello.py now prints \"Hello, Ann\" (I ran it).")
    return "\n".join(lines)
