"""The headless contract: what `tether -p --output-format json|stream-json` promises a script.

Every object carries `schema_version`; stream-json opens with `init` and ends with `result`;
the result says what the run changed (`files_changed`, `commits`) and what it refused
(`permission_denials`), its sub-agents' work included. `ui/schema/` holds a JSON Schema for each object, and the tests
validate real output against them: a change to a shape is a change to its schema, and one
that can break a reader (a field removed or retyped) raises SCHEMA_VERSION.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.agent_runs import AgentRun
from ..core.messages import Evidence
from ..store.git_ops import AiCommit, GitOps

SCHEMA_VERSION = 1
SCHEMA_DIR = Path(__file__).with_name("schema")
EVENT_TYPES = (
    "init", "text", "thinking", "tool_start", "tool_end", "notice",
    "agent_tool_start", "agent_tool_end", "agent_notice", "agent_output", "agent_end", "checks",
    "request", "result",
)
"""Every `type` a stream-json line can have; each has `schema/<type>.json`."""

COMMITS_LISTED = 200
REFUSED = "blocked"
"""The summary the dispatcher gives a call its gates refused (a rule, nobody to approve)."""


def schema_file(kind: str) -> Path:
    """The JSON Schema of one object type."""
    return SCHEMA_DIR / f"{kind}.json"


class RunRecord:
    """What a one-shot run did, gathered from its tool calls as they end, for the result."""

    def __init__(self) -> None:
        self.evidence: list[Evidence] = []
        self.git: GitOps | None = None
        self.start: str | None = None
        """The head before the run: the commits on top of it are the run's."""
        self.agents: Sequence[AgentRun] = ()
        """The session's sub-agents (the runner's list, which grows as they run): what they
        changed and what was refused them count in the result."""

    def watch(self, git: GitOps) -> None:
        """Note where the history stands, so the commits the run makes can be listed."""
        self.git = git
        self.start = git.head() if git.enabled else None

    def saw(self, evidence: Evidence) -> None:
        self.evidence.append(evidence)

    def fields(self) -> dict[str, Any]:
        return {
            "files_changed": self.files_changed(),
            "commits": [commit_dict(c) for c in self.commits()],
            "permission_denials": self.denials(),
        }

    def calls(self) -> list[tuple[Evidence, AgentRun | None]]:
        """Every call of the run, the sub-agents' (with their agent) among the main
        conversation's, in the order they started."""
        calls: list[tuple[Evidence, AgentRun | None]] = [(e, None) for e in self.evidence]
        calls += [(e, run) for run in self.agents for e in run.evidence]
        return sorted(calls, key=lambda pair: pair[0].started)

    def denials(self) -> list[dict[str, Any]]:
        """The refused calls (a sub-agent's naming it), then the jobs the rules refused."""
        refused = [denial_dict(e, run) for e, run in self.calls() if e.summary == REFUSED]
        return refused + [job_denial(run) for run in self.agents if run.denied is not None]

    def files_changed(self) -> list[str]:
        """The files the run's file tools changed (a sub-agent's too), once each, in the
        order first changed, relative to the project root when inside it."""
        root = str(self.git.root) if self.git is not None else ""
        seen: dict[str, None] = {}
        for evidence, _ in self.calls():
            for path in evidence.changed_paths:
                seen.setdefault(relative_to(path, root), None)
        return list(seen)

    def commits(self) -> list[AiCommit]:
        if self.git is None or not self.git.enabled:
            return []
        return self.git.recent(COMMITS_LISTED, stop_at=self.start)[::-1]  # oldest first


def relative_to(path: str, root: str) -> str:
    if root and (path == root or path.startswith(root.rstrip(os.sep) + os.sep)):
        return os.path.relpath(path, root)
    return path


def commit_dict(commit: AiCommit) -> dict[str, Any]:
    return {"sha": commit.sha, "tool": commit.tool, "paths": commit.paths, "message": commit.message}


def denial_dict(evidence: Evidence, agent: AgentRun | None = None) -> dict[str, Any]:
    """A refused call: which one, whose (a sub-agent's), and what the model was told."""
    call = evidence.call
    denial = {"id": call.id, "name": call.name, "arguments": call.arguments,
              "reason": " ".join(evidence.result.split())}
    return {**denial, **agent_fields(agent)} if agent is not None else denial


def job_denial(run: AgentRun) -> dict[str, Any]:
    """A spawn_agents job the permission rules refused: its spawn call and the job."""
    return {"id": run.parent_call, "name": "spawn_agent", "arguments": run.denied or {},
            "reason": run.reason, **agent_fields(run)}


def agent_fields(run: AgentRun) -> dict[str, str]:
    return {"agent": run.id, "agent_name": run.name}
