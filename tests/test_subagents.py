"""Sub-agents: a fresh conversation on the same machinery; only the report comes back."""

from __future__ import annotations

import asyncio
import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from rich.console import Console
from scripted import ScriptedProvider, call, say
from waiting import until

from tether.core.messages import Evidence, Message, ToolCall
from tether.core.profile import SMALL
from tether.core.toolspec import Tool
from tether.core.ui_protocol import Decision
from tether.engine.loop import STEP_LIMIT_NOTE, Conversation
from tether.providers.base import ProviderError
from tether.runtime import RunOptions, build_runtime, subagent_concurrency
from tether.store.agent_defs import load_definitions, parse_definition
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI
from tether.ui.terminal.terminal_ui import TerminalUI

SUB_MARK = "## You are a sub-agent"


class RecordingUI:
    """Says yes or no to approvals as told and keeps every notice and question."""

    can_ask = True

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.questions: list[tuple[str, str]] = []
        self.notices: list[str] = []
        self.texts: list[str] = []

    def text(self, delta: str) -> None:
        self.texts.append(delta)

    def thinking(self, delta: str) -> None:
        pass

    def tool_start(self, call: ToolCall) -> None:
        pass

    def tool_end(self, evidence: Evidence) -> None:
        pass

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.questions.append((call.name, reason))
        return Decision(self.answer, "" if self.answer else "no")

    def notice(self, message: str, level: str = "info") -> None:
        self.notices.append(message)


def is_sub(request: Any) -> bool:
    return SUB_MARK in request.messages[0].text


def routed(parent: list[Any], sub: list[Any]):
    """One reply function that tells the parent's requests from the agents' by the system prompt."""

    def reply(request: Any) -> Any:
        queue = sub if is_sub(request) else parent
        if not queue:
            raise AssertionError("no scripted reply left for " + ("an agent" if is_sub(request) else "the parent"))
        item = queue.pop(0)
        return item(request) if callable(item) else item

    return reply


def make_runtime(tmp_path: Path, ui: RecordingUI, replies: Any, *, allow=("spawn_agent", "spawn_agents"),
                 deny=(), trusted=False, on_output=None, **settings: Any):
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    home = tmp_path / "home"
    given = {"provider": "openai", "model": "big-model", "openai_base_url": "http://127.0.0.1:9/v1",
             "profile": "full", "protocol": "native", **settings}
    loaded, _ = load_settings(given, {}, home)
    options = RunOptions(root=root, home=home, allow=list(allow), deny=list(deny), trusted=trusted,
                         on_output=on_output)
    runtime = build_runtime(loaded, options, ui, {})
    provider = ScriptedProvider([replies], repeat_last=True)
    runtime.provider = provider
    runtime.loop.provider = provider
    runtime.git.enabled = False
    return runtime, root, provider


def parent_requests(provider: ScriptedProvider) -> list[Any]:
    return [r for r in provider.requests if not is_sub(r)]


def sub_requests(provider: ScriptedProvider) -> list[Any]:
    return [r for r in provider.requests if is_sub(r)]


def all_text(messages: list[Message]) -> str:
    return json.dumps([m.to_dict() for m in messages])


def answered(messages: list[Message]) -> bool:
    """Every call has its result in the next message, and no result lacks its call."""
    for i, message in enumerate(messages):
        calls = {c.id for c in message.tool_calls}
        if calls:
            following = messages[i + 1] if i + 1 < len(messages) else None
            got = {r.call_id for r in following.tool_results} if following else set()
            if calls != got:
                return False
    return True


def transcript(runtime: Any, run_id: str) -> dict[str, Any]:
    return json.loads((runtime.home / "subagents" / f"{run_id}.json").read_text())


async def test_only_the_report_crosses_back(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "find every place the session file is written"})),
              say("The agent found it.")]
    sub = [call(("read_file", {"filepath": "a.py"}), ("read_file", {"filepath": "b.py"})),
           say("REPORT: written in a.py line 1 only.")]
    runtime, root, provider = make_runtime(tmp_path, ui, routed(parent, sub))
    (root / "a.py").write_text("SECRET-BODY-A = save_session()\n")
    (root / "b.py").write_text("SECRET-BODY-B = 2\n")
    conv = Conversation()
    result = await runtime.loop.run_turn(conv, "where is the session file written?")
    assert result.text == "The agent found it."
    assert result.usage.input_tokens == 40 and conv.usage.input_tokens == 40  # 2 parent + 2 agent requests
    last = all_text(parent_requests(provider)[-1].messages)
    assert "REPORT: written in a.py line 1 only." in last
    assert "SECRET-BODY" not in last
    assert "SECRET-BODY" in all_text(sub_requests(provider)[-1].messages)
    run = runtime.subagents.runs[0]
    assert run.state == "completed" and f"subagent {run.id}" in last
    saved = transcript(runtime, run.id)
    assert "SECRET-BODY-A" in json.dumps(saved["messages"]) and saved["state"] == "completed"
    # the sub-agent's own tool table: no user questions, no recursion
    offered = {t.name for t in sub_requests(provider)[0].tools}
    assert "read_file" in offered and not offered & {"get_user_input", "spawn_agent", "spawn_agents"}
    assert not any("REPORT" in t for t in ui.texts)  # its words never join the parent's stream
    assert any("[agent general] read_file" in n for n in ui.notices)
    assert runtime.subagents.usage.input_tokens == 20


async def test_starting_an_agent_asks_without_an_allow_rule(tmp_path: Path) -> None:
    ui = RecordingUI(answer=False)
    parent = [call(("spawn_agent", {"task": "look around"})), say("ok")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, []), allow=())
    await runtime.loop.run_turn(Conversation(), "go")
    assert [q[0] for q in ui.questions] == ["spawn_agent"]
    assert not sub_requests(provider) and runtime.subagents.runs == []


async def test_deny_rules_and_approval_hold_inside(tmp_path: Path) -> None:
    ui = RecordingUI(answer=False)
    parent = [call(("spawn_agent", {"task": "read the key and write a file"})), say("done")]
    sub = [call(("read_file", {"filepath": "secret.txt"})),
           call(("write_file", {"filepath": "out.txt", "content": "x"})),
           say("could do neither")]
    runtime, root, provider = make_runtime(tmp_path, ui, routed(parent, sub), deny=["read_file(secret.txt)"])
    (root / "secret.txt").write_text("TOP-SECRET")
    await runtime.loop.run_turn(Conversation(), "go")
    assert not (root / "out.txt").exists()
    assert "TOP-SECRET" not in json.dumps(transcript(runtime, runtime.subagents.runs[0].id))
    assert "Blocked by a permission rule" in all_text(sub_requests(provider)[1].messages)
    (name, reason), = ui.questions
    assert name == "write_file" and "sub-agent general" in reason


async def test_the_step_cap_asks_for_a_report(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "list forever"})), say("fine")]
    sub = [call(("list_dir", {"dirpath": "."})), call(("list_dir", {"dirpath": "."})), say("PARTIAL REPORT")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, sub), subagent_max_steps=2)
    await runtime.loop.run_turn(Conversation(), "go")
    final = sub_requests(provider)[-1]
    assert final.tools is None and STEP_LIMIT_NOTE in final.messages[-1].text
    run = runtime.subagents.runs[0]
    assert run.state == "completed" and "step cap of 2" in run.reason and run.report == "PARTIAL REPORT"
    assert "PARTIAL REPORT" in all_text(parent_requests(provider)[-1].messages)


async def test_the_token_cap_stops_an_agent_and_asks_for_its_report(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "spend"})), say("fine")]
    sub = [call(("list_dir", {"dirpath": "."})), call(("list_dir", {"dirpath": "."})),
           say("TOKEN REPORT: listed twice")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, sub), subagent_max_tokens=25)
    await runtime.loop.run_turn(Conversation(), "go")
    run = runtime.subagents.runs[0]
    assert run.state == "completed" and run.stopped_by == "tokens"
    assert "token budget spent (30 of 25)" in run.reason and run.report == "TOKEN REPORT: listed twice"
    # 15 tokens each: the third request is the tool-free, bounded one asking for the report
    report_request = sub_requests(provider)[2]
    assert len(sub_requests(provider)) == 3 and report_request.tools is None
    assert "Your budget is spent (token budget spent" in report_request.messages[-1].text
    assert report_request.options.max_tokens == 1024
    assert "TOKEN REPORT" in all_text(parent_requests(provider)[-1].messages)
    saved = [Message.from_dict(m) for m in transcript(runtime, run.id)["messages"]]
    assert answered(saved) and saved[-1].text == "TOKEN REPORT: listed twice"


async def test_a_failed_report_request_after_a_spent_budget_fails_the_agent(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "spend"})), say("fine")]
    sub = [call(("list_dir", {"dirpath": "."})), call(("list_dir", {"dirpath": "."})),
           [ProviderError("the model is gone", "api")]]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, sub), subagent_max_tokens=25)
    await runtime.loop.run_turn(Conversation(), "go")
    run = runtime.subagents.runs[0]
    assert run.state == "failed" and run.stopped_by == ""
    assert "token budget spent" in run.reason and "the request for its report failed: the model is gone" in run.reason
    assert "failed" in all_text(parent_requests(provider)[-1].messages)


class Never(BaseModel):
    label: str = ""


def hanging_tool(started: list[str], release: asyncio.Event) -> Tool:
    async def wait(args: Never, ctx: Any) -> str:
        started.append(args.label)
        await release.wait()
        return "released"

    return Tool("wait_here", "Waits.", Never, wait, reads=True)


async def test_the_wall_time_cap_stops_an_agent_and_asks_for_its_report(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "wait"})), say("fine")]
    sub = [call(("wait_here", {})), say("TIME REPORT: it never came back")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, sub), subagent_max_seconds=0.05)
    runtime.table.add(hanging_tool([], asyncio.Event()))
    await runtime.loop.run_turn(Conversation(), "go")
    run = runtime.subagents.runs[0]
    assert run.state == "completed" and run.stopped_by == "time" and "wall-time cap" in run.reason
    assert run.report == "TIME REPORT: it never came back"
    assert sub_requests(provider)[-1].tools is None
    assert "TIME REPORT" in all_text(parent_requests(provider)[-1].messages)
    assert answered([Message.from_dict(m) for m in transcript(runtime, run.id)["messages"]])


class HoldsAgentReportRequests:
    """The scripted model, except that an agent's tool-free request never gets a reply."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def stream(self, messages: Any, tools: Any, options: Any) -> Any:
        if tools is None and SUB_MARK in messages[0].text:
            await asyncio.Event().wait()  # cancelled by the bound on the report request
        async for event in self.inner.stream(messages, tools, options):
            yield event


async def test_the_report_request_after_a_spent_budget_is_bounded_in_time(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "wait"})), say("fine")]
    sub = [call(("wait_here", {}))]
    runtime, _, _ = make_runtime(tmp_path, ui, routed(parent, sub), subagent_max_seconds=0.05)
    runtime.loop.provider = HoldsAgentReportRequests(runtime.loop.provider)
    runtime.subagents.budget = replace(runtime.subagents.budget, report_seconds=0.05)
    runtime.table.add(hanging_tool([], asyncio.Event()))
    await runtime.loop.run_turn(Conversation(), "go")
    run = runtime.subagents.runs[0]
    assert run.state == "failed" and "wall-time cap" in run.reason
    assert "the request for its report failed: no report within 0.05s" in run.reason
    assert answered([Message.from_dict(m) for m in transcript(runtime, run.id)["messages"]])


async def test_parallel_agents_return_in_order_with_their_states(tmp_path: Path) -> None:
    ui = RecordingUI()

    def by_task(request: Any) -> Any:
        task = request.messages[1].text
        if "one" in task:
            return say("REPORT ONE")
        return [ProviderError("the model is gone", "api")]

    jobs = [{"task": "job one"}, {"task": "job two"}, {"task": "job three", "agent": "nobody"}]
    parent = [call(("spawn_agents", {"agents": jobs})), say("fine")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, [by_task, by_task]))
    await runtime.loop.run_turn(Conversation(), "go")
    assert [r.state for r in runtime.subagents.runs if r.task != "job three"] == ["completed", "failed"]
    text = all_text(parent_requests(provider)[-1].messages)
    first, second, third = (text.index(f"## {i}. ") for i in (1, 2, 3))
    assert first < second < third
    assert "REPORT ONE" in text[first:second] and "failed" in text[second:third]
    assert "rejected" in text[third:] and "no agent named 'nobody'" in text[third:]


async def test_cancelling_stops_every_agent_with_valid_histories(tmp_path: Path) -> None:
    ui = RecordingUI()
    jobs = [{"task": "one"}, {"task": "two"}]
    parent = [call(("spawn_agents", {"agents": jobs}))]
    sub = [call(("wait_here", {"label": "a"})), call(("wait_here", {"label": "b"}))]
    runtime, _, _ = make_runtime(tmp_path, ui, routed(parent, sub), subagent_concurrency=2)
    started: list[str] = []
    runtime.table.add(hanging_tool(started, asyncio.Event()))
    conv = Conversation()
    turn = asyncio.create_task(runtime.loop.run_turn(conv, "go"))
    await until(lambda: len(started) == 2, "both agents inside their tool call")
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert answered(conv.messages)
    runs = runtime.subagents.runs
    assert [r.state for r in runs] == ["cancelled", "cancelled"]
    for run in runs:
        assert answered([Message.from_dict(m) for m in transcript(runtime, run.id)["messages"]])


def test_concurrency_is_one_for_a_local_server(tmp_path: Path) -> None:
    local, _ = load_settings({"provider": "ollama"}, {}, tmp_path)
    hosted, _ = load_settings({"provider": "openai"}, {}, tmp_path)
    chosen, _ = load_settings({"provider": "ollama", "subagent_concurrency": 3}, {}, tmp_path)
    assert [subagent_concurrency(s) for s in (local, hosted, chosen)] == [1, 2, 3]


def test_the_small_profile_defers_spawn_agent(tmp_path: Path) -> None:
    runtime, _, _ = make_runtime(tmp_path, RecordingUI(), say("x"))
    runtime.apply_profile(SMALL)
    offered = {t.name for t in runtime.loop.offered()}
    assert "spawn_agent" in runtime.table and "spawn_agent" not in offered and "tool_search" in offered


DEFINITION = """---
name: finder
description: finds where things are written
tools: read_file, search_in_file
max_steps: 3
---
Search with search_in_file first. FINDER-INSTRUCTIONS
"""


def test_definitions_come_from_a_trusted_project_only(tmp_path: Path) -> None:
    root, home = tmp_path / "p", tmp_path / "h"
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "finder.md").write_text(DEFINITION)
    (home / "agents").mkdir(parents=True)
    (home / "agents" / "broken.md").write_text("no frontmatter")
    untrusted, warnings = load_definitions(root, home, trusted=False)
    assert untrusted == {} and "no frontmatter" in warnings[0]
    trusted, _ = load_definitions(root, home, trusted=True)
    assert trusted["finder"].tools == ("read_file", "search_in_file") and trusted["finder"].max_steps == 3
    with pytest.raises(ValueError, match="max_steps"):
        parse_definition(DEFINITION.replace("max_steps: 3", "max_steps: many"), root / "x.md")


async def test_a_defined_agent_gets_its_instructions_tools_and_steps(tmp_path: Path) -> None:
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "find", "agent": "finder"})), say("fine")]
    sub = [say("FOUND")]
    root = tmp_path / "project"
    (root / ".tether" / "agents").mkdir(parents=True)
    (root / ".tether" / "agents" / "finder.md").write_text(DEFINITION)
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, sub), trusted=True)
    assert "finder: finds where things are written" in runtime.table.get("spawn_agent").description
    await runtime.loop.run_turn(Conversation(), "go")
    request = sub_requests(provider)[0]
    assert {t.name for t in request.tools} == {"read_file", "search_in_file"}
    assert "FINDER-INSTRUCTIONS" in request.messages[1].text
    assert runtime.subagents.runs[0].name == "finder"


async def test_the_turn_token_cap_rejects_later_agents(tmp_path: Path) -> None:
    ui = RecordingUI()
    jobs = [{"task": "first"}, {"task": "second"}]
    parent = [call(("spawn_agents", {"agents": jobs})), say("fine")]
    sub = [say("FIRST REPORT")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, sub), subagent_turn_tokens=15,
                                        subagent_concurrency=1)
    await runtime.loop.run_turn(Conversation(), "go")
    assert [r.state for r in runtime.subagents.runs] == ["completed", "rejected"]
    assert "token budget for agents is spent" in runtime.subagents.runs[1].reason
    assert len(sub_requests(provider)) == 1
    # the next request starts a new budget
    parent += [call(("spawn_agent", {"task": "third"})), say("fine")]
    sub.append(say("THIRD REPORT"))
    await runtime.loop.run_turn(Conversation(), "again")
    assert runtime.subagents.runs[-1].state == "completed"


async def test_stream_json_carries_agent_events_with_the_parent_call_id(tmp_path: Path) -> None:
    out = io.StringIO()
    ui = HeadlessUI("stream-json", out=out, err=io.StringIO())
    parent = [call(("spawn_agent", {"task": "look"})), say("fine")]
    sub = [call(("list_dir", {"dirpath": "."})), say("AGENT SAYS THIS")]
    runtime, _, _ = make_runtime(tmp_path, ui, routed(parent, sub))  # type: ignore[arg-type]
    await runtime.loop.run_turn(Conversation(), "go")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    spawn = next(e for e in lines if e["type"] == "tool_start" and e["name"] == "spawn_agent")
    agent = [e for e in lines if e["type"].startswith("agent_")]
    assert [e["type"] for e in agent] == ["agent_tool_start", "agent_tool_end", "agent_end"]
    assert {e["parent_call"] for e in agent} == {spawn["id"]}
    assert agent[0]["name"] == "list_dir" and agent[-1]["state"] == "completed"
    # the parent's own events never carry the agent's words
    assert not any(e["type"] == "text" and "AGENT SAYS" in e["text"] for e in lines)


async def test_text_mode_shows_agent_calls_as_progress_lines(tmp_path: Path) -> None:
    err = io.StringIO()
    ui = HeadlessUI("text", out=io.StringIO(), err=err)
    parent = [call(("spawn_agent", {"task": "look"})), say("fine")]
    sub = [call(("list_dir", {"dirpath": "."})), say("done")]
    runtime, _, _ = make_runtime(tmp_path, ui, routed(parent, sub))  # type: ignore[arg-type]
    await runtime.loop.run_turn(Conversation(), "go")
    progress = err.getvalue()
    assert "[agent general] → list_dir" in progress
    assert "[agent general] completed after 2 steps" in progress


async def test_no_more_agents_run_at_once_than_the_setting_allows(tmp_path: Path) -> None:
    ui = RecordingUI()
    jobs = [{"task": "one"}, {"task": "two"}, {"task": "three"}]
    parent = [call(("spawn_agents", {"agents": jobs})), say("fine")]
    sub = [call(("wait_here", {"label": "a"})), call(("wait_here", {"label": "b"})), say("R1"), say("R2"),
           call(("wait_here", {"label": "c"})), say("R3")]
    runtime, _, provider = make_runtime(tmp_path, ui, routed(parent, sub), subagent_concurrency=2)
    started: list[str] = []
    release = asyncio.Event()
    runtime.table.add(hanging_tool(started, release))
    turn = asyncio.create_task(runtime.loop.run_turn(Conversation(), "go"))
    await until(lambda: len(started) == 2, "two agents inside their tool call")
    assert [r.task for r in runtime.subagents.runs] == ["one", "two"]  # the third waits its turn
    release.set()
    await turn
    assert [(r.task, r.state) for r in runtime.subagents.runs[:2]] == [("one", "completed"), ("two", "completed")]
    assert runtime.subagents.runs[2].state == "completed" and sorted(started) == ["a", "b", "c"]
    text = all_text(parent_requests(provider)[-1].messages)
    assert text.index("## 1. agent general") < text.index("## 2. ") < text.index("## 3. ")


async def test_the_chat_shows_a_live_line_per_agent_and_a_summary(tmp_path: Path) -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=150, force_terminal=True, color_system=None)
    ui = TerminalUI(console)
    release = asyncio.Event()
    started: list[str] = []
    parent = [call(("spawn_agent", {"task": "survey the \x1b[2Jmodules"})), say("fine")]
    sub = [call(("wait_here", {"label": "a"})), say("REPORT")]
    runtime, _, _ = make_runtime(tmp_path, RecordingUI(), routed(parent, sub))
    runtime.loop.ui = ui
    runtime.table.add(hanging_tool(started, release))
    turn = asyncio.create_task(runtime.loop.run_turn(Conversation(), "go"))
    await until(lambda: started, "the agent inside its tool call")
    run = runtime.subagents.runs[0]
    line = next(ln for ln in ui.activity.lines() if f"agent general [{run.id}]" in ln)
    assert f"agent general [{run.id}]: survey the \x1b[2Jmodules · " in line
    assert line.endswith("call 1 · wait_here")
    release.set()
    await turn
    assert not any("agent general" in ln for ln in ui.activity.lines())
    shown_text = buf.getvalue()
    assert f"agent general [{run.id}] completed: 2 steps" in shown_text
    assert "\x1b[2J" not in shown_text  # the model's task is shown escaped


async def test_a_sub_agent_gets_the_skill_index_and_its_loaded_scripts_are_its_own(
    tmp_path: Path,
) -> None:
    skill = tmp_path / "project" / "skills" / "count-lines"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: count-lines\ndescription: Counts the lines of "
                                    "a file.\n---\nCall count_lines__count with the file.\n")
    (skill / "scripts" / "count.py").write_text(
        "import sys\nprint(sys.argv[1], len(open(sys.argv[1]).readlines()), 'lines')\n")
    ui = RecordingUI()
    parent = [call(("spawn_agent", {"task": "how long is a.txt?"})), say("done")]
    sub = [call(("use_skill", {"name": "count-lines"})),
           call(("count_lines__count", {"args": ["a.txt"]})), say("REPORT: 3 lines")]
    runtime, root, provider = make_runtime(tmp_path, ui, routed(parent, sub), trusted=True,
                                           sandbox="off")
    (root / "a.txt").write_text("1\n2\n3\n")
    await runtime.loop.run_turn(Conversation(), "go")
    first, loaded, ran = sub_requests(provider)
    assert "- count-lines: Counts the lines of a file." in first.messages[1].text
    assert "count_lines__count" in {t.name for t in loaded.tools}
    assert "a.txt 3 lines" in all_text(ran.messages[-1:])
    # it ran as a command, asked like run_cmd (no allow rule covers it)
    assert ("count_lines__count", ) == tuple(q[0] for q in ui.questions if q[0] != "spawn_agent")
    assert runtime.subagents.runs[0].report == "REPORT: 3 lines"
    assert "count_lines__count" not in runtime.table  # the parent loaded nothing
    assert runtime.skills is not None and runtime.skills.loaded == []
    await runtime.aclose()
