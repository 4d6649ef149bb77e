"""What a policy says about a call, or about one value a call names: run it, refuse it, or
ask the user first.

One type for every gate on the path of a call: the permission rules' ruling on a value
(`permissions.RuleSet.decide`, which also says which rule decided), the approval policy's
ruling on the whole call, the plan gate and /deepthink's read-only stages. The user's own
answer to an "ask" is another thing, `ui_protocol.Decision`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from .messages import ToolCall
    from .toolspec import Tool

Action = Literal["allow", "deny", "ask"]


@dataclass(frozen=True)
class GateVerdict:
    action: Action
    reason: str = ""
    by: str = field(default="", kw_only=True)
    """Who refused, for a deny that is no permission rule ("plan mode"): the refusal then
    names it and its reason, and says nothing of rules or of never retrying."""


class CallPolicy(Protocol):
    """Decides, before a call runs, whether it may run, must be refused, or needs asking."""

    def check(self, call: ToolCall, tool: Tool) -> GateVerdict: ...
