"""TurnWatch: what one turn has done so far, and which nudges it has had.

The data the nudges read (nudges.py and the modules beside it) and the bookkeeping that
keeps it: the loop feeds it each finished call. It imports none of the nudge modules, so
they depend on it one way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .answer_checks import COUNT_WORDS, LINE_PREFIXES
from .derived_numbers import SeenNumbers
from .dispatch import first_line
from .messages import Evidence, ToolCall
from .turn_assist import RequestView

OPENING_NOTE = (
    "(Do this yourself with the tools, one call at a time. Look at the files first; never "
    "guess. Reply with a tool call now.)"
)
CODE_SUFFIXES = frozenset({
    ".py", ".js", ".mjs", ".ts", ".sh", ".bash", ".rb", ".go", ".rs", ".java", ".kt", ".c",
    ".h", ".cc", ".cpp", ".cs", ".php", ".pl", ".lua", ".swift", ".r", ".jl",
})
"""Files whose change is worth running before the answer (a config value needs no run)."""
MAX_WAITING_NUDGES = 8
"""The most times a turn is told a program still waits (each after new input went to it)."""
REPEATED_FAILURE = (
    "\n(Note: this is the same call that already failed. Repeating it will not help: "
    "change the arguments or do something else.)"
)

_ANY_NUMBER = re.compile(r"(?<![\w.])\d(?:[\d,_]*\d)?(?:\.\d+)?(?![\w])")
_SAYS_LINE = re.compile(r"\blines?\b", re.I)
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s", re.M)
_REPLY_KEPT = frozenset({"apply"})
SEEN_TEXT_CAP = 400_000
SHORT_CHAT = 3
"""A request of fewer words than this (a greeting, "thanks") needs no looking."""


def failed(evidence: Evidence) -> bool:
    """The call failed, or what it ran did (a non-zero exit, a timeout)."""
    summary = evidence.summary
    return evidence.error or summary == "timed out" or (
        summary.startswith("exit ") and not summary.startswith("exit 0")
    )


def waiting_prompt(result: str) -> str:
    """The question a waiting program asked last: the last line of its output above the
    status line ("Your guess:")."""
    lines = [line for line in result.splitlines() if line.strip() and not line.startswith("[")]
    return lines[-1] if lines else ""


@dataclass
class TurnWatch:
    """What one turn has done so far, and which nudges it has had."""

    request: str
    sent: set[str] = field(default_factory=set)
    calls: int = 0
    acted: bool = False
    """A file tool changed something, or a command ran and succeeded."""
    last_failure: str | None = None
    failures: dict[str, str] = field(default_factory=dict)
    """call key -> first line of its failed result."""
    seen: list[str] = field(default_factory=list)
    """The results of this turn's calls (capped), to tell a number that was looked up from
    one that was made up."""
    seen_chars: int = 0
    read_paths: set[Path] = field(default_factory=set)
    touched: dict[Path, str] = field(default_factory=dict)
    """Files read or edited this turn (resolved path -> as the model named it)."""
    asked: set[str] = field(default_factory=set)
    """The calls (name and arguments) held back once with a reason (call_guard.ask_once)."""
    reasons_sent: set[str] = field(default_factory=set)
    """The reasons to wait already sent this turn (call_guard.ask_once)."""
    unchecked: str | None = None
    """The code file changed last since the last command that ran (None: checked or none)."""
    last_kind: str = ""
    """The kind of the last nudge sent ("look", "empty", "failure", "apply", "check", "unseen")."""
    tools: dict[str, str | None] = field(default_factory=dict)
    """The tools on offer and each one's main argument, to tell a call written as prose."""
    show_call: Callable[[str, dict[str, str]], str] | None = None
    """Renders a call as the protocol in use writes it (for the named-not-called nudge)."""
    root: Path | None = None
    """The project root, to tell a path the reply names from one it made up."""
    last_call: ToolCall | None = None
    """The turn's last call, when it worked."""
    last_search: dict[str, str] | None = None
    """The arguments of this turn's last search_in_file that worked."""
    written: set[str] = field(default_factory=set)
    """The paths write_file and edit_file changed this turn, as the calls named them."""
    commands: set[str] = field(default_factory=set)
    """The commands run_cmd ran this turn (a command shown again is not suggested again)."""
    waiting: str | None = None
    """The session of the last command that is still waiting for input (None: none is)."""
    waiting_prompt: str = ""
    """What that program asked last (the last line of its output)."""
    answered: bool = True
    """Input went to a program since the last waiting nudge (or none was sent yet)."""
    waiting_nudges: int = 0
    nudged: list[str] = field(default_factory=list)
    """The nudges sent this turn (a reply that repeats one is no answer)."""
    offered: str = ""
    """The call the last nudge wrote out for the model to send ("": none, or it has called since)."""
    reply_text: str = ""
    """The text of the reply whose calls are running (a refusal can answer what it showed)."""
    last_warned: bool = False
    """The last call's result carries a tool's warning (broken Python, a missing import, ...)."""
    unseen_at: int = 0
    """How many calls had run when the unseen-number nudge was sent."""
    reading: RequestView | None = None
    """The request as read once (assist/request.py); None: nothing is known of it."""

    def saw(self, key: str, evidence: Evidence, changes_things: bool) -> None:
        """Record one finished call (`key`: its name and arguments)."""
        self.calls += 1
        self.offered = ""
        self.last_call = evidence.call if not failed(evidence) else None
        if self.seen_chars < SEEN_TEXT_CAP:
            # the call's own arguments count as seen: a number in a path it named
            # (notes/meeting-2024-04-18.txt) was not made up
            seen = " ".join(str(v) for v in evidence.call.arguments.values()) + "\n" + evidence.result
            self.seen.append(seen)
            self.seen_chars += len(seen)
        if evidence.command is not None:
            waits = evidence.command.state == "waiting_for_input"
            self.waiting = evidence.command.session if waits else None
            self.waiting_prompt = waiting_prompt(evidence.result) if waits else ""
            self.answered = self.answered or evidence.call.name == "send_input"
        if evidence.call.name == "run_cmd":
            self.commands.add(str(evidence.call.arguments.get("command", "")).strip())
        if failed(evidence):
            self.last_failure = first_line(evidence.result, 160) or evidence.summary
            self.failures[key] = self.last_failure
            return
        self.last_failure, self.last_warned = None, "\nWarning: " in evidence.result
        self.acted = self.acted or changes_things
        tool = evidence.call.name
        if tool == "run_cmd":
            self.unchecked = None
        elif tool == "search_in_file":
            self.last_search = {k: str(v) for k, v in evidence.call.arguments.items()}
        elif tool in ("write_file", "edit_file"):
            path = evidence.call.arguments.get("filepath")
            if isinstance(path, str):
                self.written.add(os.path.normpath(path))
            if isinstance(path, str) and Path(path).suffix.lower() in CODE_SUFFIXES:
                self.unchecked = path

    def saw_read(self, path: Path, shown: str) -> None:
        self.read_paths.add(path)
        self.touched[path] = shown

    def repeat_note(self, key: str, evidence: Evidence) -> str:
        """The note for a result when this exact call had already failed (once per turn)."""
        if key in self.failures and failed(evidence) and self.once("repeat"):
            return REPEATED_FAILURE
        return ""

    def opening_note(self) -> str:
        """The reminder sent beside the request in the turn's first request ("" for chat)."""
        return OPENING_NOTE if len(self.request.split()) >= SHORT_CHAT else ""

    def offer(self, tool: str, arguments: dict[str, str]) -> str:
        """A call written out in the protocol's form for the model to send (remembered until
        it makes a call, for a reply that comes back empty)."""
        assert self.show_call is not None
        self.offered = self.show_call(tool, arguments)
        return self.offered

    def still_waiting(self) -> bool:
        """Whether to say the program still waits. Unlike the other nudges this one may come
        again in a turn, but only after the model answered the program since the last one (a
        guessing game takes several answers), so it cannot repeat without progress."""
        if self.waiting is None or not self.answered or self.waiting_nudges >= MAX_WAITING_NUDGES:
            return False
        self.answered, self.waiting_nudges, self.last_kind = False, self.waiting_nudges + 1, "waiting"
        return True

    def unseen_number(self, text: str, bare: bool = False) -> str | None:
        """A number the answer states that neither the request nor any result of this turn
        showed, nor could be worked out from what they showed (`derived_numbers`: a unit
        conversion, a sum, a percentage, a small count, a year), and that is no count of
        things it names ("14 files"); None when every one may be honest. `bare`: the text is
        a file's content, checked even before any call."""
        if self.calls == 0 and not bare:
            return None  # look_first covers an answer given without looking
        known = self.request + "\n" + "\n".join(self.seen)
        if not _SAYS_LINE.search(text):  # "3" from the `3| MAX = 4` of a file is no value
            known = LINE_PREFIXES.sub("", known)
        seen = SeenNumbers(m.group() for m in _ANY_NUMBER.finditer(known))
        stated = _LIST_MARKER.sub("", text)
        for m in _ANY_NUMBER.finditer(stated):
            after = stated[m.end():]
            if not (seen.explains(m.group(), after) or COUNT_WORDS.match(after)):
                return m.group()
        return None

    def asks_question(self) -> bool:
        """The request is a question about the project and asks for no change and no run."""
        return self.reading is not None and self.reading.asks_question

    def asks_change(self) -> bool:
        """The request asks for a change and is no question."""
        return self.reading is not None and self.reading.change and not self.reading.asks_question

    def asks_to_run(self) -> bool:
        """The request asks to run something and asks for no change to the files."""
        return self.reading is not None and self.reading.asks_only_to_run

    def keeps_reply(self) -> bool:
        """Whether the reply the last nudge answers is worth keeping in the history. A wrong
        answer kept there anchors a small model, which repeats it; a fix shown in prose is
        kept, so the model can apply what it wrote."""
        return self.last_kind in _REPLY_KEPT

    def once(self, kind: str) -> bool:
        if kind in self.sent:
            return False
        self.sent.add(kind)
        self.last_kind = kind
        return True
