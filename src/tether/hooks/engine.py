"""The configured hooks at work: the dispatcher's ToolHooks, the loop's TurnHooks, and the
session and compaction events.

Hooks of one event run one after another in the fixed order they were configured (the
user's files first, then the project's): a hook that blocks stops the rest, and a PreToolUse
hook's `updatedInput` is what the next hook sees. What a hook tells the user goes through
`notice`; a hook that cannot start is an error there, not a block (unless it is strict).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.messages import ToolCall
from ..core.toolspec import Tool
from ..core.ui_protocol import NoticeLevel
from ..engine.dispatch import Screening
from ..engine.turn_end import PromptScreening
from .config import HookSet, HookSpec
from .replies import HookReply, read_reply
from .runner import HookRunner

Notice = Callable[[str, NoticeLevel], None]


@dataclass
class EventOutcome:
    """What the hooks of one event decided together."""

    block: str = ""
    context: list[str] = field(default_factory=list)
    tool_input: dict[str, Any] | None = None


class Hooks:
    """Runs the hooks of a HookSet for each event, in order, through one HookRunner."""

    def __init__(self, hooks: HookSet, runner: HookRunner, notice: Notice) -> None:
        self.set = hooks
        self.runner = runner
        self.notice = notice
        self.session_id = uuid.uuid4().hex
        self.pending_context: list[str] = []
        """SessionStart context, sent with the next request."""

    @property
    def root(self) -> Path:
        return self.runner.root

    def __bool__(self) -> bool:
        return bool(self.set.hooks)

    # ------------------------------------------------------------ the dispatcher's seam

    async def screen(self, call: ToolCall, tool: Tool) -> Screening:
        payload = {"tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.id}
        outcome = await self._run("PreToolUse", payload, call.name, rewrites=True)
        if outcome.block:
            self.notice(f"A PreToolUse hook blocked {call.name}: {outcome.block}", "warning")
            return Screening(refusal=outcome.block)
        return Screening(arguments=outcome.tool_input)

    async def after_result(self, call: ToolCall, tool: Tool, result: str, is_error: bool) -> str:
        payload = {"tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.id,
                   "tool_response": {"content": result, "is_error": is_error}}
        outcome = await self._run("PostToolUse", payload, call.name)
        notes = [f"[PostToolUse hook: {outcome.block}]"] if outcome.block else []
        notes += [f"[PostToolUse hook context]\n{text}" for text in outcome.context]
        return "".join("\n" + note for note in notes)

    # ------------------------------------------------------------ the loop's seam

    async def prompt_submitted(self, text: str) -> PromptScreening:
        outcome = await self._run("UserPromptSubmit", {"prompt": text})
        context = [*self.pending_context, *outcome.context]
        if outcome.block:
            return PromptScreening(refusal=outcome.block)
        self.pending_context = []
        return PromptScreening(context="\n\n".join(context))

    async def stopping(self, answer: str, again: bool) -> str:
        payload = {"stop_hook_active": again, "last_assistant_message": answer}
        return (await self._run("Stop", payload)).block

    # ------------------------------------------------------------ the other events

    async def session_started(self, source: str, session_id: str = "") -> None:
        """SessionStart (`startup`, `resume`, `clear`): its context goes with the next request."""
        self.session_id = session_id or self.session_id
        outcome = await self._run("SessionStart", {"source": source})
        self.pending_context.extend(outcome.context)

    async def before_compact(self, trigger: str) -> None:
        """PreCompact (`manual` for /compact, `auto` when a request would overflow)."""
        await self._run("PreCompact", {"trigger": trigger, "custom_instructions": ""})

    # ------------------------------------------------------------ running

    async def _run(self, event: str, fields: dict[str, Any], tool_name: str = "",
                   rewrites: bool = False) -> EventOutcome:
        outcome = EventOutcome()
        for spec in self.set.for_event(event, tool_name):
            payload = {**self._common(event), **fields}
            if rewrites and outcome.tool_input is not None:
                payload["tool_input"] = outcome.tool_input
            reply = await self._one(spec, payload)
            if reply.block:
                outcome.block = reply.block
                return outcome
            if reply.context:
                outcome.context.append(reply.context)
            if rewrites and reply.updated_input is not None:
                outcome.tool_input = reply.updated_input
        return outcome

    async def _one(self, spec: HookSpec, payload: dict[str, Any]) -> HookReply:
        reply = read_reply(spec, await self.runner.run(spec.command, payload, spec.timeout))
        if reply.message:
            self.notice(reply.message, reply.level)
        return reply

    def _common(self, event: str) -> dict[str, Any]:
        return {"session_id": self.session_id, "hook_event_name": event, "cwd": str(self.root),
                "transcript_path": ""}
