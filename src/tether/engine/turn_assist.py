"""What the loop asks of the assist package (src/tether/assist/, wired in by the runtime):
the request read once, a gate on the turn's answer, and a coach (the rules on the turn's
evidence and the reasons a call waits). core/ never imports assist/; it sees it only
through these protocols, as it sees the user's hooks through `TurnHooks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.messages import Evidence, Message, ToolCall
from ..core.toolspec import ToolContext
from .turn_record import RequestView, TurnEvidence


@dataclass(frozen=True)
class GateVerdict:
    """What the gate on an answer decided. Nothing set: the answer stands as it is."""

    again: str = ""
    """A message for the model: the turn goes on with it instead of ending."""
    note: str = ""
    """A line the answer ends with (what the gate found, as the last thing the user reads)."""
    evidence: tuple[Evidence, ...] = ()
    """The calls the gate made (they went through the dispatcher), for the turn's evidence."""
    notice: str = ""
    """What the user is told when `again` sends the model back ("": the check failed)."""
    shown: tuple[str, ...] = ()
    """What the model reads of each call in `evidence` when the gate shows them as calls
    (their whole results when empty): a test run's end, where its failures are summed up."""
    drop_reply: bool = False
    """The reply `again` answers only repeats what the history holds (the code unchanged):
    a terse history leaves it out, or the model copies it once more."""
    said_before: bool = False
    """`again` repeats what the model was told and answered without a change: its next reply
    is sampled (greedy decoding wrote the same answer again)."""
    unshown: tuple[Evidence, ...] = ()
    """Calls the gate made that join the turn's evidence without being shown to the model as
    calls (what they found is in `note`)."""


class AnswerGate(Protocol):
    """One turn's gate: asked each time a reply would end the turn with an answer, and after
    each reply's calls ran."""

    async def before_answer(self, evidence: Sequence[Evidence]) -> GateVerdict: ...

    async def after_calls(self, evidence: Sequence[Evidence]) -> GateVerdict:
        """What follows the results of the calls just run: a `note` sent with them (never
        `again`: the turn goes on anyway)."""
        ...

    async def before_start(self) -> GateVerdict:
        """What the model starts from, before its first reply: calls the gate made and a note
        on them (never `again`)."""
        ...

    async def checks_change(self, path: str) -> bool:
        """Whether a change of `path` made now would be checked right after it, its outcome
        shown to the model (`after_calls`)."""
        ...

    def passed(self) -> bool:
        """Whether the check after the last change passed, and nothing changed since: the
        work is verified, and what is due is the answer."""
        ...


class TurnCoach(Protocol):
    """One turn's rules on its evidence (assist/coach.py): what to tell the model instead of
    ending the turn, why a call waits, and the notes on a result. Each reads a snapshot."""

    def opening_note(self, after_reads: bool = False) -> str:
        """Sent beside the request in the turn's first request ("" for none); `after_reads`:
        files were read before the first reply, so the request is no longer the last text."""
        ...

    def reply_note(self, evidence: TurnEvidence) -> str | None:
        """The message to send instead of ending the turn on `evidence.reply`, or None."""
        ...

    def reply_calls(self, evidence: TurnEvidence) -> list[tuple[ToolCall, str]]:
        """The calls a reply that made none makes in another form (a whole file shown in a
        code block; changed lines of several files), each with the note for its result."""
        ...

    def call_reason(self, call: ToolCall, key: str, evidence: TurnEvidence) -> str | None:
        """Why `call` (`key`: its name and arguments) waits, as its result; None: it runs."""
        ...

    def repeated_read(self) -> str:
        """The result of a read made again in the turn ("" gives the earlier result)."""
        ...

    def result_note(self, key: str, record: Evidence, evidence: TurnEvidence) -> str:
        """A note after the result of the call `record` holds (`key`: its name and arguments),
        before the turn's record (`evidence`) has seen it."""
        ...

    def keeps_reply(self) -> bool:
        """Whether the reply the last message answers is worth keeping in the history."""
        ...

    def reply_repeated(self) -> bool:
        """Whether the reply the last message answers repeated text the model was sent:
        greedy decoding would write it again, so the next reply is sampled."""
        ...

    def with_cue(self, request: list[Message]) -> list[Message]:
        """The request to send, with a cue after a call written out at its very end."""
        ...


@dataclass(frozen=True)
class CoachSetup:
    """What a turn's coach needs from the loop."""

    profile: str
    """"small" or "full": each rule says which profiles it serves."""
    nudges: bool
    """The rules on the reply and the reasons a call waits are on."""
    opening_note: bool
    rules_off: frozenset[str] = frozenset()
    """Rule levers switched off (TETHER_PROFILE_OFF), for measurement."""
    take_version: bool = False
    """A whole file version shown in a reply with no call is that write (`reply_calls`)."""
    show_call: Callable[[str, Mapping[str, str]], str] | None = None
    """Renders a call as the protocol in use writes it (None: as JSON)."""
    ctx: ToolContext | None = None
    """The tools' context: the reasons a call waits read files under its rules."""


@dataclass(frozen=True)
class AssistedTurn:
    """What the assist package gives one turn."""

    reading: RequestView | None
    """None: the request was not read (no assist is wired in)."""
    gate: AnswerGate | None = None
    """None: nothing to check before the answer."""
    coach: TurnCoach | None = None
    """None: no rules on the turn's evidence."""
    first_reads: tuple[str, ...] = ()
    """The project files to read before the first reply (the `preread` lever; () without
    it): those the request names and the code its named tests import, or the files it
    mentions."""


UNASSISTED = AssistedTurn(None)


@dataclass(frozen=True)
class TurnChecks:
    """How a turn's gate checks the work (the profile's levers and the user's settings)."""

    attempts: int = 0
    """The most fixes the gate asks for (0: no gate)."""
    each_change: bool = False
    """The gate's checks also run right after each change (lever `early`)."""
    first: bool = False
    """The tests the request names also run before the model's first reply (lever `first`)."""
    trace: bool = False
    """A check still failing with the code unchanged asks for the first failing test to be
    gone through (lever `trace`)."""


class TurnAssist(Protocol):
    """Reads each request once and gives its turn a gate and a coach."""

    def start(self, request: str, checks: TurnChecks, setup: CoachSetup | None = None,
              preread: bool = False) -> AssistedTurn:
        """The turn of `request`; `checks`: how its gate checks the work; `setup`: the
        coach's (None: no coach); `preread`: the turn gets its `first_reads`."""
        ...
