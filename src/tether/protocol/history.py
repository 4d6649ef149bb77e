"""A history as a model without native tools reads it, and the results it must not invent."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..core.history_prefix import SeenPrefix
from ..core.messages import Message, Role, Text, ToolCall, ToolResult
from ..core.toolspec import Tool, ToolTable
from .render import render_call_as_text

RESULT_MARKERS = ("[Tool Result for '", "[Tool Error for '")
"""How results are written back. A model that writes one itself is inventing a result:
the request stops there, and anything from there on is dropped."""


def cut_invented_results(text: str) -> str:
    """The reply up to the first line where the model starts writing a tool result itself."""
    cut = min(
        (
            m.start()
            for marker in RESULT_MARKERS
            for m in re.finditer(rf"^[ \t]*{re.escape(marker)}", text, re.M)
        ),
        default=len(text),
    )
    return text[:cut]


def _render_result(result: ToolResult) -> str:
    label = "Tool Error" if result.is_error else "Tool Result"
    return f"[{label} for '{result.name}']\n{result.content}"


def _render_message(message: Message, table: ToolTable) -> tuple[Role, str]:
    """The role and the single text a message becomes under the text protocol."""
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, Text):
            pieces.append(part.text)
        elif isinstance(part, ToolCall):
            pieces.append(render_call_as_text(part, table))
        elif isinstance(part, ToolResult):
            pieces.append(_render_result(part))
    has_results = any(isinstance(p, ToolResult) for p in message.parts)
    role: Role = "user" if message.role == "tool" or has_results else message.role
    joiner = "\n\n" if has_results else "\n"
    return role, joiner.join(p for p in pieces if p)


def render_history_as_text(messages: Sequence[Message], table: ToolTable) -> list[Message]:
    """The same history with only Text parts (and the user's images), as a model without
    native tools reads it.

    Calls become `<tool_call>` text, results become user messages, thinking is
    dropped, and consecutive user messages are merged. The input is not changed.
    """
    rendered: list[Message] = []
    for message in messages:
        role, text = _render_message(message, table)
        images = message.images  # the user's attached images go as they are
        if not text and not images:
            continue
        if role == "user" and rendered and rendered[-1].role == "user":
            last = rendered[-1]
            rendered[-1] = Message("user", [Text(last.text + "\n\n" + text), *last.images, *images])
        else:
            rendered.append(Message(role, [Text(text), *images]))
    return rendered


class TextHistory:
    """`render_history_as_text`, worked out once per message: every request renders the
    whole history again, and a turn's history only grows at its end.

    The rendering of each message of the history rendered last is kept while a new history
    still starts with it (`SeenPrefix`), and so are the merged messages made of them: a
    request renders only its new messages, and the messages it sends before them are the
    same objects as last time, which the providers' own caches (wire JSON, token estimates)
    recognise. The bytes are those of `render_history_as_text`; a change of the tool table
    (how a call is written depends on it) renders everything again."""

    def __init__(self) -> None:
        self._seen: SeenPrefix[tuple[Role, str]] = SeenPrefix()
        self._out: list[Message] = []
        self._ends: list[int] = []
        """For each message of `_out`, how many history messages it and those before hold."""
        self._tools: list[Tool] = []

    def render(self, messages: Sequence[Message], table: ToolTable) -> list[Message]:
        if len(self._tools) != len(table) or any(a is not b for a, b in zip(self._tools, table, strict=False)):
            self._tools = list(table)
            self._seen.follow(())
        kept = self._seen.follow(messages)
        while self._ends and self._ends[-1] > kept:
            del self._out[-1], self._ends[-1]
        for index in range(self._ends[-1] if self._ends else 0, len(messages)):
            if index >= kept:
                self._seen.add(messages[index], _render_message(messages[index], table))
            self._append(*self._seen.values[index], index + 1)
        return list(self._out)

    def _append(self, role: Role, text: str, end: int) -> None:
        if not text:
            if self._ends:
                self._ends[-1] = end
            return
        if role == "user" and self._out and self._out[-1].role == "user":
            self._out[-1] = Message("user", [Text(self._out[-1].text + "\n\n" + text)])
            self._ends[-1] = end
        else:
            self._out.append(Message(role, [Text(text)]))
            self._ends.append(end)
