"""A sub-agent's job and its run, as the engine that runs it, the tool that asks for it and the
UI that lists it all see them (`engine/subagents.py` runs them)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .messages import Evidence, Usage

AgentState = Literal["completed", "failed", "cancelled", "rejected"]
StoppedBy = Literal["", "steps", "tokens", "time"]


@dataclass(frozen=True)
class AgentSpec:
    task: str
    context: str = ""
    agent: str = ""
    model: str = ""

    def arguments(self) -> dict[str, Any]:
        """As a spawn_agent call's arguments (what the permission rules judge)."""
        given = {"task": self.task, "context": self.context, "agent": self.agent, "model": self.model}
        return {k: v for k, v in given.items() if v or k == "task"}


@dataclass
class AgentRun:
    """One sub-agent of this session: what /agents lists and the result reports."""

    id: str
    name: str
    task: str
    parent_call: str = ""
    state: AgentState | Literal["running"] = "running"
    report: str = ""
    reason: str = ""
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.time)
    elapsed: float = 0.0
    transcript: Path | None = None
    latest_tool: str = ""
    calls: int = 0
    evidence: list[Evidence] = field(default_factory=list)
    """Its tool calls (for /evidence and the json result's files and refusals)."""
    stopped_by: StoppedBy = ""
    """The budget that stopped it before it answered on its own (it then reported)."""
    denied: dict[str, Any] | None = None
    """The spawn_agent arguments the permission rules refused (a rejected job)."""

    def as_dict(self) -> dict[str, Any]:
        """What the json result and the agent_end event say of it (not the report)."""
        return {"id": self.id, "name": self.name, "parent_call": self.parent_call,
                "state": self.state, "reason": self.reason, "steps": self.steps,
                "stopped_by": self.stopped_by,
                "usage": self.usage.as_dict(), "elapsed": round(self.elapsed, 3),
                "transcript": str(self.transcript) if self.transcript else None}

    def headline(self) -> str:
        tokens = self.usage.input_tokens + self.usage.output_tokens
        why = f" ({self.reason})" if self.reason else ""
        return (f"agent {self.name} [{self.id}] {self.state}{why}: {self.steps} steps, "
                f"{tokens} tokens, {self.elapsed:.1f}s")
