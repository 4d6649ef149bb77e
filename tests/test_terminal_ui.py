"""The terminal UI's tool lines: marks, live command output with a bounded screen share."""

from __future__ import annotations

import io

from rich.console import Console

from tether.core.messages import CommandStatus, Evidence, ToolCall
from tether.ui.terminal.terminal_ui import LIVE_LINES, TerminalUI


def make_ui() -> tuple[TerminalUI, io.StringIO]:
    buf = io.StringIO()
    return TerminalUI(Console(file=buf, width=100)), buf


def test_flooding_output_is_shown_up_to_a_limit_then_its_tail() -> None:
    ui, buf = make_ui()
    call = ToolCall("c", "run_cmd", {"command": "seq 1 3000"})
    out = "".join(f"{i}\n" for i in range(1, 3001))
    ui.tool_start(call)
    for i in range(0, len(out), 97):
        ui.command_output(out[i : i + 97])
    ui.tool_end(Evidence(call, 0, 0.1, "exit 0 · 0.1s", out + "[exit code 0 · 0.1s]"))
    lines = buf.getvalue().splitlines()
    assert lines[1:3] == ["1", "2"] and str(LIVE_LINES) in lines
    assert f"{LIVE_LINES + 1}" not in lines
    assert any("lines not shown" in ln for ln in lines)
    assert lines[-3].strip() == "3000" and "✓ exit 0" in lines[-1]
    assert len(lines) < LIVE_LINES + 20


def test_short_output_is_shown_once_and_a_failed_command_is_marked() -> None:
    ui, buf = make_ui()
    call = ToolCall("c", "run_cmd", {"command": "false"})
    ui.tool_start(call)
    ui.command_output("no newline at the end")
    ui.tool_end(Evidence(call, 0, 0.1, "exit 1 · 0.1s", "no newline at the end\n[exit code 1]",
                         command=CommandStatus("exited", 1, 0.1)))
    text = buf.getvalue()
    assert text.count("no newline at the end") == 1
    assert "! exit 1" in text
