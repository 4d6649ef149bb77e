"""The one-shot writer says why a call was blocked, and what would let it run."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from scripted import TextArgs, make_tool

from tether.core.messages import CommandStatus, Evidence, ToolCall
from tether.core.toolspec import Tool, ToolContext, ToolTable
from tether.engine.dispatch import NEEDS_APPROVAL, Dispatcher, GateVerdict
from tether.host.safetext import SafeTextStream, clean_text, has_bad_chars
from tether.safety.visible import visible
from tether.ui.headless import HeadlessUI, outcome_mark
from tether.ui.terminal.terminal_ui import TerminalUI
from tether.ui.text_answer import no_answer_note

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


# ---------------------------------------------------------------- bad bytes never break the output

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
"""Every code point, lone surrogates and control characters included."""
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=6,
)


def byte_stream(encoding: str) -> io.TextIOWrapper:
    """A real encoded stream, strict like sys.stdout: an unencodable character raises."""
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict", newline="")


def written(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode(stream.encoding)  # type: ignore[attr-defined]


def feed(ui: HeadlessUI | TerminalUI, texts: list[str], arguments: dict) -> ToolCall:
    """What the loop tells any UI in a run, with the strings in every place a string goes."""
    call = ToolCall("c1", texts[-1], arguments)
    for text in texts:
        ui.text(text)
        ui.thinking(text)
        ui.notice(text, "warning")
    ui.tool_start(call)
    ui.tool_end(Evidence(call, 0.0, 0.1, texts[0], texts[-1], error=False))
    ui.tool_end(Evidence(call, 0.0, 0.1, "blocked", NEEDS_APPROVAL + texts[0], error=True))
    return call


def drive(ui: HeadlessUI, texts: list[str], arguments: dict, result_text: str) -> None:
    """Everything a one-shot run writes, the result object last."""
    ui.init({"cwd": texts[0], "tools": texts})
    call = feed(ui, texts, arguments)
    ui.result({
        "type": "result", "is_error": False, "result": result_text, "stop_reason": "end_turn",
        "tool_calls": [{"name": call.name, "arguments": arguments}],
    })


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(ANY_TEXT, min_size=1, max_size=4), arguments=st.dictionaries(ANY_TEXT, JSON_VALUE),
    result_text=ANY_TEXT, fmt=st.sampled_from(["json", "stream-json"]),
    encoding=st.sampled_from(["utf-8", "latin-1", "ascii"]),
)
def test_json_output_always_ends_with_a_valid_result_object(
    texts: list[str], arguments: dict, result_text: str, fmt: str, encoding: str
) -> None:
    out, err = byte_stream(encoding), byte_stream(encoding)
    drive(HeadlessUI(fmt, out=out, err=err), texts, arguments, result_text)
    lines = written(out).splitlines()
    objects = [json.loads(line) for line in lines]  # every line is valid JSON
    assert objects[-1]["type"] == "result"
    assert objects[-1]["result"] == clean_text(result_text)
    if fmt == "json":
        assert len(objects) == 1
    # strict parsers refuse lone surrogates: none may survive, not even as \u escapes
    assert not any(has_bad_chars(json.dumps(o, ensure_ascii=False)) for o in objects)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(ANY_TEXT, min_size=1, max_size=4), arguments=st.dictionaries(ANY_TEXT, JSON_VALUE),
       result_text=ANY_TEXT, encoding=st.sampled_from(["utf-8", "latin-1", "ascii"]))
def test_text_output_always_ends_with_the_answer(
    texts: list[str], arguments: dict, result_text: str, encoding: str
) -> None:
    out, err = byte_stream(encoding), byte_stream(encoding)
    drive(HeadlessUI("text", out=out, err=err), texts, arguments, result_text)
    shown = written(out)
    expected = visible(clean_text(result_text).rstrip("\n"))  # escapes drawn, not obeyed
    if expected and encoding == "utf-8":
        assert shown == expected + "\n"
    if not expected:  # an empty answer is said, never left blank
        assert shown == no_answer_note(1) + "\n"
    assert shown.endswith("\n")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(ANY_TEXT, min_size=1, max_size=4), arguments=st.dictionaries(ANY_TEXT, JSON_VALUE))
def test_the_terminal_writer_never_fails_on_what_it_is_given(
    texts: list[str], arguments: dict, tmp_path: Path
) -> None:
    stream = byte_stream("utf-8")
    console = Console(file=SafeTextStream(stream), width=80, force_terminal=True)

    ui = TerminalUI(console, root=tmp_path, show_thinking=True)
    call = feed(ui, texts, arguments)
    ui.command_output(texts[0])
    ui.tool_end(Evidence(call, 0.0, 0.1, texts[0], texts[-1], error=True))
    ui.settle()
    written(stream)  # strict UTF-8 all the way: nothing unencodable reached the terminal


class ClosedPipe(io.StringIO):
    """stdout whose reader went away: every write fails as a closed pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no descriptor")


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_a_closed_stdout_is_reported_once_and_never_raises(fmt: str) -> None:
    closed: list[str] = []
    ui = HeadlessUI(fmt, out=ClosedPipe(), err=ClosedPipe(), on_output_closed=lambda: closed.append("x"))
    ui.text("partial answer")
    ui.notice("something", "warning")
    ui.result({"type": "result", "is_error": False, "result": "the answer"})
    ui.result({"type": "result", "is_error": False, "result": "again"})
    assert closed == ["x"]


# ---------------------------------------------------------------- command outcomes


def test_the_outcome_mark_reads_the_command_status_not_the_summary() -> None:
    call = ToolCall("c", "run_cmd", {"command": "make"})
    failed = Evidence(call, 0, 0.1, "exit 0 · 0.1s", "", command=CommandStatus("exited", 2, 0.1))
    slow = Evidence(call, 0, 0.1, "", "", command=CommandStatus("timed_out", None, 5.0))
    waiting = Evidence(call, 0, 0.1, "", "", command=CommandStatus("waiting_for_input", session="s1"))
    worded = Evidence(ToolCall("d", "read_file", {}), 0, 0.1, "exit 1 · 0.1s", "exit 1")
    assert [outcome_mark(e) for e in (failed, slow, waiting, worded)] == ["!", "!", "✓", "✓"]
    assert failed.as_dict()["command"] == {"state": "exited", "exit_code": 2, "elapsed_ms": 100.0}
    assert "command" not in worded.as_dict()


async def test_a_command_tool_that_never_returns_is_recorded_as_timed_out(tmp_path: Path) -> None:
    import asyncio

    async def hang(args: object, ctx: object) -> str:
        await asyncio.Event().wait()
        return ""

    shell = make_tool("run_cmd", hang, TextArgs, reads=False, runs_commands=True, timeout=0.2)
    reader = make_tool("read_file", hang, TextArgs, timeout=0.2)
    dispatcher = Dispatcher(ToolTable([shell, reader]), ToolContext(root=tmp_path), HeadlessUI("json"))
    _, ran = await dispatcher.dispatch(ToolCall("c1", "run_cmd", {"filepath": "a", "content": "x"}))
    _, read = await dispatcher.dispatch(ToolCall("c2", "read_file", {"filepath": "a", "content": "x"}))
    assert ran.error and ran.command == CommandStatus("timed_out", elapsed=0.2)
    assert read.error and read.command is None


def test_stream_json_starts_with_init_even_when_a_notice_came_first() -> None:
    """A missing sandbox is noticed while the runtime is built, before init is sent."""
    out = io.StringIO()
    ui = HeadlessUI("stream-json", out=out, err=io.StringIO())
    ui.notice("Commands run without a sandbox", "warning")
    ui.init({"provider": "openai"})
    ui.notice("later")
    types = [(e["type"], e.get("message")) for e in map(json.loads, out.getvalue().splitlines())]
    assert types == [("init", None), ("notice", "Commands run without a sandbox"), ("notice", "later")]


def test_a_run_that_ends_before_init_still_writes_its_notices() -> None:
    out = io.StringIO()
    ui = HeadlessUI("stream-json", out=out, err=io.StringIO())
    ui.notice("no provider", "error")
    ui.result({"type": "result", "result": ""})
    assert [e["type"] for e in map(json.loads, out.getvalue().splitlines())] == ["notice", "result"]
