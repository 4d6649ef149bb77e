"""The coach: applies the rule table (rules.py) and the ask-once policy (call_guard.py) to
one turn, as the loop's `TurnCoach`.

It holds only what it has said this turn (which rules were sent, the call it last wrote
out, the calls it asked about); what the turn did is the loop's record, read as snapshots.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..core.messages import Evidence, Message, ToolCall, new_call_id
from ..engine.turn_assist import CoachSetup
from ..engine.turn_record import TurnEvidence, failed
from .call_guard import call_reasons
from .request import reading_of
from .rules import (
    MAX_WAITING_NUDGES,
    OPENING_NOTE,
    RECAP,
    RECAP_MAX,
    REPEATED_CALL,
    REPEATED_FAILURE,
    RULES,
    SHORT_CHAT,
    Fields,
    Judged,
    Nested,
    Offer,
    Rule,
)
from .shown_code import shown_definition_edit, shown_file_version
from .shown_lines import shown_lines_edits
from .verify import no_tests_note

SEND_CUE = "Send that call now."
"""After a call written out at the very end of a message, the 1.5B model answered with nothing
(it ended its turn at the first token); with this line after the call it sent the call (two of
three replayed requests). A message that goes on after the call needs no cue."""
_STEP_NOTE = re.compile(r"\s*\(Note: \d+ of \d+ tool round trips used\.[^()]*\)\s*")
"""The step budget's note (loop.pressure_note), which may follow the call: the cue goes before it."""
GUARD_LEVER = "guard"
REPEAT_LEVER = "repeat"
DEFINITION_LEVER = "definition"
LINES_LEVER = "lines"
NO_TESTS_LEVER = "no_tests"
TAKEN_VERSION = (
    "(Your reply showed this new version of {path} in a code block and made no call, so it was "
    "written as the write_file call above. Next time reply with the call itself.)"
)
TAKEN_LINES = (
    "(Your reply showed new text for line{s} {numbers} of {path} and made no call, so {it} put "
    "in place as the edit_file call above. Next time reply with the call itself.)"
)
TAKEN_DEFINITION = (
    "(Your reply showed this new version of `{name}` from {path} in a code block and made no "
    "call, so it was put in place of the old one as the edit_file call above. Next time reply "
    "with the call itself.)"
)
TAKEN_ID = "taken"
"""How the ids of calls taken from a reply's code block begin."""
KEPT_REPLIES = frozenset({"apply"})
REPEATED_REPLIES = frozenset({"echo"})
"""Rules that hold on a reply that copied what the model was sent: told so, a model at
temperature 0 sent the same note back word for word, and the turn ended on it."""
"""Rules whose reply is kept in a terse history: a fix shown in prose, for the model to apply."""

ShowCall = Callable[[str, Mapping[str, str]], str]


def as_json(tool: str, arguments: Mapping[str, str]) -> str:
    return json.dumps({"name": tool, "arguments": dict(arguments)}, ensure_ascii=False)


def offer_key(tool: str, arguments: Mapping[str, str]) -> str:
    """The key of the call an offer writes out (as dispatch's call key reads it)."""
    return tool + "\0" + json.dumps(dict(arguments), sort_keys=True, default=str)


@dataclass
class Coach:
    """One turn's coach (engine/turn_assist.TurnCoach)."""

    request: str
    setup: CoachSetup
    rules: tuple[Rule, ...] = RULES
    """The table, in order (a test gives one rule alone)."""
    sent: dict[str, int] = field(default_factory=dict)
    """Once-key -> how many times it was sent."""
    progress: dict[str, int] = field(default_factory=dict)
    """Once-key of a repeating rule -> its progress measure when it was last sent."""
    nudged: list[str] = field(default_factory=list)
    offered: str = ""
    offered_keys: set[str] = field(default_factory=set)
    """The calls written out this turn: sent as offered, none waits for a reason."""
    last_rule: str = ""
    asked: set[str] = field(default_factory=set)
    """The calls held back once for a reason (by their key): sent again, each runs."""
    reasons_sent: set[str] = field(default_factory=set)
    """The kinds of reason sent this turn: each holds a call back once a turn."""

    def _on(self, lever: str) -> bool:
        return self.setup.nudges and lever not in self.setup.rules_off

    def opening_note(self, after_reads: bool = False) -> str:
        on = self.setup.opening_note and len(self.request.split()) >= SHORT_CHAT
        if not on:
            return ""
        if after_reads and self._on("recap") and len(self.request) <= RECAP_MAX:
            # The files read before the first reply push the request far back, and a small
            # model then answers the last thing it read (it wrote a file it had read back
            # unchanged): the request comes again after them, as aider puts it after its files.
            return RECAP.format(request=self.request.strip()) + OPENING_NOTE
        return OPENING_NOTE

    def reply_note(self, evidence: TurnEvidence) -> str | None:
        """The first rule of the table that holds for this reply and is not spent."""
        if not self.setup.nudges:
            return None
        judged = Judged(evidence, frozenset(self.sent), self.offered, tuple(self.nudged))
        for rule in self.rules:
            if self.setup.profile not in rule.profiles or not self._on(rule.lever):
                continue
            fields = rule.when(judged)
            if fields is None:
                continue
            if self._spent(rule, evidence):
                if rule.stops:
                    return None
                continue
            return self._send(rule, fields, evidence)
        return None

    def _spent(self, rule: Rule, evidence: TurnEvidence) -> bool:
        times = self.sent.get(rule.key, 0)
        if rule.repeats is None or times == 0:
            return times > 0
        return times >= MAX_WAITING_NUDGES or rule.repeats(evidence) <= self.progress.get(rule.key, 0)

    def _send(self, rule: Rule, fields: Fields, evidence: TurnEvidence) -> str:
        self.sent[rule.key] = self.sent.get(rule.key, 0) + 1
        if rule.repeats is not None:
            self.progress[rule.key] = rule.repeats(evidence)
        self.last_rule = rule.name
        message = self.render(rule.message, fields)
        self.nudged.append(message)
        return message

    def render(self, template: str, fields: Fields) -> str:
        """The message with its fields: an Offer written out as the protocol writes a call
        (and remembered as offered), a Nested message filled in first."""
        values: dict[str, object] = {}
        for name, value in fields.items():
            values[name] = self._written(value) if isinstance(value, Offer) else value
        for name, value in list(values.items()):
            if isinstance(value, Nested):
                values[name] = value.format(**values)
        return template.format(**values)

    def _written(self, offer: Offer) -> str:
        show: ShowCall = self.setup.show_call or as_json
        self.offered = show(offer.tool, offer.arguments)
        self.offered_keys.add(offer_key(offer.tool, offer.arguments))
        return self.offered

    def reply_calls(self, evidence: TurnEvidence) -> list[tuple[ToolCall, str]]:
        """The calls a reply with no call makes in another form, for a request to change code
        (a question's answer may quote code; a file the request keeps is never changed): in
        aider's whole-file form, a whole new version of a file the turn read (or of the new
        file the request names) in a code block is its write_file call; else changed lines
        shown by path and line number are an edit_file call for each file (lever `lines`);
        else a block that is a new version of one definition is its edit (lever
        `definition`). Each with the note that goes after its result."""
        e = evidence
        if not self.setup.take_version or not e.reply or "write_file" not in e.tools:
            return []
        if e.asks_question or e.asks_to_run:
            return []
        shown = shown_file_version(e, e.reply)
        if shown is None:
            return self._lines_calls(e) or self._definition_call(e)
        _, path, content = shown
        call = ToolCall(f"{TAKEN_ID}_{new_call_id()}", "write_file", {"filepath": path, "content": content})
        return [(call, TAKEN_VERSION.format(path=path))]

    def _lines_calls(self, e: TurnEvidence) -> list[tuple[ToolCall, str]]:
        """The edit_file calls a reply with no call makes when it shows changed lines of
        project files by path and line number (lever `lines`, assist/shown_lines.py)."""
        if LINES_LEVER in self.setup.rules_off or "edit_file" not in e.tools or e.root is None:
            return []
        taken = []
        for shown in shown_lines_edits(e.reply, e.root, reading_of(e).keeps):
            arguments = {"filepath": shown.path, "old_content": shown.old, "new_content": shown.new}
            call = ToolCall(f"{TAKEN_ID}_{new_call_id()}", "edit_file", arguments)
            many = len(shown.numbers) > 1
            note = TAKEN_LINES.format(s="s" if many else "", numbers=", ".join(map(str, shown.numbers)),
                                      path=shown.path, it="they were" if many else "it was")
            taken.append((call, note))
        return taken

    def _definition_call(self, e: TurnEvidence) -> list[tuple[ToolCall, str]]:
        """The edit_file call a reply with no call makes when its block is a new version of
        one function or class the turn's files define once (lever `definition`)."""
        if DEFINITION_LEVER in self.setup.rules_off or "edit_file" not in e.tools:
            return []
        shown = shown_definition_edit(e, e.reply)
        if shown is None:
            return []
        arguments = {"filepath": shown.path, "old_content": shown.old, "new_content": shown.new}
        call = ToolCall(f"{TAKEN_ID}_{new_call_id()}", "edit_file", arguments)
        return [(call, TAKEN_DEFINITION.format(name=shown.name, path=shown.path))]

    def call_reason(self, call: ToolCall, key: str, evidence: TurnEvidence) -> str | None:
        """Ask once: the first time a call has a reason not yet sent this turn, the reason is
        its result; the identical call sent again runs, and a reason sent holds nothing back
        (a call's next reason may: a model whose edit of a kept test file waited then wrote
        that file over with 2 of its 31 lines). A call the coach wrote out is sent as offered."""
        ctx = self.setup.ctx
        if not self._on(GUARD_LEVER) or ctx is None or key in self.asked or key in self.offered_keys:
            return None
        reason = next((found for found in call_reasons(evidence, call, ctx)
                       if found[0] not in self.reasons_sent), None)
        if reason is None:
            return None
        self.asked.add(key)
        self.reasons_sent.add(reason[0])
        return reason[1]

    def repeated_read(self) -> str:
        return REPEATED_CALL if self._on(REPEAT_LEVER) else ""

    def result_note(self, key: str, record: Evidence, evidence: TurnEvidence) -> str:
        """REPEATED_FAILURE, once per turn, when this exact call had already failed; the note
        that a test file run directly ran no test; and the call made means no offer is
        pending any more."""
        self.offered = ""
        root = self.setup.ctx.root if self.setup.ctx is not None else None
        no_tests = no_tests_note(record, root) if root is not None and self._on(NO_TESTS_LEVER) else ""
        if not (failed(record) and key in evidence.failures and self._on(REPEAT_LEVER)):
            return no_tests
        if self.sent.get("repeat"):
            return ""
        self.sent["repeat"] = 1
        return REPEATED_FAILURE

    def keeps_reply(self) -> bool:
        """Whether the reply the last message answers is worth keeping in the history. A wrong
        answer kept there anchors a small model, which repeats it; a fix shown in prose is
        kept, so the model can apply what it wrote."""
        return self.last_rule in KEPT_REPLIES

    def reply_repeated(self) -> bool:
        return self.last_rule in REPEATED_REPLIES

    def with_cue(self, request: list[Message]) -> list[Message]:
        """`request` with SEND_CUE after the call last written out when the last message (a
        user message, as the text protocol sends results and notes) ends with that call, or
        with it and then only the step budget's note; unchanged otherwise."""
        return with_send_cue(request, self.offered)


def with_send_cue(request: list[Message], offered: str) -> list[Message]:
    if not offered or not request or request[-1].role != "user":
        return request
    last = request[-1]
    text, call = last.text.rstrip(), offered.rstrip()
    at = text.rfind(call)
    rest = text[at + len(call):] if at >= 0 else ""
    if last.tool_results or at < 0 or (rest.strip() and not _STEP_NOTE.fullmatch(rest)):
        return request
    return [*request[:-1], Message.user(text[: at + len(call)] + "\n" + SEND_CUE + rest)]
