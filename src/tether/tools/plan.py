"""Plan mode: nothing changes until the user has approved a plan.

While plan mode is on, `PlanGate` (wrapped around the dispatcher's policy)
refuses every call with side effects until the model has called
`submit_plan_for_approval` and the user said yes. A rejection goes back to the
model with the user's feedback, and the gate stays closed. Approval lasts for
one user request: `new_request()` closes the gate again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from tether.core.messages import ToolCall
from tether.core.toolspec import Tool, ToolContext, ToolError, ToolOutput
from tether.core.verdict import CallPolicy, GateVerdict

from .limits import params_named

if TYPE_CHECKING:
    from .params import SubmitPlanParams

SUBMIT_PLAN = "submit_plan_for_approval"

ApprovePlan = Callable[[str], Awaitable[tuple[bool, str]]]
"""Shows the plan to the user; returns (approved, feedback)."""

PLAN_FIRST_REASON = (
    "nothing may change before the user approves a plan. Call "
    f"{SUBMIT_PLAN} with your plan first; once it is approved this call may run"
)
APPROVED = "Plan approved: go ahead."
NOT_IN_PLAN_MODE = "Plan mode is off: no approval is needed. Go ahead."
NOBODY_TO_APPROVE = (
    "Nobody can approve plans in this mode (no one is there to answer), so plan mode keeps "
    "every change blocked. Do not submit the plan again: give the plan in your answer and stop."
)


class PlanGate:
    """A CallPolicy wrapper: while active and unapproved, only read-only calls pass."""

    def __init__(self, inner: CallPolicy) -> None:
        self.inner = inner
        self.active = False
        self.approved = False

    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        if tool.name == SUBMIT_PLAN:
            # Asking the user is the whole point of this tool; no other policy need ask first.
            return GateVerdict("allow")
        if self.active and not self.approved and not tool.read_only:
            return GateVerdict("deny", PLAN_FIRST_REASON, by="plan mode")
        return self.inner.check(call, tool)

    def new_request(self) -> None:
        """A new user request needs a new plan."""
        self.approved = False


def set_plan_mode(gate: PlanGate, argument: str) -> str:
    """`/planmode on|off` (no argument: show the state); returns the message for the user."""
    word = argument.strip().lower()
    if word in ("on", "off"):
        gate.active = word == "on"
        gate.approved = False
    elif word:
        return f"Unknown /planmode argument {argument.strip()!r}: use /planmode on or /planmode off."
    if gate.active:
        return "Plan mode is on: the assistant must get a plan approved before changing anything."
    return "Plan mode is off."


def plan_tools(gate: PlanGate, approve_plan: ApprovePlan | None) -> list[Tool]:
    """The submit_plan_for_approval tool; `approve_plan` None means nobody can approve."""

    async def submit_plan(args: SubmitPlanParams, ctx: ToolContext) -> ToolOutput:
        if not gate.active:
            return ToolOutput(NOT_IN_PLAN_MODE, summary="plan mode is off")
        if approve_plan is None:
            raise ToolError(NOBODY_TO_APPROVE)
        if not args.plan.strip():
            raise ToolError("The plan is empty: write what you will change, then submit it.")
        approved, feedback = await approve_plan(args.plan)
        if approved:
            gate.approved = True
            return ToolOutput(APPROVED, summary="plan approved")
        return ToolOutput(rejection(feedback), summary="plan rejected")

    return [
        Tool(
            name=SUBMIT_PLAN,
            description=(
                "Plan mode: show the user your plan and wait for their approval. Nothing may "
                "change before a plan is approved; a rejection comes back with their feedback."
            ),
            params=params_named("SubmitPlanParams"),
            handler=submit_plan,
            # Not read-only: an identical plan submitted again must ask again, never reuse
            # an earlier answer. PlanGate allows it without the approval policy asking.
            reads=False,
            block_params=("plan",),
            main_arg="plan",
            timeout=24 * 3600.0,  # the user may take their time reading the plan
        )
    ]


def rejection(feedback: str) -> str:
    why = feedback.strip()
    told = f" Their feedback: {why}" if why else " They gave no reason."
    return (
        f"The user rejected the plan.{told} Nothing may change yet: revise the plan and "
        f"submit it again with {SUBMIT_PLAN}, or ask the user what they want."
    )
