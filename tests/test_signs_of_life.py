"""Signs of life in the chat, in a real pseudo-terminal: one live activity line during every
wait (the model, a tool, a command's newest output line), the status line kept under it, and
nothing of either left in the scrollback once the turn is over."""

from __future__ import annotations

import os
import re
import sys
import threading
from pathlib import Path

from fakeserver import FakeServer, Reply
from mcp_helpers import FAKE, outside_config, write_config
from ptyapp import PtyApp, app_env, openai_args
from test_app import CHAT, start_app

from tether.ui.terminal.activity import Activity, last_line

STATUS = "openai · fake"
"""How the status line (the prompt's toolbar) begins."""


HELD_COMMAND = "echo first-$((40+2)); printf 'half a line, %s' newest; cat go > /dev/null; echo"
"""A line, half of one, then a wait until `go` is opened for writing. The output's words are
not in the command, whose text is on the screen too."""


def held_until_written(project: Path) -> Path:
    """The fifo HELD_COMMAND waits on: opening it for writing lets the command go on."""
    fifo = project / "go"
    os.mkfifo(fifo)
    return fifo


def activity_rows(screen: str, what: str) -> list[str]:
    return [line for line in screen.splitlines() if what in line]


def test_the_wait_for_the_model_is_a_moving_clock_above_the_status_line(
    server: FakeServer, project: Path, home: Path
) -> None:
    gate = threading.Event()
    server.add(Reply(text="Here it is.", gate=gate), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("hello")
        # The clock moves while the server holds the reply: 1.x seconds shows only after
        # it has drawn 0.x, so the line is redrawn in place, not written once.
        app.wait_for(lambda _: re.search(r"waiting for the model · [1-9]\.\ds", app.screen_text()),
                     what="the clock past one second")
        screen = app.screen_text().splitlines()
        waiting = next(i for i, line in enumerate(screen) if "waiting for the model" in line)
        assert screen[waiting + 1].strip().startswith(STATUS), screen  # the status line stays
        gate.set()
        app.wait_for_text("Here it is.")
        app.wait_for_prompt()
        after = app.text_since_line()
    # Erased in place: the scrollback holds the answer and the footer, no activity line.
    assert "waiting for the model" not in after
    assert after.splitlines()[1] == "Here it is."


def test_a_streaming_reply_shows_its_rate_and_the_region_leaves_no_trace(
    server: FakeServer, project: Path, home: Path
) -> None:
    words = [f"word{i}" for i in range(120)]
    server.add(Reply(text=" ".join(words), chunk_size=6, delay=0.03), Reply(text="Fancy Title"))
    with start_app(server, project, home) as app:
        app.line("talk")
        app.wait_for(lambda _: re.search(r"receiving the reply · \d+\.\ds · ~\d+ tok/s",
                                         app.screen_text()), what="the rate while it streams")
        app.wait_for_text("tool call(s)")
        app.wait_for_prompt()
        after = app.text_since_line()
    assert "receiving the reply" not in after and not re.search(r"~\d+ tok/s", after)
    # The reply is in the scrollback once, every word in order.
    reply = after.split("› talk", 1)[1].split("1 request(s)")[0]
    assert reply.split() == words


def test_a_running_command_shows_its_name_clock_and_newest_line(
    server: FakeServer, project: Path, home: Path
) -> None:
    fifo = held_until_written(project)
    server.add(Reply(tool_calls=[("run_cmd", {"command": HELD_COMMAND})]), Reply(text="It ran."),
               Reply(text="Fancy Title"))
    with start_app(server, project, home, "--auto", "--sandbox", "off") as app:
        app.line("run it")
        app.wait_for(lambda _: activity_rows(app.screen_text(), "half a line, newest"),
                     what="the command's newest line on the activity line")
        row = activity_rows(app.screen_text(), "half a line, newest")[0]
        assert re.search(r"run_cmd · \d+\.\ds · half a line, newest$", row.strip()), row
        with fifo.open("w"):
            pass  # the command goes on
        app.wait_for_text("It ran.")
        app.wait_for_prompt()
        after = app.text_since_line()
    assert "run_cmd · " not in after  # the activity line is gone
    lines = after.splitlines()
    # The output in the scrollback once, the part line completed, and one duration.
    assert sum("first-42" in line for line in lines) == 1
    assert sum("half a line, newest" in line for line in lines) == 1
    outcome = next(line for line in lines if "✓ exit 0" in line)
    assert len(re.findall(r"\d+\.\ds", outcome)) == 1, outcome


def test_model_and_command_text_on_the_activity_line_is_escaped() -> None:
    now = [100.0]
    activity = Activity(clock=lambda: now[0])
    activity.begin("c1", "run_cmd")
    activity.detail("c1", last_line("one\nprogress 10%\rprogress 90%\x1b[2J\n"))
    now[0] += 2.5
    (line,) = activity.lines()
    assert line.endswith("run_cmd · 2.5s · progress 90%\x1b[2J")
    # What reaches the terminal is drawn by `shown`, as everything from the model is.
    from rich.console import Console

    from tether.ui.terminal.activity import one_row

    console = Console(width=200, force_terminal=True, color_system=None)
    with console.capture() as captured:
        console.print(one_row(line, "status"))
    assert "\\x1b[2J" in captured.get() and "\x1b[2J" not in captured.get()


def test_off_a_terminal_the_region_draws_nothing(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from tether.core.messages import CommandStatus, Evidence, ToolCall
    from tether.ui.terminal.terminal_ui import TerminalUI

    buf = io.StringIO()
    ui = TerminalUI(Console(file=buf, width=100))
    ui.waiting()
    call = ToolCall("c", "run_cmd", {"command": "make"})
    ui.tool_start(call)
    ui.command_output("building\n")
    ui.tool_end(Evidence(call, 0, 0.1, "exit 0 · 0.1s", "building\n[exit code 0]",
                         command=CommandStatus("exited", 0, 0.1)))
    ui.text("All built.")
    ui.settle()
    assert not ui.region.drawing
    assert [line.rstrip() for line in buf.getvalue().splitlines()] == ["→ run_cmd make", "building", "  ✓ exit 0 · 0.1s", "All built."]


def test_a_running_agent_has_its_live_line_with_its_commands_newest_line_under_it(
    server: FakeServer, project: Path, home: Path
) -> None:
    fifo = held_until_written(project)
    server.add(Reply(tool_calls=[("spawn_agent", {"task": "build the docs"})]),
               Reply(tool_calls=[("run_cmd", {"command": HELD_COMMAND})]),  # the agent's (one at a time)
               Reply(text="REPORT: built."), Reply(text="The agent built it."), Reply(text="Fancy Title"))
    with start_app(server, project, home, "--auto", "--sandbox", "off") as app:
        app.line("delegate it")
        app.wait_for(lambda _: activity_rows(app.screen_text(), "└ half a line, newest"),
                     what="the agent's command output under its line")
        screen = [line.strip() for line in app.screen_text().splitlines()]
        under = next(i for i, line in enumerate(screen) if line == "└ half a line, newest")
        assert re.search(r"agent general \[a[0-9a-f]{8}\]: build the docs · \d+\.\ds · call 1 · run_cmd$",
                         screen[under - 1]), screen
        with fifo.open("w"):
            pass  # the command goes on
        app.wait_for_text("The agent built it.")
        app.wait_for_prompt()
        after = app.text_since_line()
    # The agent's output never joins the conversation's scrollback; its summary line does.
    assert "first-42" not in after and "half a line" not in after
    assert re.search(r"agent general \[a[0-9a-f]{8}\] completed: 2 steps", after), after


def test_a_request_waiting_for_an_mcp_server_to_start_shows_it_with_a_clock(
    server: FakeServer, project: Path, home: Path, tmp_path: Path
) -> None:
    # The server starts only once its fifo is opened for writing: the request typed before
    # that waits for it (mcp_startup_wait), and says so instead of sitting silent.
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    slow = {"command": "sh", "args": ["-c", f'cat "{fifo}" > /dev/null; exec "$0" "$@"',
                                      sys.executable, str(FAKE), "ok"]}
    config = write_config(outside_config(tmp_path), {"slowpoke": slow})
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("mcp_startup_wait = 120\n")
    server.add(Reply(text="Started and answered."), Reply(text="Fancy Title"))
    args = openai_args(server.url, "--mcp-config", str(config))
    with PtyApp(args, cwd=project, env=app_env(home)) as app:
        app.wait_for(lambda _: app.at_prompt(), what="the first prompt (still starting)")
        app.line("hello")
        app.wait_for(lambda _: re.search(r"starting MCP servers: slowpoke · [1-9]\.\ds",
                                         app.screen_text()), what="the MCP start's clock")
        assert not server.bodies(CHAT), "the request waited for the server"
        with open(fifo, "w"):
            pass
        app.wait_for_text("Started and answered.")
        app.wait_for_prompt()
        after = app.text_since_line()
    assert "starting MCP servers" not in after  # erased in place
