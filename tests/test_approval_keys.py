"""Approvals in a real pseudo-terminal: one key answers (y, n, a; Esc is no) without Enter,
any other key asks again, a change's diff is shown once, and a call's time leaves out the
time its question waited for the user."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from pydantic import BaseModel
from test_app import start_app, turn_bodies

from tether.core.messages import ToolCall
from tether.core.toolspec import Tool, ToolContext, ToolTable
from tether.core.ui_protocol import Decision, SilentUI
from tether.core.verdict import GateVerdict
from tether.engine import dispatch
from tether.engine.dispatch import Dispatcher


def write_call() -> Reply:
    return Reply(tool_calls=[("write_file", {"filepath": "a.md", "content": "hello\n"})])


def tool_results(server: FakeServer) -> list[str]:
    return [m["content"] for m in turn_bodies(server)[1]["messages"] if m["role"] == "tool"]


def test_one_key_answers_and_any_other_key_asks_again(
    server: FakeServer, project: Path, home: Path
) -> None:
    server.add(write_call(), Reply(text="Wrote it."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        app.mark()
        app.send("x")  # not an answer: asked again, nothing refused
        app.wait_for_output("Press y, n or a")
        app.wait_for_cursor_on("Allow?")
        assert not (project / "a.md").exists()
        app.send("y")  # no Enter
        app.wait_for_text("Wrote it.")
        app.wait_for_prompt()
        shown = app.text_since_line()
    assert (project / "a.md").read_text() == "hello\n"
    assert "Allow? [y]es / [n]o / [a]lways (Esc: no) yes" in shown
    assert "refused" not in tool_results(server)[0]


def test_escape_refuses_without_asking_why(server: FakeServer, project: Path, home: Path) -> None:
    server.add(write_call(), Reply(text="Not written."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        app.send("\x1b")
        app.wait_for_text("Not written.")
        app.wait_for_prompt()
        shown = app.text_since_line()
    assert not (project / "a.md").exists()
    assert "Why not?" not in shown and "(Esc: no) no" in shown
    assert "The user refused this write_file call." in tool_results(server)[0]


def test_the_diff_of_an_approved_edit_is_shown_once(
    server: FakeServer, project: Path, home: Path
) -> None:
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    edit = {"filepath": "calc.py", "old_content": "return a - b", "new_content": "return a + b"}
    server.add(Reply(tool_calls=[("edit_file", edit)]), Reply(text="Fixed."), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("fix add")
        app.wait_for_cursor_on("Allow?")
        app.send("y")
        app.wait_for_text("Fixed.")
        app.wait_for_prompt()
        lines = app.text_since_line().splitlines()
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert sum(line.strip() == "+    return a + b" for line in lines) == 1, lines
    assert sum(line.strip() == "-    return a - b" for line in lines) == 1, lines
    assert any("✓" in line and "calc.py" in line for line in lines)


class Clock:
    """time.time for the dispatcher: it moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now


class SlowToAnswer(SilentUI):
    """Asks, and the user takes 100 seconds to say yes."""

    can_ask = True

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.clock.now += 100.0
        return Decision(True)


class NoArgs(BaseModel):
    pass


class AskAlways:
    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        return GateVerdict("ask", "a test")


def test_a_calls_time_leaves_out_its_approval_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(dispatch, "time", clock)

    def handler(args: NoArgs, ctx: ToolContext) -> str:
        clock.now += 1.5  # the call's own work
        return "done"

    table = ToolTable([Tool("work", "does work", NoArgs, handler)])
    dispatcher = Dispatcher(table, ToolContext(tmp_path), SlowToAnswer(clock), policy=AskAlways())
    result, evidence = asyncio.run(dispatcher.dispatch(ToolCall("c1", "work", {})))
    assert not result.is_error
    assert evidence.elapsed == 1.5
