"""The turn's own steps inside the dispatch pipeline (dispatch.CallSteps).

The tool menu's and the call guards' refusals, the reuse of an identical read made earlier in
the turn, and the notes a small model gets on a result: each happens inside
`Dispatcher.dispatch`, so the PreToolUse hooks see a refused call, every call leaves one
dispatch record, and the PostToolUse hooks read the result with its notes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .call_guard import guard_call
from .messages import Evidence, ToolCall
from .nudges import REPEATED_CALL
from .toolmenu import ToolMenu
from .toolspec import ToolContext, ToolTable
from .turn_watch import TurnWatch


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
    watch: TurnWatch | None = None
    """What the turn has done, for the nudges; None when they are off."""
    nudges: bool = False
    """The call guards hold calls back and a repeated read gets REPEATED_CALL."""
    read_cache: dict[str, str] = field(default_factory=dict)
    """call key -> the result text of a read-only call that worked this turn."""

    def refusal(self, call: ToolCall) -> str | None:
        refusal = self.menu.refusal(call.name) if self.menu is not None else None
        if refusal is None and self.watch is not None and self.nudges:
            refusal = guard_call(self.watch, call, self.ctx, call_key(call))
        return refusal

    def reused(self, call: ToolCall) -> str | None:
        if not self._read_only(call):
            return None
        earlier = self.read_cache.get(call_key(call))
        if earlier is None:
            return None
        return REPEATED_CALL if self.watch is not None and self.nudges else earlier

    def finished(self, call: ToolCall, text: str, evidence: Evidence, ran: bool) -> str:
        read_only = self._read_only(call)
        if ran and read_only and not evidence.error:
            self.read_cache[call_key(evidence.call)] = text
        elif ran and not read_only:
            self.read_cache.clear()  # something may have changed what reads would see
        if self.watch is None:
            return ""
        note = self.watch.repeat_note(call_key(call), evidence)
        self.watch.saw(call_key(call), evidence, not read_only)
        return note

    def _read_only(self, call: ToolCall) -> bool:
        tool = self.table.get(call.name)
        return tool is not None and tool.read_only
