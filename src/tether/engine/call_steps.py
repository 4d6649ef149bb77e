"""The turn's own steps inside the dispatch pipeline (dispatch.CallSteps).

The tool menu's refusals, the coach's ask-once reasons to wait, the reuse of an identical
read made earlier in the turn, and the notes on a result: each happens inside
`Dispatcher.dispatch`, so the PreToolUse hooks see a refused call, every call leaves one
dispatch record, and the PostToolUse hooks read the result with its notes. Each finished
call is recorded in the turn's record, which the coach reads as snapshots.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..core.messages import Evidence, ToolCall
from ..core.toolspec import ToolContext, ToolTable
from .toolmenu import ToolMenu
from .turn_assist import TurnCoach
from .turn_record import TurnRecord


def call_key(call: ToolCall) -> str:
    return call.name + "\0" + json.dumps(call.arguments, sort_keys=True, default=str)


@dataclass
class TurnSteps:
    """One turn's steps: what it refuses, what it answers from earlier reads, what it notes."""

    table: ToolTable
    ctx: ToolContext
    earlier: list[Evidence]
    """The turn's evidence so far (the loop appends each call's)."""
    menu: ToolMenu | None = None
    record: TurnRecord | None = None
    """What the turn has done (None: nothing reads it)."""
    coach: TurnCoach | None = None
    """The rules on the turn's evidence (None: none)."""
    read_cache: dict[str, str] = field(default_factory=dict)
    """call key -> the result text of a read-only call that worked this turn."""

    def refusal(self, call: ToolCall) -> str | None:
        refusal = self.menu.refusal(call.name) if self.menu is not None else None
        if refusal is None and self.record is not None and self.coach is not None:
            refusal = self.coach.call_reason(call, call_key(call), self.record.snapshot())
        return refusal

    def reused(self, call: ToolCall) -> str | None:
        if not self._read_only(call):
            return None
        earlier = self.read_cache.get(call_key(call))
        if earlier is None:
            return None
        repeated = self.coach.repeated_read() if self.coach is not None else ""
        return repeated or earlier

    def finished(self, call: ToolCall, text: str, evidence: Evidence, ran: bool) -> str:
        read_only = self._read_only(call)
        if ran and read_only and not evidence.error:
            self.read_cache[call_key(evidence.call)] = text
        elif ran and not read_only:
            self.read_cache.clear()  # something may have changed what reads would see
        if self.record is None:
            return ""
        key = call_key(call)
        note = self.coach.result_note(key, evidence, self.record.snapshot()) if self.coach else ""
        self.record.saw(key, evidence, not read_only)
        return note

    def _read_only(self, call: ToolCall) -> bool:
        tool = self.table.get(call.name)
        return tool is not None and tool.read_only
