"""An MCP server's tool at the chat's approval prompt, in a real pseudo-terminal, against a
real server (server-everything over stdio): a yes runs it, a no does not."""

from __future__ import annotations

from pathlib import Path

from fakeserver import FakeServer, Reply
from mcp_helpers import everything_entry, outside_config, write_config
from ptyapp import PtyApp, app_env, openai_args
from test_app import turn_bodies

ECHO = "mcp__everything__echo"


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_an_mcp_call_is_approved_at_the_prompt_and_a_refused_one_does_not_run(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()  # a window wide enough that server-everything's tools are offered, not deferred
    (home / "config.toml").write_text("context_window = 200000\n")
    config = write_config(outside_config(tmp_path), {"everything": everything_entry()})
    script = [Reply(tool_calls=[(ECHO, {"message": "approved"})]), Reply(text="It echoed."),
              Reply(text="Echo Title"),
              Reply(tool_calls=[(ECHO, {"message": "refused"})]), Reply(text="It was refused.")]
    with FakeServer(script) as server, PtyApp(openai_args(server.url, "--mcp-config", str(config)),
                                             cwd=project, env=app_env(home)) as app:
        app.wait_for_text("MCP server 'everything' is ready")
        app.line("echo something")
        shown = " ".join(app.wait_for_cursor_on("Allow?").split())
        assert (f"{ECHO} wants to run (a tool of the MCP server everything, which calls it "
                "read-only) message: approved Allow?") in shown
        app.send("y")
        app.wait_for_text("It echoed.")
        app.wait_for_prompt()
        app.line("echo again")
        app.wait_for_cursor_on("Allow?")
        app.send("n")
        app.wait_for_cursor_on("Why not?")
        app.line("not now")
        app.wait_for_text("It was refused.")
        app.wait_for_prompt()
    bodies = [b for b in turn_bodies(server) if tool_results(b)]
    assert tool_results(bodies[0]) == ["Echo: approved"], "what the server answered reached the model"
    refusal = tool_results(bodies[-1])[-1]
    assert "The user refused this mcp__everything__echo call" in refusal and "not now" in refusal
