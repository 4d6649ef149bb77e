"""The assist package as the loop sees it (engine/turn_assist.TurnAssist), for one project:
each request read once, the checks after a change, and the coach of the turn's evidence."""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.messages import Evidence
from ..engine.turn_assist import AnswerGate, AssistedTurn, CoachSetup, GateVerdict, TurnChecks
from .coach import Coach
from .imports import tested_files
from .leftovers import LeftoverGate
from .mentioned import mentioned_files, speaks_of_tests
from .missing import MissingGate
from .named_code import code_files
from .request import RequestReading, read_request
from .verify import Dispatch, ProjectPython, VerifyGate

LEFTOVERS = "leftovers"
"""The lever of the search for what a change left (assist/leftovers.py)."""
PROGRESS = "progress"
"""The lever of that search right after each change, said with its result."""
MISSING = "missing"
"""The lever of the search for a name the request asks for (assist/missing.py)."""
SIBLING = "sibling"
"""The lever that keeps files of a new file's kind out of the files read first."""


@dataclass
class Assist:
    """The assist package as the loop sees it (engine/turn_assist.TurnAssist), for one project."""

    root: Path
    dispatch: Dispatch
    project_files: Callable[[], Sequence[str]]
    python: ProjectPython = field(init=False)

    def __post_init__(self) -> None:
        self.python = ProjectPython(self.root)

    def start(self, request: str, checks: TurnChecks, setup: CoachSetup | None = None,
              preread: bool = False) -> AssistedTurn:
        files = self.project_files()
        reading = read_request(request, files)
        coach = Coach(request, setup) if setup is not None else None
        off = setup.rules_off if setup is not None else frozenset()
        siblings = setup is None or not setup.nudges or SIBLING in off
        first_reads = first_files(request, reading, self.root, files, siblings) if preread else ()
        if checks.attempts <= 0:
            return AssistedTurn(reading, coach=coach, first_reads=first_reads)
        gates: list[AnswerGate] = []  # the change made whole first, then checked
        if LEFTOVERS not in off:
            gates.append(LeftoverGate(reading, self.dispatch, early=PROGRESS not in off))
        if MISSING not in off:
            gates.append(MissingGate(reading, self.dispatch))
        gates.append(VerifyGate(reading, self.root, self.dispatch, self.python, self.project_files,
                                checks.attempts, each_change=checks.each_change, first=checks.first,
                                trace=checks.trace))
        return AssistedTurn(reading, GateChain(tuple(gates)), coach, first_reads)


def first_files(request: str, reading: RequestReading, root: Path, files: Sequence[str],
                siblings: bool = True) -> tuple[str, ...]:
    """What to read before the first reply: the files the request names, those that define
    or use the code it names, and the code its named tests import; or, when it names neither
    a file nor code the project has, the files it mentions by a word of their path and the
    code the tests among them import. Without `siblings`, a request for a new file leaves
    out the mentioned files of that file's kind (`like_new_file`)."""
    code = code_files(reading.code_names, root, files, speaks_of_tests(request))
    chosen = tuple(dict.fromkeys((*reading.files, *code)))
    if not chosen:
        mentioned = mentioned_files(request, files)
        if not siblings and reading.new_file:
            mentioned = [path for path in mentioned if not like_new_file(path, reading.new_files)]
        chosen = tuple(mentioned)
    return (*chosen, *tested_files(root, chosen, files))


def like_new_file(path: str, new_files: Sequence[str]) -> bool:
    """Whether `path` is of the kind of a new file the request asks for: the same suffix, in
    the new file's folder (in any folder when the request gives it none). Read first, such a
    file was what a small model wrote as the new one: on two requests for a new script in a
    folder of scripts, the script it had been shown, with its own arithmetic or its own
    listing, instead of what the request described."""
    folder, suffix = posixpath.dirname(path), posixpath.splitext(path)[1]
    for new in new_files:
        new_folder = posixpath.dirname(posixpath.normpath(new)) if "/" in new else None
        if suffix and posixpath.splitext(new)[1] == suffix and new_folder in (None, folder):
            return True
    return False


@dataclass(frozen=True)
class GateChain:
    """Gates asked in order: the first that sends the model back ends the asking; the notes
    and the calls of those asked are kept, in order."""

    gates: tuple[AnswerGate, ...]

    async def before_answer(self, evidence: Sequence[Evidence]) -> GateVerdict:
        return await self._ask(evidence, lambda gate, seen: gate.before_answer(seen))

    async def after_calls(self, evidence: Sequence[Evidence]) -> GateVerdict:
        """Every gate's note on the calls just run, in order, with the calls they made."""
        return await self._ask(evidence, lambda gate, seen: gate.after_calls(seen))

    async def before_start(self) -> GateVerdict:
        """Every gate's calls and notes before the model's first reply."""
        return await self._ask((), lambda gate, seen: gate.before_start())

    async def checks_change(self, path: str) -> bool:
        return any([await gate.checks_change(path) for gate in self.gates])

    def passed(self) -> bool:
        return any(gate.passed() for gate in self.gates)

    async def _ask(self, evidence: Sequence[Evidence],
                   ask: Callable[[AnswerGate, list[Evidence]], Awaitable[GateVerdict]]) -> GateVerdict:
        notes: list[str] = []
        calls: list[Evidence] = []
        shown: list[str] = []
        unshown: list[Evidence] = []
        for gate in self.gates:
            verdict = await ask(gate, [*evidence, *unshown, *calls])
            notes += [verdict.note] if verdict.note else []
            calls += verdict.evidence
            shown += verdict.shown or [record.result for record in verdict.evidence]
            unshown += verdict.unshown
            if verdict.again:
                return GateVerdict(again=verdict.again, note="\n".join(notes), evidence=tuple(calls),
                                   notice=verdict.notice, shown=tuple(shown), said_before=verdict.said_before,
                                   drop_reply=verdict.drop_reply, unshown=tuple(unshown))
        return GateVerdict(note="\n".join(notes), evidence=tuple(calls), shown=tuple(shown), unshown=tuple(unshown))
