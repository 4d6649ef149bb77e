"""Sub-agents: a self-contained job in a fresh conversation; only its report comes back.

A sub-agent is a `Conversation` of its own on a `TurnLoop` of its own, built from the parent
loop's parts: the same provider, the same dispatcher (so the same permission rules, approval
policy and undo hooks) over a table without the tools that would reach the user or recurse.
Its UI is an `AgentUI`, which reports through the parent UI's notices with the agent's name
and asks approval questions that say which agent asks. Budgets (steps, tokens, wall time)
stop it, each followed by one bounded tool-free request for its report; its full transcript
is saved under TETHER_HOME/subagents/<id>.json. Its commands' live output reaches the parent
UI as its own events (`routed_output`), never as the parent's.

Sub-agents, in detail:

`runtime.attach_subagents` builds a `subagents.SubagentRunner` on the main `TurnLoop` and adds
`tools/spawn.py`'s two tools to the table (they are not in `profile.CORE_TOOLS`, so the small
profile defers them behind `tool_search`). `SubagentRunner.run_one` makes, per agent, a fresh
`Conversation` and a `TurnLoop` of its own: the parent's provider wrapped in `BudgetedProvider`
(refuses a request once the agent's or the turn's `TokenBudget` is spent: a `ProviderError`, so
the turn ends `error` with a valid history), the parent's `Dispatcher` copied with
`dataclasses.replace` onto `agent_table` (the parent's tools without `NOT_FOR_AGENTS`, narrowed
by a definition's `tools`) and an `AgentUI` (so the same policy, plan gate, undo hooks and
approval lock: one question at a time across agents), the parent's mode, `max_steps` from the
settings or the definition (the loop's own step cap asks for the report), the parent's
model-facing levers (`stop_at_call`, `terse_history`, `max_reply_tokens`) and a fresh
`Compressor`. `agent_menu` gives it the parent's kind of `ToolMenu` (the small profile's core
tools plus those a definition names, or MCP tools deferred) over its own table, with a
`tool_search` bound to that menu, so what it loads stays its own; its text-mode prompt lists the menu's offered tools. The
wall-time cap is an `asyncio.wait_for` around `run_turn`, whose cancellation path records a
result for every started call. A spent token budget (`BudgetedProvider.refused`, the
agent's or the turn's) or wall-time cap leads to `_report_after_budget`: the provider lets one
more request through (`refusing = False`; its tokens still count), `max_reply_tokens` is
capped at `AgentBudget.report_tokens`, and `loop.closing_reply` (one tool-free request on
the history as it stands, with `BUDGET_NOTE`) runs under `asyncio.wait_for(report_seconds)`;
its reply is the report (`completed`, `stopped_by` the budget), a failure or timeout makes the
run `failed` with the reason.

Before a run starts, `SubagentRunner.admission` (set by `runtime.attach_subagents` to
`approval.denial` of a `spawn_agent` call with the job's arguments) may reject it: a
deny rule for `spawn_agent` holds for each job of `spawn_agents`. At the gate, `spawn_agents`
declares `Tool.batch_of = ("spawn_agent", "agents")`, and `ApprovalPolicy.check` ends with
`approval.batch_verdict`: each item is judged as a call of the item tool (`batch_items`); all denied
refuses the call, the call's own allow (a `spawn_agents` rule, `--auto`) or items each allowed
or denied runs it without asking, anything else keeps the call's own verdict (ask).

Command output is routed by who runs the command: `runtime.build_runtime` hands the shell
`subagents.routed_output(options.on_output)`, and `ShellSessions._wait_for` installs the
viewer through `shell_session.in_callers_context`, so it runs in the context of the call
waiting for the output (the pipe's callbacks keep the context the session was opened in,
perhaps by another call). `CURRENT_AGENT` (set around an agent's turn) sends an agent's
output to `AgentUI.command_output`, an `agent_output` event with the call's id
(`dispatch.CURRENT_CALL`); everything else goes to the terminal's `command_output` as before.
The terminal shows it as the agent job's `output` line (`activity.Job.output`, drawn under
the job's line and cleared when the job's detail changes). `AgentUI` drops text (the report is the result),
sends tool starts and ends, notices and its end to the parent UI as agent events when that UI
implements `ui_protocol.AgentEvents` (the `TerminalUI`: a line per running agent in the
activity region, a summary line at its end; the `HeadlessUI`: stream-json lines carrying
`parent_call`, the spawn call's id, which the handler reads from `dispatch.CURRENT_CALL`, a
context variable the dispatcher sets around each call), else as notices with the agent's name,
and prefixes approval reasons with the asking agent. `_finish` caps the report, adds the usage to
`SubagentRunner.usage` and (through `TurnLoop.count_usage`) to the running parent turn's usage,
saves the transcript (`TETHER_HOME/subagents/<id>.json`, 0600), and `AgentUI.ended` tells the
parent UI one summary line; `runs` keeps every `AgentRun` (`Runtime.rebuilt`, through
`runtime.carry_session`, hands the runs and their usage to the new runner, `keep_records_of`:
they are the session's). The one-shot
`contract.RunRecord` reads `runs` (`agents`): `calls` merges their evidence with the main
conversation's by start time, so `files_changed` and `permission_denials` (a sub-agent's
with `agent`, `agent_name`; a rule-rejected job from `AgentRun.denied`) include them. `TurnLoop.on_turn` starts
the per-turn budget again. `run_many` gathers the runs under a semaphore of
`subagent_concurrency`, so results come in the order asked and a Ctrl-C cancels them all.
`store/agent_defs.load_definitions` reads the definitions (project ones only when trusted).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import secrets
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.agent_runs import AgentRun, AgentSpec, StoppedBy
from ..core.conversation import Conversation
from ..core.messages import Done, Event, Evidence, Message, ToolCall, Usage
from ..core.textclip import keep_ends
from ..core.toolspec import CURRENT_CALL, Tool, ToolTable
from ..core.ui_protocol import UI, AgentEvents, Decision, NoticeLevel
from ..host import atomic_write_json
from ..providers.base import Provider, ProviderError, RequestOptions
from ..store.agent_defs import AgentDefinition
from .loop import ContextGuard, TurnLoop, TurnSettings, closing_reply
from .toolmenu import ToolMenu, tool_search_tool

NOT_FOR_AGENTS = frozenset({
    "get_user_input",  # nobody answers a sub-agent: it works from its task
    "submit_plan_for_approval",
    "submit_plan",
    "spawn_agent",  # no recursion
    "spawn_agents",
    "tool_search",  # bound to the parent's menu; a sub-agent is offered its whole table
})

AGENT_PROMPT = """

## You are a sub-agent
Another assistant gave you one self-contained job. Nobody will answer questions: work
from the task and the context below, with the tools. When done, answer with your report:
what you found or did, concretely (paths, line numbers, commands and their outcomes), and
what is left undone. The report is all the other assistant will see of your work.
"""

BUDGET_NOTE = (
    "Your budget is spent ({why}): tools are disabled now. Answer with your report from what "
    "you have found so far, and say what is left undone."
)


@dataclass(frozen=True)
class AgentBudget:
    """What one agent may spend; 0 means no cap for tokens and seconds."""

    max_steps: int = 12
    max_tokens: int = 0
    max_seconds: float = 0.0
    report_cap: int = 4000
    turn_tokens: int = 0
    """Tokens all agents of one parent turn may spend together (0: no cap)."""
    report_tokens: int = 1024
    """The most tokens the report request after a spent budget may reply with."""
    report_seconds: float = 60.0
    """The most seconds that request may take: a spent budget cannot run away."""


class TokenBudget:
    """Tokens spent against a cap, shared by whoever holds it (0: no cap)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.spent = 0

    @property
    def exhausted(self) -> bool:
        return self.cap > 0 and self.spent >= self.cap


class BudgetedProvider:
    """The parent's provider, refusing a request once an agent's token budget is spent."""

    def __init__(self, inner: Provider, budgets: Sequence[TokenBudget]) -> None:
        self.inner = inner
        self.budgets = budgets
        self.name = inner.name
        self.default_model = inner.default_model
        self.refusing = True
        """False for the one bounded report request after a spent budget."""
        self.refused = ""
        """Why it refused a request ("" when it never did)."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> AsyncGenerator[Event, None]:
        for budget in self.budgets:
            if budget.exhausted and self.refusing:
                self.refused = f"token budget spent ({budget.spent} of {budget.cap})"
                raise ProviderError(self.refused, "api")
        inner = self.inner.stream(messages, tools, options)
        async with aclosing(inner):  # a reply stopped early closes the parent's stream too
            async for event in inner:
                if isinstance(event, Done):
                    for budget in self.budgets:
                        budget.spent += event.usage.input_tokens + event.usage.output_tokens
                yield event

    async def list_models(self) -> list[str]:
        return await self.inner.list_models()

    async def supports_native_tools(self, model: str) -> bool:
        return await self.inner.supports_native_tools(model)

    async def context_window(self, model: str) -> int | None:
        return await self.inner.context_window(model)

    async def continues_replies(self, model: str) -> bool:
        return await self.inner.continues_replies(model)

    async def aclose(self) -> None:
        """The parent owns the connection: an agent's end does not close it."""


class AgentUI:
    """A sub-agent's UI: nothing goes into the parent's reply stream. Its tool calls, notices
    and end reach the parent UI as agent events (stream-json) or as notices with the agent's
    name; approval questions say which agent asks."""

    def __init__(self, parent: UI, run: AgentRun) -> None:
        self.parent = parent
        self.run = run

    @property
    def can_ask(self) -> bool:
        return self.parent.can_ask

    def text(self, delta: str) -> None:
        pass  # the report comes back as the tool result

    def thinking(self, delta: str) -> None:
        pass

    def tool_start(self, call: ToolCall) -> None:
        self.run.latest_tool = call.name
        self.run.calls += 1
        data = {"id": call.id, "name": call.name, "arguments": call.arguments,
                "task": self.run.task, "calls": self.run.calls}
        self.tell("tool_start", data, f"{call.name} (call {self.run.calls})")

    def tool_end(self, evidence: Evidence) -> None:
        failed = f"{evidence.call.name}: {evidence.summary}" if evidence.error else ""
        self.tell("tool_end", {"id": evidence.call.id, **evidence.as_dict()}, failed, "warning")

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        asks = f"sub-agent {self.run.name} [{self.run.id}] asks"
        return await self.parent.approve(call, f"{asks}: {reason}" if reason else asks)

    def notice(self, message: str, level: NoticeLevel = "info") -> None:
        self.tell("notice", {"level": level, "message": message}, message, level)

    def command_output(self, text: str) -> None:
        """Live output of a command this agent runs: an agent event (a UI without them shows
        the call's result when it ends)."""
        call = CURRENT_CALL.get()
        self.tell("output", {"id": call.id if call is not None else "", "text": text}, "")

    def ended(self) -> None:
        run = self.run
        data = {k: v for k, v in run.as_dict().items() if k not in ("id", "name", "parent_call")}
        self.tell("end", data, run.headline(), "info" if run.state == "completed" else "warning",
                  named=False)

    def tell(self, kind: str, data: dict[str, Any], notice: str, level: NoticeLevel = "info",
             *, named: bool = True) -> None:
        """An agent event for a UI that has them, else a notice (none when `notice` is empty)."""
        if isinstance(self.parent, AgentEvents):
            run = self.run
            self.parent.agent_event({"type": f"agent_{kind}", "agent": run.id, "agent_name": run.name,
                                     "parent_call": run.parent_call, **data})
        elif notice:
            self.parent.notice(f"[agent {self.run.name}] {notice}" if named else notice, level)


CURRENT_AGENT: contextvars.ContextVar[AgentUI | None] = contextvars.ContextVar(
    "tether_agent", default=None
)
"""The sub-agent whose work is running (set around its turn): its commands' output is its own."""


def routed_output(sink: Callable[[str], None] | None) -> Callable[[str], None]:
    """Command output as it appears: a sub-agent's to its UI as agent events, the rest to
    `sink` (the terminal's live output; None drops it). The shell runs the callback in the
    context of the call that waits for the output, so CURRENT_AGENT tells whose it is."""

    def route(text: str) -> None:
        agent = CURRENT_AGENT.get()
        if agent is not None:
            agent.command_output(text)
        elif sink is not None:
            sink(text)

    return route


@dataclass
class SubagentRunner:
    """Starts sub-agents from the parent loop's parts and remembers them for the session."""

    parent: TurnLoop
    home: Path
    system_prompt: Callable[[ToolTable, str], str]
    """(table, mode) -> the base system prompt for an agent's tools."""
    context: Callable[[ToolTable], str] = lambda table: ""
    """table -> the project context that opens an agent's task (see prompts.py)."""
    budget: AgentBudget = field(default_factory=AgentBudget)
    concurrency: int = 2
    definitions: dict[str, AgentDefinition] = field(default_factory=dict)
    make_guard: Callable[[str], ContextGuard | None] = lambda model: None
    prepare_table: Callable[[ToolTable], None] = lambda table: None
    """Gives an agent's table the tools that must be its own (a use_skill loading into it)."""
    runs: list[AgentRun] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    """Every agent's usage, for the session's count."""
    max_batch: int = 8
    admission: Callable[[AgentSpec], str] = lambda spec: ""
    """Why the permission rules refuse a job, as a spawn_agent call ("" when they let it run):
    a rule for spawn_agent holds for each job of spawn_agents."""
    _turn: TokenBudget = field(default_factory=lambda: TokenBudget(0))

    def keep_records_of(self, previous: SubagentRunner) -> None:
        """The session's agents stay listed (and counted) across a runtime rebuild."""
        self.runs = previous.runs
        self.usage = previous.usage

    def new_turn(self) -> None:
        """A parent turn starts: the per-turn token total starts again."""
        self._turn = TokenBudget(self.budget.turn_tokens)

    async def run_many(self, specs: Sequence[AgentSpec], parent_call: str = "") -> list[AgentRun]:
        """Every spec's run, in the order given; at most `concurrency` at once."""
        gate = asyncio.Semaphore(max(1, self.concurrency))

        async def one(index: int, spec: AgentSpec) -> AgentRun:
            if index >= self.max_batch:
                return self._rejected(spec, parent_call, f"at most {self.max_batch} agents per call")
            async with gate:
                return await self.run_one(spec, parent_call)

        return list(await asyncio.gather(*(one(i, s) for i, s in enumerate(specs))))

    async def run_one(self, spec: AgentSpec, parent_call: str = "") -> AgentRun:
        definition = self.definitions.get(spec.agent) if spec.agent else None
        if spec.agent and definition is None:
            known = ", ".join(sorted(self.definitions)) or "none are defined"
            return self._rejected(spec, parent_call, f"no agent named {spec.agent!r} ({known})")
        denied = self.admission(spec)
        if denied:
            run = self._rejected(spec, parent_call, f"refused by the permission rules: {denied}")
            run.denied = spec.arguments()
            return run
        if self._turn.exhausted:
            return self._rejected(spec, parent_call, "this turn's token budget for agents is spent")
        run = AgentRun(new_agent_id(), spec.agent or "general", spec.task, parent_call)
        self.runs.append(run)
        conv = Conversation()
        ui = AgentUI(self.parent.ui, run)
        loop = self._loop_for(ui, spec, definition)
        working = CURRENT_AGENT.set(ui)
        try:
            await self._drive(loop, conv, run, spec)
        except asyncio.CancelledError:
            run.state, run.reason = "cancelled", "stopped by the user"
            raise
        finally:
            CURRENT_AGENT.reset(working)
            self._finish(run, conv)
            ui.ended()
        return run

    async def _drive(self, loop: TurnLoop, conv: Conversation, run: AgentRun, spec: AgentSpec) -> None:
        seconds = self.budget.max_seconds
        work = loop.run_turn(conv, task_message(spec))
        try:
            result = await (asyncio.wait_for(work, seconds) if seconds > 0 else work)
        except asyncio.TimeoutError:
            await self._report_after_budget(loop, conv, run, "time", f"wall-time cap of {seconds:g}s reached")
            return
        provider = loop.provider
        if result.stop_reason == "error" and isinstance(provider, BudgetedProvider) and provider.refused:
            await self._report_after_budget(loop, conv, run, "tokens", provider.refused)
            return
        run.report = result.text
        if result.stop_reason == "error":
            run.state, run.reason = "failed", result.error or "the model request failed"
        else:
            run.state = "completed"
            if result.stop_reason == "max_steps":
                run.stopped_by = "steps"
                run.reason = f"step cap of {loop.settings.max_steps} reached; reported what it had"

    async def _report_after_budget(self, loop: TurnLoop, conv: Conversation, run: AgentRun,
                                   budget: StoppedBy, why: str) -> None:
        """A spent token or time budget, as the step cap does: one request without tools for the
        report from what it has, bounded in reply tokens and in time; failed if that fails."""
        if isinstance(loop.provider, BudgetedProvider):
            loop.provider.refusing = False  # this one request; its tokens still count
        caps = [c for c in (loop.settings.max_reply_tokens, self.budget.report_tokens) if c]
        loop.settings.max_reply_tokens = min(caps) if caps else None
        limit = self.budget.report_seconds
        request = closing_reply(loop, conv, BUDGET_NOTE.format(why=why))
        try:
            result = await (asyncio.wait_for(request, limit) if limit > 0 else request)
        except asyncio.TimeoutError:
            failure = f"no report within {limit:g}s"
        else:
            failure = (result.error or "the request failed") if result.stop_reason == "error" else ""
            if not failure:
                run.state, run.stopped_by, run.report = "completed", budget, result.text
                run.reason = f"{why}; reported what it had"
                return
        run.state, run.report = "failed", last_text(conv)
        run.reason = f"{why}; the request for its report failed: {failure}"

    def _loop_for(self, ui: AgentUI, spec: AgentSpec, definition: AgentDefinition | None) -> TurnLoop:
        parent = self.parent
        table = agent_table(parent.table, definition.tools if definition else None)
        self.prepare_table(table)
        dispatcher = dataclasses.replace(parent.dispatcher, table=table, ui=ui)
        model = spec.model or (definition.model if definition else "") or parent.settings.model
        steps = (definition.max_steps if definition and definition.max_steps else 0) or self.budget.max_steps
        settings = TurnSettings(
            model=model, max_steps=steps, soft_pressure_after=max(1, steps - 2),
            temperature=parent.settings.temperature,
            answer_checks=False,  # the report is checked as the parent's answer uses it
            # the profile's levers that suit the model, not the user: as the parent has them
            stop_at_call=parent.settings.stop_at_call, terse_history=parent.settings.terse_history,
            max_reply_tokens=parent.settings.max_reply_tokens,
        )
        budgets = [TokenBudget(self.budget.max_tokens), self._turn]
        instructions = definition.instructions if definition else ""
        menu = agent_menu(parent.menu, table, (definition.tools or ()) if definition else ())

        def offered() -> ToolTable:
            return menu.offered_table() if menu is not None else table

        return TurnLoop(
            provider=BudgetedProvider(parent.provider, budgets),
            table=table, dispatcher=dispatcher, ui=ui, settings=settings,
            system_prompt=lambda mode: self.system_prompt(offered(), mode) + AGENT_PROMPT,
            context=lambda: agent_context(self.context(offered()), instructions),
            mode=parent.mode, guard=self.make_guard(model), menu=menu,
        )

    def _finish(self, run: AgentRun, conv: Conversation) -> None:
        run.steps = conv.requests
        run.evidence = list(conv.evidence)
        run.usage = conv.usage
        run.elapsed = time.time() - run.started
        run.report = cap_report(run.report, self.budget.report_cap)
        self.usage = self.usage + conv.usage
        self.parent.count_usage(conv.usage)  # the session's usage and the json result
        run.transcript = self._save(run, conv)

    def _save(self, run: AgentRun, conv: Conversation) -> Path | None:
        path = self.home / "subagents" / f"{run.id}.json"
        record = {
            "id": run.id, "name": run.name, "task": run.task, "state": run.state,
            "reason": run.reason, "parent_call": run.parent_call, "steps": run.steps,
            "usage": run.usage.as_dict(), "report": run.report,
            "messages": [m.to_dict() for m in conv.messages],
        }
        try:
            atomic_write_json(path, record, secret=True)
        except OSError as exc:
            self.parent.ui.notice(f"could not save agent {run.id}'s transcript: {exc}", "warning")
            return None
        return path

    def _rejected(self, spec: AgentSpec, parent_call: str, reason: str) -> AgentRun:
        run = AgentRun(new_agent_id(), spec.agent or "general", spec.task, parent_call,
                       state="rejected", reason=reason)
        self.runs.append(run)
        return run


def agent_table(parent: ToolTable, only: Sequence[str] | None) -> ToolTable:
    """The parent's tools without those a sub-agent must not have; `only` narrows further."""
    wanted = set(only) if only else None
    return ToolTable(
        t for t in parent if t.name not in NOT_FOR_AGENTS and (wanted is None or t.name in wanted)
    )


def agent_menu(parent: ToolMenu | None, table: ToolTable, named: Sequence[str] = ()) -> ToolMenu | None:
    """The parent's kind of menu over the agent's table (the small profile's short menu, or
    MCP tools deferred), with a tool_search of its own; None when the parent offers everything.
    The tools a definition names are on its menu from the start: it chose them."""
    if parent is None or not parent.deferring:
        return None
    core = None if parent.core is None else sorted(parent.core | set(named))
    menu = ToolMenu(table, core, parent.defer)
    if menu.deferred():
        table.add(tool_search_tool(menu))
    return menu


def agent_context(context: str, instructions: str) -> str:
    """The project context and the agent definition's own instructions, which differ by
    project too: after the menu, like the rest of what differs."""
    if not instructions.strip():
        return context
    return f"{context}\n\n## Your instructions\n{instructions.strip()}".strip()


def task_message(spec: AgentSpec) -> str:
    if not spec.context.strip():
        return spec.task
    return f"{spec.task}\n\nContext from the assistant that started you:\n{spec.context}"


def last_text(conv: Conversation) -> str:
    """The latest assistant text, for an agent stopped before it reported."""
    for message in reversed(conv.messages):
        if message.role == "assistant" and message.text.strip():
            return message.text
    return ""


def cap_report(report: str, cap: int) -> str:
    if cap <= 0 or len(report) <= cap:
        return report
    head = cap * 2 // 3
    return keep_ends(report, head, cap - head)


def new_agent_id() -> str:
    return "a" + secrets.token_hex(4)
