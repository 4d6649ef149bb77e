"""MCP protocol details: streamable HTTP's GET stream, resumption with Last-Event-ID and
session expiry (against our own HTTP server, which can break a stream on demand), and what
a server may ask of tether: roots answered with the project root, sampling and elicitation
refused (against server-everything and our stdio fault server)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mcp_helpers import call, everything_entry, fake_entry, runtime_with, start, state_of
from mcp_http_server import McpHttpServer

from tether.mcp.http import StreamableHttpTransport

WAIT = 60
"""Seconds a wait may take before the test calls it a hang."""


def http_runtime(tmp_path: Path, server: McpHttpServer):  # type: ignore[no-untyped-def]
    return runtime_with(tmp_path, {"web": {"type": "http", "url": server.url}}, auto=True)


def transport_of(manager) -> StreamableHttpTransport:  # type: ignore[no-untyped-def]
    transport = manager.servers["web"].session.transport
    assert isinstance(transport, StreamableHttpTransport)
    return transport


# ---------------------------------------------------------------- the answer stream


async def test_a_broken_answer_stream_is_resumed_with_last_event_id(tmp_path: Path, started: list) -> None:
    with McpHttpServer(tool_stream="drop") as server:
        manager = await start(http_runtime(tmp_path, server), started)
        assert await call(started[0], "mcp__web__echo", text="hi") == ("echo: hi", False)
        resumed = [h for h, _ in server.requests_of("GET") if "last-event-id" in h]
        assert [(h["last-event-id"], h["mcp-session-id"]) for h in resumed] == [("e1", "s1")]
        assert state_of(manager, "web")["state"] == "ready"


async def test_a_stream_that_ends_without_its_answer_is_an_error_result_not_a_hang(
    tmp_path: Path, started: list
) -> None:
    with McpHttpServer(tool_stream="end") as server:
        manager = await start(http_runtime(tmp_path, server), started)
        text, is_error = await asyncio.wait_for(call(started[0], "mcp__web__echo", text="hi"), WAIT)
        assert is_error and "ended before the answer" in text and "no event id" in text
        assert state_of(manager, "web")["state"] == "ready", "one lost answer is not a dead server"


# ---------------------------------------------------------------- the server's own stream (GET)


async def test_list_changed_pushed_on_the_get_stream_refreshes_the_tools(tmp_path: Path, started: list) -> None:
    with McpHttpServer() as server:
        runtime = http_runtime(tmp_path, server)
        manager = await start(runtime, started)
        await asyncio.wait_for(transport_of(manager).listening.wait(), WAIT)
        refreshed = asyncio.Event()
        manager.on_change = lambda: (runtime.set_menu(), refreshed.set())
        server.add_tool_and_announce()
        await asyncio.wait_for(refreshed.wait(), WAIT)
        assert "mcp__web__pushed" in runtime.table
        listens = [h for h, _ in server.requests_of("GET") if "last-event-id" not in h]
        assert listens[0]["accept"] == "text/event-stream" and listens[0]["mcp-session-id"] == "s1"


async def test_a_server_without_a_get_stream_answers_405_and_that_is_fine(tmp_path: Path, started: list) -> None:
    with McpHttpServer(get_stream=False) as server:
        manager = await start(http_runtime(tmp_path, server), started)
        transport = transport_of(manager)
        assert transport.listener is not None
        await asyncio.wait_for(transport.listener, WAIT)  # it gives up at once on a 405
        assert len(server.requests_of("GET")) == 1, "asked once, not again and again"
        assert transport.last_error == "" and state_of(manager, "web")["error"] == ""
        assert await call(started[0], "mcp__web__echo", text="still") == ("echo: still", False)


# ---------------------------------------------------------------- session expiry


async def test_an_expired_session_is_started_again_and_the_call_sent_again(
    tmp_path: Path, started: list
) -> None:
    with McpHttpServer() as server:
        manager = await start(http_runtime(tmp_path, server), started)
        assert await call(started[0], "mcp__web__echo", text="one") == ("echo: one", False)
        server.expire()
        assert await call(started[0], "mcp__web__echo", text="two") == ("echo: two", False)
        assert server.initialized == 2 and transport_of(manager).session_id == "s2"
        calls = [(h.get("mcp-session-id"), b["params"]["arguments"]["text"])
                 for h, b in server.requests_of("POST") if b.get("method") == "tools/call"]
        assert calls == [("s1", "one"), ("s1", "two"), ("s2", "two")]
        initialize = [h for h, b in server.requests_of("POST") if b.get("method") == "initialize"]
        assert "mcp-session-id" not in initialize[1], "a new session starts without the old id"
        assert state_of(manager, "web")["state"] == "ready"


# ---------------------------------------------------------------- what a server may ask


async def test_server_everything_is_given_the_project_root(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"everything": everything_entry()}, auto=True)
    await start(runtime, started)
    text, is_error = await call(runtime, "mcp__everything__get-roots-list")
    assert not is_error and tmp_path.as_uri() in text, text


async def test_roots_false_keeps_the_project_root_from_a_server(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"everything": {**everything_entry(), "roots": False}}, auto=True)
    await start(runtime, started)
    assert "mcp__everything__echo" in runtime.table
    assert "mcp__everything__get-roots-list" not in runtime.table, "no roots capability declared"


async def test_sampling_and_elicitation_are_refused_and_roots_answered(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"fake": fake_entry("ask")}, auto=True)
    await start(runtime, started)

    async def ask(method: str) -> dict:
        text, is_error = await call(runtime, "mcp__fake__ask_client", method=method)
        assert not is_error, text
        return json.loads(text)

    for method in ("sampling/createMessage", "elicitation/create"):
        answer = await ask(method)
        assert answer["error"]["code"] == -32601 and method in answer["error"]["message"]
        assert "result" not in answer
    assert (await ask("roots/list"))["result"] == {
        "roots": [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]}
    assert (await ask("ping"))["result"] == {}


# A server that has closed its input and exits only when told: the write fails while it
# still runs, so the reason must wait for its exit rather than blame a pipe.
CLOSES_ITS_INPUT = """
import json, os, signal, sys
os.close(0)
sys.stderr.write("fake: cannot start, no config\\n"); sys.stderr.flush()
print(json.dumps({"jsonrpc": "2.0", "method": "notifications/closed"}), flush=True)
signal.sigwait({signal.SIGUSR1})
sys.exit(2)
"""


async def test_a_server_exiting_as_we_write_is_reported_by_its_exit_and_last_words(
    tmp_path: Path,
) -> None:
    import os
    import signal
    import sys

    from tether.mcp.session import McpError
    from tether.mcp.stdio import StdioTransport

    transport = StdioTransport(sys.executable, ("-c", "import signal; signal.pthread_sigmask("
                               "signal.SIG_BLOCK, {signal.SIGUSR1})\n" + CLOSES_ITS_INPUT),
                               {**os.environ}, tmp_path)
    input_closed = asyncio.Event()
    await transport.open(lambda message: input_closed.set(), lambda reason: None)
    try:
        await input_closed.wait()
        sending = asyncio.ensure_future(transport.send({"jsonrpc": "2.0", "id": 1,
                                                        "method": "ping"}))
        await asyncio.sleep(0)  # the write has failed; the server still runs
        assert transport.process is not None and transport.process.returncode is None
        os.kill(transport.process.pid, signal.SIGUSR1)
        try:
            await sending
        except McpError as exc:
            reason = str(exc)
        else:
            raise AssertionError("a write to a closed input succeeded")
        assert "exited (code 2)" in reason and "no config" in reason
    finally:
        await transport.aclose()
