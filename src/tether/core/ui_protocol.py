"""What the loop tells the outside world. The loop and the tools never print.

Three implementations share one loop: the terminal app, the headless writer
(`-p`), and `SilentUI`, for embedding the loop and for tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from .messages import Evidence, ToolCall, Usage


@dataclass(frozen=True)
class Decision:
    """The user's answer to an approval request (asked when a policy's GateVerdict says "ask")."""

    allowed: bool
    feedback: str = ""
    remember: bool = False
    """The user chose "always": a caller may save an allow rule for this exact call."""


NoticeLevel = Literal["info", "warning", "error"]


class UI(Protocol):
    def text(self, delta: str) -> None: ...
    def thinking(self, delta: str) -> None: ...
    def tool_start(self, call: ToolCall) -> None: ...
    def tool_end(self, evidence: Evidence) -> None: ...
    async def approve(self, call: ToolCall, reason: str) -> Decision: ...
    def notice(self, message: str, level: NoticeLevel = "info") -> None: ...

    @property
    def can_ask(self) -> bool:
        """False when nobody is there to answer an approval or a question."""
        ...


@runtime_checkable
class AgentEvents(Protocol):
    """A UI that shows a sub-agent's events as its own kind (stream-json lines carrying the
    parent call's id); a UI without it gets them as notices naming the agent."""

    def agent_event(self, event: dict[str, Any]) -> None: ...


@runtime_checkable
class RequestEvents(Protocol):
    """A UI that shows what is under way (the chat's activity line): told as each model
    request starts, so the wait for the model can be shown and timed."""

    def request_started(self) -> None: ...


@runtime_checkable
class RequestTimes(Protocol):
    """A UI that records each finished model request (stream-json's `request` lines): its
    usage, how long it took and why it stopped, so a script sees where a run's time went."""

    def request_ended(self, usage: Usage, elapsed_ms: float, stop_reason: str) -> None: ...


@runtime_checkable
class ShowsChecks(Protocol):
    """A UI that shows the answer checks' warnings its own way, after the answer (the terminal:
    one dimmed line each); a UI without it gets them as warning notices."""

    def answer_checks(self, warnings: list[str]) -> None: ...


def show_checks(ui: UI, warnings: list[str]) -> None:
    """Tell `ui` what the answer checks found (nothing when they found nothing)."""
    if not warnings:
        return
    if isinstance(ui, ShowsChecks):
        ui.answer_checks(warnings)
    else:
        for warning in warnings:
            ui.notice(f"check: {warning}", "warning")


class SilentUI:
    """Says nothing and asks nobody; approvals are refused."""

    can_ask = False

    def __init__(self) -> None:
        self.notices: list[tuple[str, str]] = []

    def text(self, delta: str) -> None:
        pass

    def thinking(self, delta: str) -> None:
        pass

    def tool_start(self, call: ToolCall) -> None:
        pass

    def tool_end(self, evidence: Evidence) -> None:
        pass

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        return Decision(False, "nobody is available to approve this call")

    def notice(self, message: str, level: NoticeLevel = "info") -> None:
        self.notices.append((level, message))
