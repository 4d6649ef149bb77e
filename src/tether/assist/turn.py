"""The assist package as the loop sees it (engine/turn_assist.TurnAssist), for one project:
each request read once, the check after a change, and the coach of the turn's evidence."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.turn_assist import AssistedTurn, CoachSetup
from .coach import Coach
from .request import read_request
from .verify import Dispatch, ProjectPython, VerifyGate


@dataclass
class Assist:
    """The assist package as the loop sees it (engine/turn_assist.TurnAssist), for one project."""

    root: Path
    dispatch: Dispatch
    project_files: Callable[[], Sequence[str]]
    python: ProjectPython = field(init=False)

    def __post_init__(self) -> None:
        self.python = ProjectPython(self.root)

    def start(self, request: str, attempts: int, setup: CoachSetup | None = None) -> AssistedTurn:
        reading = read_request(request, self.project_files())
        coach = Coach(request, setup) if setup is not None else None
        if attempts <= 0:
            return AssistedTurn(reading, coach=coach)
        gate = VerifyGate(reading, self.root, self.dispatch, self.python, self.project_files, attempts)
        return AssistedTurn(reading, gate, coach)
