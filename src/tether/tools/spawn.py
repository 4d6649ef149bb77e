"""spawn_agent and spawn_agents: hand a self-contained job to a sub-agent, get its report back.

They have side effects (a sub-agent may run anything the rules let it), so starting one asks
for approval as run_cmd does, unless an allow rule names the tool. Each job of spawn_agents
is judged as a spawn_agent call too (`Tool.batch_of`): a rule for spawn_agent holds for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from ..core.agent_runs import AgentRun, AgentSpec
from ..core.toolspec import CURRENT_CALL, Tool, ToolContext, ToolError, ToolOutput
from ..store.agent_defs import AgentDefinition
from .limits import params_named

if TYPE_CHECKING:
    from .params import SpawnAgentArgs, SpawnAgentsArgs

SPAWN_AGENT = "spawn_agent"
SPAWN_AGENTS = "spawn_agents"
AGENT_TIMEOUT = 24 * 3600.0
"""The dispatcher's timeout for these tools: each agent's own wall-time cap is what stops it."""


class AgentRunner(Protocol):
    """What the tools need of the engine's sub-agent runner (`engine/subagents.SubagentRunner`)."""

    @property
    def definitions(self) -> Mapping[str, AgentDefinition]: ...

    async def run_one(self, spec: AgentSpec, parent_call: str = "") -> AgentRun: ...

    async def run_many(self, specs: Sequence[AgentSpec], parent_call: str = "") -> list[AgentRun]: ...


def parent_call_id() -> str:
    """The id of the spawn call being run (the dispatcher's CURRENT_CALL)."""
    call = CURRENT_CALL.get()
    return call.id if call is not None else ""


def described_run(run: AgentRun) -> str:
    saved = f" Transcript: subagent {run.id}." if run.transcript else ""
    body = run.report.strip() or "(no report)"
    return f"{run.headline()}.{saved}\nReport:\n{body}"


def spawn_tools(runner: AgentRunner) -> list[Tool]:
    """The two tools, their descriptions naming the agent definitions there are."""

    async def spawn_one(args: SpawnAgentArgs, ctx: ToolContext) -> ToolOutput:
        spec = AgentSpec(args.task, args.context, args.agent, args.model)
        run = await runner.run_one(spec, parent_call_id())
        if run.state != "completed":
            raise ToolError(described_run(run))
        return ToolOutput(described_run(run), summary=run.headline())

    async def spawn_many(args: SpawnAgentsArgs, ctx: ToolContext) -> ToolOutput:
        specs = [AgentSpec(j.task, j.context, j.agent) for j in args.agents]
        runs = await runner.run_many(specs, parent_call_id())
        text = "\n\n".join(f"## {i}. {described_run(run)}" for i, run in enumerate(runs, 1))
        states = ", ".join(run.state for run in runs)
        return ToolOutput(text, summary=f"{len(runs)} agents: {states}")

    offered = definitions_text(runner)
    return [
        Tool(SPAWN_AGENT, (
            "Hand a self-contained job (a wide search, a survey of many files) to a sub-agent "
            "with a fresh context and the same tools and permissions; only its report comes "
            "back. Give it everything it needs in task and context." + offered
        ), params_named("SpawnAgentArgs"), spawn_one, main_arg="task", timeout=AGENT_TIMEOUT),
        Tool(SPAWN_AGENTS, (
            "Run several independent sub-agent jobs at once; returns each agent's state "
            "(completed, failed, cancelled, rejected) and report, in the order given." + offered
        ), params_named("SpawnAgentsArgs"), spawn_many, timeout=AGENT_TIMEOUT,
            batch_of=(SPAWN_AGENT, "agents")),  # rules for spawn_agent judge each job
    ]


def definitions_text(runner: AgentRunner) -> str:
    names: Sequence[str] = sorted(runner.definitions)
    if not names:
        return ""
    lines = [f"{n}: {runner.definitions[n].description}" for n in names]
    return " Agents (the agent argument): " + "; ".join(lines) + "."
