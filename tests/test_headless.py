"""The one-shot writer says why a call was blocked, and what would let it run."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from scripted import TextArgs, make_tool

from tether.dispatch import Dispatcher, GateVerdict
from tether.headless import HeadlessUI
from tether.messages import ToolCall
from tether.toolspec import Tool, ToolContext, ToolTable

HINT = "Use --auto or --allow RULE to let such calls run."


class Verdict:
    def __init__(self, action: str) -> None:
        self.action = action

    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        return GateVerdict(self.action, "it changes files")  # type: ignore[arg-type]


async def progress_after_a_blocked_write(tmp_path: Path, action: str, auto: bool = False) -> str:
    err = io.StringIO()
    ui = HeadlessUI("text", out=io.StringIO(), err=err, auto=auto)
    writer = make_tool("write", lambda a, c: "ok", TextArgs, reads=False, writes_files=True)
    dispatcher = Dispatcher(ToolTable([writer]), ToolContext(root=tmp_path), ui, policy=Verdict(action))
    result, _ = await dispatcher.dispatch(ToolCall("c1", "write", {"filepath": "a", "content": "x"}))
    assert result.is_error
    return err.getvalue()


async def test_a_call_nobody_could_approve_gets_the_hint(tmp_path: Path) -> None:
    shown = await progress_after_a_blocked_write(tmp_path, "ask")
    assert "needs the user's approval (it changes files)" in shown
    assert HINT in shown


@pytest.mark.parametrize(("action", "auto"), [("deny", False), ("ask", True)])
async def test_no_hint_when_a_rule_refused_or_auto_was_given(tmp_path: Path, action: str, auto: bool) -> None:
    shown = await progress_after_a_blocked_write(tmp_path, action, auto)
    assert "blocked" in shown
    assert HINT not in shown
