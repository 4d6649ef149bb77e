"""After a change: a name the request asks for that no file of the project has.

"Add a slugify(text) function and a test for it" answered with only the test, or with the
function under another name; "rename calc_total to compute_total" answered with the old name
still everywhere; "add a --dry-run option" with the option missing. The model answers that it
is done because nothing it looked at says otherwise. So when a reply would end a turn that
changed files, the harness searches the project for each name the request names
(`RequestReading.code_names`) that no change of the turn took out (those are leftovers.py's),
and the names no file has go back to the model once. Each search is a `search_in_file` call
through the dispatcher, as the model's own would be.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.messages import Evidence
from ..engine.turn_assist import GateVerdict
from .leftovers import AtTheAnswer, places_anywhere, removals, search_call
from .request import RequestReading
from .verify import Dispatch

SHORTEST = 4
"""Names shorter than this (`id`, `-v`) are not looked for: too little to go on."""
MISSING = (
    "The request names {names}, but the harness searched the project after your change and no "
    "file has {them}. If the request asks for {them}, add {them} now, with the name the request "
    "uses; if not, answer and say why."
)


def missing_message(names: Sequence[str]) -> str:
    shown = " and ".join(f"`{name}`" for name in names)
    return MISSING.format(names=shown, them="it" if len(names) == 1 else "them")


STILL_MISSING = "Not done: no file of the project has {names}, which the request names."


@dataclass
class MissingGate(AtTheAnswer):
    """One turn's search for the names the request asks for that no file has: sent back
    once; at the next answer, those still missing are the answer's last line."""

    reading: RequestReading
    dispatch: Dispatch
    asked: tuple[str, ...] = ()
    done: bool = False

    async def before_answer(self, evidence: Sequence[Evidence]) -> GateVerdict:
        if self.done or not self.reading.change or not any(record.changed_paths for record in evidence):
            return GateVerdict()
        if self.asked:
            self.done = True
            missing, records = await self._missing(self.asked)
            names = " and ".join(f"`{name}`" for name in missing)
            return GateVerdict(note=STILL_MISSING.format(names=names) if missing else "", evidence=records)
        taken_out = {removal.name for removal in removals(self.reading, evidence)}
        wanted = [name for name in self.reading.code_names
                  if name not in taken_out and len(name.strip("-")) >= SHORTEST]
        missing, records = await self._missing(wanted)
        if not missing:
            self.done = True
            return GateVerdict(evidence=records)
        self.asked = tuple(missing)
        notice = f"{', '.join(f'`{name}`' for name in missing)} in no file of the project: back to the model"
        return GateVerdict(again=missing_message(missing), evidence=records, notice=notice)

    async def _missing(self, names: Sequence[str]) -> tuple[list[str], tuple[Evidence, ...]]:
        """The names no file of the project has (a failed search says nothing), with the
        searches made."""
        records: list[Evidence] = []
        missing: list[str] = []
        for name in names:
            result, record = await self.dispatch(search_call(name))
            records.append(record)
            if not result.is_error and not places_anywhere(result.content):
                missing.append(name)
        return missing, tuple(records)
