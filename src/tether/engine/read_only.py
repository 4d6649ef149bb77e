"""A turn that may only read: every call with side effects is refused at the choke point.

/deepthink's first stages, /init and /review run an ordinary `run_turn` with this policy in
front of the dispatcher's own, so what the model may do is decided where every call passes,
not by trusting it to follow an instruction.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.conversation import Conversation
from ..core.messages import ToolCall
from ..core.toolspec import Tool
from .dispatch import CallPolicy, GateVerdict
from .loop import TurnLoop, TurnResult


@dataclass
class ReadOnlyPolicy:
    """Only read-only tools pass; the others are refused by `by`, for `reason`."""

    inner: CallPolicy
    reason: str
    by: str

    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        if not tool.read_only:
            return GateVerdict("deny", self.reason, by=self.by)
        return self.inner.check(call, tool)


async def read_only_turn(loop: TurnLoop, conv: Conversation, request: str, *, by: str,
                         reason: str) -> TurnResult:
    """`loop.run_turn(conv, request)` with only reads allowed; the dispatcher's policy is put
    back afterwards, also on cancellation (the next request must not inherit the gate)."""
    dispatcher = loop.dispatcher
    original = dispatcher.policy
    dispatcher.policy = ReadOnlyPolicy(original, reason, by)
    try:
        return await loop.run_turn(conv, request)
    finally:
        dispatcher.policy = original
