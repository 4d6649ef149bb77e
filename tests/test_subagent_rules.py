"""Sub-agents under the session's rules and profile: spawn_agent's rules for each job of
spawn_agents, the small profile's menu, command output tagged with its agent, and the
session's agent records across a runtime rebuild."""

from __future__ import annotations

import asyncio
import io
import json
import os
from pathlib import Path

from rich.console import Console
from scripted import call, say
from test_subagents import (
    RecordingUI,
    all_text,
    make_runtime,
    parent_requests,
    routed,
    sub_requests,
)
from waiting import until

from tether.core.profile import SMALL
from tether.engine.loop import Conversation
from tether.ui.headless import HeadlessUI
from tether.ui.terminal.terminal_ui import TerminalUI

JOBS = [{"task": "survey the docs"}, {"task": "read the forbidden notes"}, {"task": "survey the tests"}]


async def test_an_allow_rule_for_spawn_agent_covers_each_job_of_spawn_agents(tmp_path: Path) -> None:
    ui = RecordingUI(answer=False)  # a question would refuse the call
    parent = [call(("spawn_agents", {"agents": JOBS[::2]})), say("fine")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, [say("R1"), say("R2")]),
                                        allow=["spawn_agent(survey *)"])
    await runtime.loop.run_turn(Conversation(), "go")
    assert ui.questions == []
    assert [(r.task, r.state) for r in runtime.subagents.runs] == [
        ("survey the docs", "completed"), ("survey the tests", "completed")]
    assert len(sub_requests(provider)) == 2


async def test_a_job_the_allow_rule_does_not_cover_makes_spawn_agents_ask(tmp_path: Path) -> None:
    ui = RecordingUI(answer=False)
    parent = [call(("spawn_agents", {"agents": JOBS})), say("fine")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, []), allow=["spawn_agent(survey *)"])
    await runtime.loop.run_turn(Conversation(), "go")
    assert [q[0] for q in ui.questions] == ["spawn_agents"]
    assert runtime.subagents.runs == [] and sub_requests(provider) == []


async def test_a_deny_rule_for_spawn_agent_refuses_that_job_of_spawn_agents(tmp_path: Path) -> None:
    ui = RecordingUI(answer=False)
    parent = [call(("spawn_agents", {"agents": JOBS})), say("fine")]
    runtime, _, provider = make_runtime(
        tmp_path, ui, routed(parent, [say("DOCS REPORT"), say("TESTS REPORT")]),
        allow=["spawn_agent"], deny=["spawn_agent(*forbidden*)"])
    await runtime.loop.run_turn(Conversation(), "go")
    assert ui.questions == []  # the others are allowed, the denied one is refused: nothing to ask
    runs = {r.task: r for r in runtime.subagents.runs}
    assert runs["read the forbidden notes"].state == "rejected"
    assert "refused by the permission rules: denied by rule spawn_agent(*forbidden*)" in runs[
        "read the forbidden notes"].reason
    assert runs["read the forbidden notes"].denied == {"task": "read the forbidden notes"}
    assert [runs[t].state for t in ("survey the docs", "survey the tests")] == ["completed", "completed"]
    assert not any("forbidden" in r.messages[1].text for r in sub_requests(provider))
    text = all_text(parent_requests(provider)[-1].messages)
    assert text.index("DOCS REPORT") < text.index("rejected") < text.index("TESTS REPORT")


async def test_a_deny_rule_covering_every_job_blocks_spawn_agents_whole(tmp_path: Path) -> None:
    ui = RecordingUI(answer=True)
    parent = [call(("spawn_agents", {"agents": JOBS[::2]})), say("fine")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, []), deny=["spawn_agent(survey *)"])
    await runtime.loop.run_turn(Conversation(), "go")
    assert ui.questions == [] and runtime.subagents.runs == []
    text = all_text(parent_requests(provider)[-1].messages)
    assert "Blocked by a permission rule" in text and "spawn_agent(survey *)" in text


async def test_a_deny_rule_holds_for_a_job_even_under_auto(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agents", {"agents": JOBS[:2]})), say("fine")]
    runtime, _, _ = make_runtime(tmp_path, ui, routed(parent, [say("R1")]), allow=(),
                                 deny=["spawn_agent(*forbidden*)"])
    runtime.set_auto(True)
    await runtime.loop.run_turn(Conversation(), "go")
    assert [r.state for r in runtime.subagents.runs] == ["completed", "rejected"]


async def test_an_agent_under_the_small_profile_gets_its_menu_and_tool_search(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("tool_search", {"query": "select:spawn_agent"})),
              call(("spawn_agent", {"task": "look at the changes"})), say("fine")]
    sub = [call(("git_status", {})), call(("tool_search", {"query": "select:git_status"})), say("LOG REPORT")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, sub))
    runtime.apply_profile(SMALL)
    await runtime.loop.run_turn(Conversation(), "go")
    first, second, third = sub_requests(provider)
    offered = {t.name for t in first.tools}
    assert "tool_search" in offered and "read_file" in offered and "git_status" not in offered
    assert not offered & {"spawn_agent", "get_user_input"}
    search = next(t for t in first.tools if t.name == "tool_search")
    assert "git_status" in search.description and "spawn_agent" not in search.description
    assert "git_status is not loaded yet" in all_text(second.messages)  # refused, not run
    assert "git_status" in {t.name for t in third.tools}  # loaded for the rest of its conversation
    assert runtime.subagents.runs[0].report == "LOG REPORT"
    assert "git_status" not in runtime.loop.menu.loaded  # the agent's menu is its own


async def test_a_defined_agents_own_tools_are_on_its_small_menu_from_the_start(tmp_path: Path) -> None:
    agents = tmp_path / "project" / ".tether" / "agents"
    agents.mkdir(parents=True)
    (agents / "differ.md").write_text("---\nname: differ\ndescription: reads changes\n"
                                      "tools: git_status, git_diff, read_file\n---\nLook at the changes.\n")
    parent = [call(("tool_search", {"query": "select:spawn_agent"})),
              call(("spawn_agent", {"task": "what changed?", "agent": "differ"})), say("fine")]
    runtime, _, provider = make_runtime(tmp_path, RecordingUI(), routed(parent, [say("NOTHING")]), trusted=True)
    runtime.apply_profile(SMALL)
    await runtime.loop.run_turn(Conversation(), "go")
    (request,) = sub_requests(provider)
    assert {t.name for t in request.tools} == {"git_status", "git_diff", "read_file"}  # nothing waits


async def test_an_agents_command_output_is_tagged_with_the_agent_in_stream_json(tmp_path: Path) -> None:
    out = io.StringIO()
    ui = HeadlessUI("stream-json", out=out, err=io.StringIO())
    parent = [call(("spawn_agent", {"task": "run it"})), say("fine")]
    sub = [call(("run_cmd", {"command": "echo agent-$((40+2))"})), say("ran")]
    runtime, _, _ = make_runtime(tmp_path, ui, routed(parent, sub), sandbox="off",  # type: ignore[arg-type]
                                 allow=["spawn_agent"])
    runtime.set_auto(True)
    await runtime.loop.run_turn(Conversation(), "go")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    spawn = next(e for e in lines if e["type"] == "tool_start" and e["name"] == "spawn_agent")
    command = next(e for e in lines if e["type"] == "agent_tool_start" and e["name"] == "run_cmd")
    output = [e for e in lines if e["type"] == "agent_output"]
    assert "agent-42" in "".join(e["text"] for e in output)
    run = runtime.subagents.runs[0]
    assert {(e["agent"], e["agent_name"], e["parent_call"], e["id"]) for e in output} == {
        (run.id, "general", spawn["id"], command["id"])}


async def test_the_main_conversations_command_output_still_reaches_the_terminal(tmp_path: Path) -> None:
    seen: list[str] = []
    ui = RecordingUI()
    runtime, _, _ = make_runtime(tmp_path, ui, routed([call(("run_cmd", {"command": "echo main-$((1+1))"})),
                                                       say("done")], []),
                                 sandbox="off", on_output=seen.append)
    runtime.set_auto(True)
    await runtime.loop.run_turn(Conversation(), "go")
    assert "main-2" in "".join(seen)


async def test_the_terminal_shows_an_agents_output_under_its_live_line(tmp_path: Path) -> None:
    console = Console(file=io.StringIO(), width=150, force_terminal=True, color_system=None)
    ui = TerminalUI(console)
    seen: list[str] = []
    fifo = tmp_path / "project" / "go"
    parent = [call(("spawn_agent", {"task": "build it"})), say("fine")]
    sub = [call(("run_cmd", {"command": "echo step-$((2+3)); cat go > /dev/null"})), say("built")]
    runtime, root, _ = make_runtime(tmp_path, RecordingUI(), routed(parent, sub), sandbox="off",
                                    on_output=lambda text: (seen.append(text), ui.command_output(text)))
    runtime.set_auto(True)
    os.mkfifo(fifo)
    runtime.loop.ui = ui
    turn = asyncio.create_task(runtime.loop.run_turn(Conversation(), "go"))
    await until(lambda: any("└ step-5" in ln for ln in ui.activity.lines()), "the agent's output line")
    lines = ui.activity.lines()
    agent_row = next(i for i, ln in enumerate(lines) if "agent general [" in ln)
    assert lines[agent_row].endswith("call 1 · run_cmd") and lines[agent_row + 1] == "  └ step-5"
    assert seen == []  # never the main conversation's live output
    await asyncio.to_thread(fifo.write_text, "")
    await turn
    assert not any("step-5" in ln for ln in ui.activity.lines())


async def test_the_agent_records_outlive_a_runtime_rebuild(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "look"})), say("fine")]
    runtime, _, _ = make_runtime(tmp_path, ui, routed(parent, [say("R")]))
    await runtime.loop.run_turn(Conversation(), "go")
    (run,) = runtime.subagents.runs
    rebuilt = runtime.rebuilt()
    assert rebuilt.subagents is not runtime.subagents
    assert rebuilt.subagents.runs == [run] and rebuilt.subagents.usage == runtime.subagents.usage
    await rebuilt.aclose()

