"""The system prompt (a few lines of stance and, text protocol only, the tool menu) and the
project context that goes after the menu (the place, the date, the project's instructions, the
project map).

Every token here is prefill time on a small local model, so it stays short; the tool menu is
rendered from the tool table, never written by hand. The small profile adds a worked example
and a project map (see profile.py), and keeps the place and the date out.

A local server reuses its prompt cache for the longest prefix a request shares with the one
before, so the system message depends on neither the project, the date nor the turn, and all
that does comes after the tool menu in every wire format. Chat templates put native tool
schemas after the system message's text (Qwen2.5: the system turn's content, then "# Tools"
with the schemas, in the same turn), or at the start of the first user message (Llama 3.1 and
3.2 with `tools_in_user_message`, their default); Gemma has no system role and prepends it to
the first user turn, and wants user and model turns to alternate. So the project context opens
the first user message (never a message of its own): after the menu in all of them. Anthropic
caches tools, then system, then messages; Gemini sends `systemInstruction` and the tools apart
from the contents.
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.messages import Message, Part, Text, ToolCall
from ..core.toolspec import ToolTable
from ..protocol import render_call_as_text, render_tool_prompt

BASE = """You are tether, an assistant working in the user's terminal on a real machine.
Use the tools to look and act instead of guessing: read a file before editing it, run the code or tests to check your work. Paths are relative to the project root.
If a call is blocked or refused, do not retry it; continue without it or explain.
When you are done, answer briefly in plain text, without a tool call, and say what you checked."""

PLACE = "Project root: {root} ({system}). Today is {date}."
"""The full profile's line that changes with the project and the day: in the project context."""

CONTEXT_END = "# Request"
"""Heads the user's first request after the project context, which the request message opens."""

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
    numbered_reads: bool = True
    """read_file numbers its lines (the worked example's read result shows them so)."""
    project_map: str = ""


def system_prompt(table: ToolTable, mode: str, extras: PromptExtras | None = None) -> str:
    """What is the same in every project, on every day and at every turn: the stance and,
    with the text protocol, the tool menu and the worked example."""
    extras = extras or PromptExtras()
    text = SMALL_BASE if extras.small else BASE
    if mode == "text" and len(table):
        text += "\n\n" + render_tool_prompt(table, one_call=extras.small)
        if extras.worked_example:
            example = worked_example(table, extras.numbered_reads)
            text += "\n\n" + example if example else ""
    return text


def project_context(root: Path, extras: PromptExtras | None = None, steady: str = "",
                    today: datetime.date | None = None) -> str:
    """What differs by project and day, sent after the tool menu at the start of the first
    request: the project root, the OS and the date (the small profile leaves them out);
    `steady`, the project instructions and the skill index (each a section opening with a
    blank line); the project map."""
    extras = extras or PromptExtras()
    text = ""
    if not extras.small:
        text = PLACE.format(
            root=root,
            system=platform.system() or "unknown OS",
            date=(today or datetime.date.today()).isoformat(),
        )
    text += steady
    if extras.project_map:
        text += "\n\n# Project files (path size)\n" + extras.project_map
    return text.strip()


def with_context(context: str, request: str) -> str:
    """The first request as sent: the project context, then the request under its heading."""
    return f"{context}\n\n{CONTEXT_END}\n{request}" if context else request


def worked_example(table: ToolTable, numbered_reads: bool = True) -> str:
    """Look, change, check, answer: the three calls rendered as the text protocol writes them,
    the read's result as read_file shows it."""
    read = '1| print("Hello")' if numbered_reads else 'print("Hello")'
    steps = [
        (ToolCall("ex1", "read_file", {"filepath": "hello.py"}), read),
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


class OpeningContext:
    """The first message of the latest request, made from the history's first and the context:
    the same object while neither changes, so the providers' caches (wire JSON, token
    estimates) see an unchanged history prefix."""

    def __init__(self) -> None:
        self._first: Message | None = None
        self._parts: list[Part] = []
        self._context = ""
        self._message: Message | None = None

    def apply(self, body: Sequence[Message], context: str) -> list[Message]:
        """`body` with `context` opening its first message (one of its own before a body
        that does not start with the user)."""
        if not context or not body:
            return list(body)
        first = body[0]
        if self._message is None or not self._same(first, context):
            self._first, self._parts, self._context = first, list(first.parts), context
            self._message = opened(first, context)
        return [self._message, *body[1:]] if first.role == "user" else [self._message, *body]

    def _same(self, first: Message, context: str) -> bool:
        return (first is self._first and context == self._context and len(first.parts) == len(self._parts)
                and all(a is b for a, b in zip(first.parts, self._parts, strict=True)))


def opened(first: Message, context: str) -> Message:
    """The user message that opens a request: the context, then `first` if it is a user's."""
    if first.role != "user":
        return Message.user(context)
    if all(isinstance(part, Text) for part in first.parts):
        return Message.user(with_context(context, first.text))
    return Message("user", [Text(f"{context}\n\n{CONTEXT_END}\n"), *first.parts])
