"""The shell and system tools as the dispatcher sees them: table entries and result text."""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import psutil
import pytest

from tether import shell_session
from tether.shell_session import ShellSessions
from tether.tools.shell import MAX_COMMAND_TIMEOUT, shell_tools
from tether.tools.system import SYSTEM_TOOLS, SystemInfoParams
from tether.toolspec import Tool, ToolContext, ToolError, ToolOutput

linux_only = pytest.mark.skipif(not shell_session.proc_usable(), reason="needs /proc")


@pytest.fixture
async def tools(tmp_path: Path):
    sessions = ShellSessions(tmp_path)
    yield {tool.name: tool for tool in shell_tools(sessions)}, ToolContext(root=tmp_path)
    await sessions.close_all()


async def call(tool: Tool, ctx: ToolContext, **arguments) -> ToolOutput:
    result = await tool.handler(tool.params.model_validate(arguments), ctx)
    assert isinstance(result, ToolOutput)
    return result


def test_table_entries_carry_the_flags_the_harness_reads(tmp_path: Path) -> None:
    tools = {t.name: t for t in shell_tools(ShellSessions(tmp_path, output_cap=5_000))}
    assert list(tools) == ["run_cmd", "send_input", "end_process"]
    run = tools["run_cmd"]
    assert run.runs_commands and run.main_arg == "command" and run.block_params == ("stdin",)
    assert run.timeout is not None and run.timeout > MAX_COMMAND_TIMEOUT
    assert run.result_cap is not None and run.result_cap > 5_000
    assert tools["send_input"].main_arg == "session" and tools["end_process"].main_arg == "session"
    for tool in tools.values():
        assert tool.runs_commands and inspect.iscoroutinefunction(tool.handler)
        assert tool.json_schema()["type"] == "object"
    assert set(run.json_schema()["properties"]) == {"command", "stdin", "timeout", "keep_running"}


async def test_run_cmd_shows_command_output_and_exit(tools) -> None:
    table, ctx = tools
    result = await call(table["run_cmd"], ctx, command="echo hello")
    lines = result.text.splitlines()
    assert lines[0] == "$ echo hello" and lines[1] == "hello"
    assert re.fullmatch(r"\[exit code 0 · \d+\.\ds\]", lines[-1])
    assert result.summary.startswith("exit 0")


async def test_nonzero_exit_is_a_result_not_an_error(tools) -> None:
    table, ctx = tools
    result = await call(table["run_cmd"], ctx, command="echo broken >&2; exit 1")
    assert "broken" in result.text and "[exit code 1 · " in result.text
    assert result.summary.startswith("exit 1")


@linux_only
async def test_waiting_command_is_answered_then_finishes(tools) -> None:
    table, ctx = tools
    prompt = f"{sys.executable} -c \"n=input('name? '); print('hi', n)\""
    first = await call(table["run_cmd"], ctx, command=prompt)
    assert "name? " in first.text
    assert first.text.splitlines()[-1] == (
        '[waiting for input · session s1 · answer with send_input(session="s1", text=...) '
        "or stop with end_process]"
    )
    assert first.summary == "waiting for input (s1)"
    second = await call(table["send_input"], ctx, session="s1", text="bob")
    assert second.text.splitlines()[0] == "hi bob" and "[exit code 0" in second.text


@linux_only
async def test_stdin_argument_and_end_process(tools) -> None:
    table, ctx = tools
    first = await call(table["run_cmd"], ctx, command="read a; echo got $a; read b", stdin="one")
    assert "got one" in first.text and "session s1" in first.text
    ended = await call(table["end_process"], ctx, session="s1")
    assert "process group killed" in ended.text and ended.summary == "ended"
    with pytest.raises(ToolError, match="No shell session 's1'"):
        await call(table["end_process"], ctx, session="s1")


async def test_timeout_status_line(tools) -> None:
    table, ctx = tools
    result = await call(table["run_cmd"], ctx, command="echo start; sleep 30", timeout=1)
    assert "start" in result.text
    assert result.text.endswith("[timed out after 1s · process group killed]")
    assert result.summary == "timed out"


async def test_unknown_session_and_missing_root_are_clear_errors(tmp_path: Path) -> None:
    sessions = ShellSessions(tmp_path / "missing")
    table = {t.name: t for t in shell_tools(sessions)}
    ctx = ToolContext(root=tmp_path)
    with pytest.raises(ToolError, match="Live sessions: none"):
        await call(table["send_input"], ctx, session="s3", text="x")
    with pytest.raises(ToolError, match="Could not start the command"):
        await call(table["run_cmd"], ctx, command="echo hi")


def test_system_info_reports_the_machine(tmp_path: Path) -> None:
    (tool,) = SYSTEM_TOOLS
    assert tool.name == "get_system_info" and tool.read_only
    result = tool.handler(SystemInfoParams(), ToolContext(root=tmp_path))
    assert isinstance(result, ToolOutput)
    text = result.text
    for label in ("OS:", "Python:", "CPU:", "Memory:", f"Disk ({tmp_path}):"):
        assert label in text
    by_cpu = text.split("Top processes by CPU:\n")[1].split("Top processes by memory:")[0]
    assert 1 <= len(by_cpu.strip().splitlines()) <= 5
    assert result.summary.startswith("CPU:")


@linux_only
async def test_what_an_exited_command_left_running_is_named_and_can_be_ended(tools) -> None:
    table, ctx = tools
    result = await call(table["run_cmd"], ctx, command="sleep 1000 >/dev/null 2>&1 & echo $!")
    pid = int(result.text.splitlines()[1])
    assert result.text.splitlines()[-1].endswith(
        " · 1 background process still running (stopped when tether exits; "
        "end_process stops it now)]"
    )
    assert psutil.pid_exists(pid)
    ended = await call(table["end_process"], ctx, session="s1")
    assert ended.summary == "ended"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

