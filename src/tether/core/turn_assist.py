"""What the loop asks of the assist package (src/tether/assist/, wired in by the runtime):
the request read once, and a gate on the turn's answer. core/ never imports assist/; it
sees it only through these protocols, as it sees the user's hooks through `TurnHooks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .messages import Evidence


class RequestView(Protocol):
    """The request as read once (assist/request.py's `RequestReading`), for the nudges."""

    @property
    def asks_question(self) -> bool:
        """A question about the project that asks neither for a change nor for a run."""
        ...

    @property
    def change(self) -> bool:
        """Asks for a change to the project."""
        ...

    @property
    def asks_only_to_run(self) -> bool:
        """Asks to run something and for no change to the files."""
        ...

    @property
    def files(self) -> tuple[str, ...]:
        """The project's files the request names (project-relative), in the request's order."""
        ...

    @property
    def named(self) -> tuple[str, ...]:
        """The files the request names, those the project has first."""
        ...


@dataclass(frozen=True)
class GateVerdict:
    """What the gate on an answer decided. Nothing set: the answer stands as it is."""

    again: str = ""
    """A message for the model: the turn goes on with it instead of ending."""
    note: str = ""
    """A line the answer ends with (what the gate found, as the last thing the user reads)."""
    evidence: tuple[Evidence, ...] = ()
    """The calls the gate made (they went through the dispatcher), for the turn's evidence."""


class AnswerGate(Protocol):
    """One turn's gate: asked each time a reply would end the turn with an answer."""

    async def before_answer(self, evidence: Sequence[Evidence]) -> GateVerdict: ...


@dataclass(frozen=True)
class AssistedTurn:
    """What the assist package gives one turn."""

    reading: RequestView | None
    """None: the request was not read (no assist is wired in)."""
    gate: AnswerGate | None = None
    """None: nothing to check before the answer."""


UNASSISTED = AssistedTurn(None)


class TurnAssist(Protocol):
    """Reads each request once and gives its turn a gate."""

    def start(self, request: str, attempts: int) -> AssistedTurn:
        """The turn of `request`; `attempts` caps the fixes its gate asks for (0: no gate)."""
        ...
