"""The rules on a turn's evidence: one declarative table, read in order.

Small models end a turn in the same few ways: they answer without looking, send an empty
reply, show a fix instead of applying it, give up after one failed call, or claim a run
that never happened. Each rule is one of those, written as data: its name, the lever that
switches it off for measurement (TETHER_PROFILE_OFF), the profiles it serves, whether it is
sent at most once per turn, the message, and its condition, a pure function of a frozen
snapshot of the turn's evidence (`Judged`: what the loop recorded, the reply, and which
rules were sent). The coach (coach.py) sends the first rule that holds. A rule never makes a
call: at most it offers back a call the model itself wrote (a command it showed, a tool it
named in prose, a file version in a fence, its own answer to a waiting program).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..engine.answer_checks import COUNT_WORDS, LINE_PREFIXES, PASS_CLAIM, RAN_CLAIM
from ..engine.derived_numbers import SeenNumbers
from ..engine.turn_record import TurnEvidence
from ..tools._paths import is_inside_root
from .named_files import (
    CLAIMED_UNCHANGED,
    NAMED_UNCHANGED,
    NEW_FILE_MISSING,
    claimed_unchanged,
    missing_new_files,
    named_unchanged,
)
from .reply_shapes import NUMBERED_STEPS, gives_number, looks_like_command, shown_command
from .request import new_code_file, reading_of
from .shown_code import shown_file_version

SHORT_CHAT = 3
"""A request of fewer words than this (a greeting, "thanks") needs no looking."""
OPENING_NOTE = (
    "(Do this yourself with the tools, one call at a time. Look at the files first; never "
    "guess. Reply with a tool call now.)"
)
RECAP = "# Request (again)\n{request}\n\n"
RECAP_MAX = 800
"""A request longer than this (a pasted log) is not said again: its cost grows, and a
short request is what a small model loses sight of behind the files."""
SMALL = frozenset({"small"})
MAX_WAITING_NUDGES = 8
"""The most times a turn is told a program still waits (each after new input went to it)."""
CHANGE_MADE = (
    "Your last call worked: {path} is changed (its result is above). If that is all the request "
    "asks, reply with one short sentence saying what you changed; if not, make the next tool call."
)
CHANGE_WARNED = (
    "Your last call changed {path}, but its result warns that something is wrong with it (the "
    "Warning above). Fix that with the next tool call before you answer."
)
UNSEEN_NUMBER = (
    "Your answer says {number}, but no tool result showed {number}. Check it with the tools "
    "(search for where it is set, read that file), then answer."
)
OPEN_IT_YOURSELF = (
    "Your reply tells the user to open {path} and look: do it yourself. Read it with read_file, "
    "then answer from what it shows."
)

LOOK_FIRST = (
    "You have not looked at anything yet. Check first: use list_dir, read_file or "
    "search_in_file (or run_cmd) to see the files, then act. Do not guess."
)
EMPTY_REPLY = "Your reply was empty. Continue: make the next tool call, or give your final answer."
EMPTY_AFTER_OFFER = "Your reply was empty. Reply with only the call you were given:\n{call}"
RESULT_FIRST = (
    "Your reply began with a tool result, so it was cut off there and nothing ran: results "
    "come from me, after you send a call. "
)
RESULT_FIRST_NEXT = RESULT_FIRST + "Make the next tool call, or give your final answer."
RESULT_FIRST_AFTER_READ = RESULT_FIRST + (
    "You have read {path}: its text is above, so do not repeat it. Now make the change the "
    "request asks for: reply with only an edit_file call (old_content copied exactly from "
    "it, new_content with the change), or a write_file call for a new file."
)
RESULT_FIRST_NEW_FILE = RESULT_FIRST + (
    "You have read {path}: its text is above, so do not repeat it. Now create {new}, the file "
    "the request asks for: reply with only a write_file call for {new} with its whole content."
)
RESULT_FIRST_OFFER = RESULT_FIRST + "Reply with only the call:\n{call}"
OFFER_AGAIN = ("Do not show the command to the user: you run it. Reply with only this call, "
               "then read its result:\n{call}")
ECHOED = ("Your reply repeated the note you were sent instead of doing what it says. "
          "Continue: make the next tool call, or give your final answer.")
_ECHO_CHARS = 40
"""How much of a nudge a reply has to repeat, word for word, to be its echo."""
NOT_APPLIED = (
    "The task is not done: you have only answered or described it. Do it now with the tools: "
    "reply with the next tool call only (write_file creates or replaces a file, edit_file "
    "changes part of one, run_cmd runs a command). If the task asked for no change, repeat "
    "your final answer."
)
RUN_IT = (
    "The task is not done: you have only described it. Run it yourself now: reply with a "
    "run_cmd call only."
)
ANSWER_IT = (
    " A program that asks questions keeps running; answer it with "
    "send_input, one answer at a time, and read what it prints."
)
NOT_RUN = RUN_IT + ANSWER_IT
AFTER_FAILURE = (
    "Your last tool call failed ({error}). Do not stop here: fix the call or try another "
    "way, then finish the task. If it really cannot be done, say why."
)
NO_NUMBER = (
    "The question asks for a number, and your answer gives none. Find it with the tools (run "
    "the program or search the files, and fix the call if it failed), then answer with it."
)
UNCHECKED = (
    "You changed {path} but have not run anything since. Check your work first: run it, or "
    "its tests, with run_cmd and read the output. Then fix what is wrong, or answer."
)
NAMED_NOT_CALLED = (
    "Your reply names {tool} but makes no call, so nothing ran: a tool runs only when your "
    "reply is the call itself.{question} {form}If the task is done, give the final answer in "
    "plain words instead."
)
NAMED_FORM = "To call it, reply with only:\n{call}\n"
START_FIRST = (
    "send_input answers a program that run_cmd started and that is still waiting; none is. "
    "Start the program first: reply with only:\n{call}\n"
)
SHOWN_COMMAND = (
    "Your reply shows the command `{command}` but nothing ran: a command runs only when your "
    "reply is a run_cmd call.{question} To run it, reply with only:\n{call}\nThen use its "
    "output."
)
STILL_WAITING = (
    "The program in session {session} has not finished: it is waiting for input (its last "
    "output is above). Answer it with send_input (session \"{session}\", text: what it asks "
    "for), read what it prints, and go on until it ends. Then answer."
)
WAITING_ANSWER = (
    " Your reply wrote the program's part itself, which is made up. It asks {prompt!r}; your "
    "answer to that was {value!r}. To send it, reply with only:\n{call}"
)
PLAYED = "The program in session {session} is still waiting for input, and nothing was sent to it."
FIND_IT_YOURSELF = " Do not tell the user how to find the answer: find it yourself, then answer."
REPEATED_FAILURE = (
    "\n(Note: this is the same call that already failed. Repeating it will not help: "
    "change the arguments or do something else.)"
)
REPEATED_CALL = (
    "(You already made this exact call in this turn, and its result above has not changed. "
    "Do not send it again: use what it showed. Make a different call, or give the final answer.)"
)
CLAIMED_RUN = (
    "Your answer says it ran, but no command ran in this turn: nothing was run, so its "
    "output is not known. Run it with run_cmd, then answer from what it prints."
)
UNRUN_ANSWER = (
    "The request asks you to run it, but no command ran in this turn, so this answer is not "
    "from its output. Run it with run_cmd, then answer from what it prints."
)

_FENCED_CODE = re.compile(r"^[ \t]*```", re.M)
_BACKTICKED = re.compile(r"`([\w./-]+\.\w{1,5})`")
_ANY_NUMBER = re.compile(r"(?<![\w.])\d(?:[\d,_]*\d)?(?:\.\d+)?(?![\w])")
_SAYS_LINE = re.compile(r"\blines?\b", re.I)
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s", re.M)


@dataclass(frozen=True)
class Offer:
    """A call written out for the model to send: always one the model itself wrote."""

    tool: str
    arguments: Mapping[str, str]


class Nested(str):
    """A field that is itself a message with fields (filled from the same fields)."""


Fields = dict[str, object]
"""What a condition found: the message's fields (an `Offer` is rendered as the protocol writes
it, a `Nested` message is filled in first)."""


@dataclass(frozen=True)
class Judged:
    """What a rule reads: the turn's evidence and what the coach has said this turn."""

    evidence: TurnEvidence
    sent: frozenset[str] = frozenset()
    """The rules (by once-key) sent so far."""
    offered: str = ""
    """The call last written out for the model, while it has made no call since."""
    nudged: tuple[str, ...] = ()
    """The messages sent this turn."""

    @property
    def reply(self) -> str:
        return self.evidence.reply


@dataclass(frozen=True)
class Rule:
    """One rule of the table."""

    name: str
    lever: str
    """The name that switches it off (several rules may share one)."""
    message: str
    """The message, with the condition's fields in braces."""
    when: Callable[[Judged], Fields | None]
    """The condition: the message's fields when the rule holds, else None."""
    once: str = ""
    """The once-per-turn key (rules that share one are sent at most once between them);
    "" uses the name."""
    repeats: Callable[[TurnEvidence], int] | None = None
    """None: once per turn. Else a measure of progress: the rule may come again, up to
    MAX_WAITING_NUDGES times, each time only once the measure grew since it was sent."""
    stops: bool = False
    """When it holds but was spent, nothing more is said of this reply."""
    profiles: frozenset[str] = SMALL

    @property
    def key(self) -> str:
        return self.once or self.name


# ---------------------------------------------------------------- conditions


def _empty(j: Judged) -> bool:
    return not j.reply


def echoes(text: str, nudged: tuple[str, ...]) -> bool:
    """The reply repeats a nudge word for word: small models echo the harness's note
    (the final answer "The task is not done: ..."), which answers nothing."""
    flat = " ".join(text.split())
    return any(" ".join(sent.split())[:_ECHO_CHARS] in flat for sent in nudged)


def _echo(j: Judged) -> Fields | None:
    return {} if j.reply and echoes(j.reply, j.nudged) else None


def change_made(e: TurnEvidence) -> str:
    """CHANGE_MADE when the turn's last call was a write or an edit that worked ("" otherwise):
    an empty reply right after one is often the end of the job. A change whose result warns
    gets CHANGE_WARNED: asked for its summary, the model may call the broken import right."""
    last = e.last_call
    if last is None or last.name not in ("write_file", "edit_file"):
        return ""
    path = last.arguments.get("filepath", "the file")
    return (CHANGE_WARNED if e.last_warned else CHANGE_MADE).format(path=path)


def _result_first_offer(j: Judged) -> Fields | None:
    return {"call": j.offered} if _empty(j) and j.evidence.result_first and j.offered else None


def _read_for_change(j: Judged) -> str | None:
    e = j.evidence
    last = e.last_call
    if not (_empty(j) and e.result_first and last is not None and last.name == "read_file" and e.asks_change):
        return None
    return str(last.arguments.get("filepath", "the file"))


def _result_first_new_file(j: Judged) -> Fields | None:
    read = _read_for_change(j)
    new = new_code_file(reading_of(j.evidence), j.evidence.root) if read else None
    return {"path": read, "new": new} if new is not None and new != read else None


def _result_first_after_read(j: Judged) -> Fields | None:
    read = _read_for_change(j)
    return {"path": read} if read else None


def _result_first_changed(j: Judged) -> Fields | None:
    changed = change_made(j.evidence) if _empty(j) and j.evidence.result_first else ""
    return {"changed": changed} if changed else None


def _result_first(j: Judged) -> Fields | None:
    return {} if _empty(j) and j.evidence.result_first else None


def _empty_after_offer(j: Judged) -> Fields | None:
    return {"call": j.offered} if _empty(j) and j.offered else None


def _empty_changed(j: Judged) -> Fields | None:
    changed = change_made(j.evidence) if _empty(j) else ""
    return {"changed": changed} if changed else None


def _empty_reply(j: Judged) -> Fields | None:
    return {} if _empty(j) else None


def _shown_command(j: Judged) -> str | None:
    e = j.evidence
    command = shown_command(j.reply) if j.reply else None
    if command is None or command in e.commands or "run_cmd" not in e.tools:
        return None
    if re.split(r"[\s(]", command, maxsplit=1)[0] in e.tools:
        return None  # a tool written as a command: the named-not-called rule's case
    return command


def _shown_again(j: Judged) -> Fields | None:
    """The command shown again after its call was written out: once more, firmly."""
    command = _shown_command(j)
    if command is None or "shown" not in j.sent or not j.offered or command not in j.offered:
        return None
    return {"call": j.offered}


def _question(j: Judged) -> str:
    return FIND_IT_YOURSELF if j.evidence.asks_question else ""


def _shown(j: Judged) -> Fields | None:
    command = _shown_command(j)
    if command is None:
        return None
    return {"command": command, "question": _question(j), "call": Offer("run_cmd", {"command": command})}


def _look_first(j: Judged) -> Fields | None:
    e = j.evidence
    return {} if j.reply and e.calls == 0 and len(e.request.split()) >= SHORT_CHAT else None


def _waiting_answer(j: Judged) -> tuple[str, Offer] | None:
    """When the reply plays the waiting program's dialogue itself ("Your guess: 25 / Too
    low. / ..."), its own answer to the program's question, to send where it belongs."""
    e = j.evidence
    prompt = e.waiting_prompt.strip()
    if not prompt or e.waiting is None or "send_input" not in e.tools:
        return None
    match = re.search(rf"{re.escape(prompt)}[ \t]*([^\n]+)", j.reply)
    value = match.group(1).strip().strip("`*") if match else ""
    if not value:
        return None
    return prompt, Offer("send_input", {"session": e.waiting, "text": value})


def _played_fields(j: Judged) -> Fields:
    played = _waiting_answer(j)
    if played is None:
        return {"played": ""}
    prompt, offer = played
    return {"played": Nested(WAITING_ANSWER), "prompt": prompt, "value": offer.arguments["text"], "call": offer}


def _still_waiting(j: Judged) -> Fields | None:
    e = j.evidence
    return {"session": e.waiting, **_played_fields(j)} if e.waiting is not None else None


def _played(j: Judged) -> Fields | None:
    e = j.evidence
    if e.waiting is None or _waiting_answer(j) is None:
        return None
    return {"session": e.waiting, **_played_fields(j)}


def _version(j: Judged) -> Fields | None:
    e = j.evidence
    if not j.reply or "write_file" not in e.tools or e.asks_question or e.asks_to_run:
        return None
    shown = shown_file_version(e, j.reply)
    if shown is None:
        return None
    message, path, content = shown
    return {"shown": Nested(message), "path": path, "call": Offer("write_file", {"filepath": path, "content": content})}


def _after_failure(j: Judged) -> Fields | None:
    return {"error": j.evidence.last_failure} if j.evidence.last_failure is not None else None


def _ran_nothing(e: TurnEvidence) -> bool:
    return not e.commands and "run_cmd" in e.tools and e.calls > 0


def _claimed_run(j: Judged) -> Fields | None:
    """An answer that says it ran something (or that tests pass) when nothing ran this turn:
    the model copies a worked example's "I ran it" without running."""
    claims = bool(RAN_CLAIM.search(j.reply) or PASS_CLAIM.search(j.reply))
    return {} if j.reply and claims and _ran_nothing(j.evidence) else None


def named_call(text: str, tools: Mapping[str, str | None]) -> tuple[str, str | None] | None:
    """A tool the reply names as if calling it (`run_cmd("pytest")`, `run_cmd "pytest"`, "use
    the `read_file` tool") with the value it gives the tool's main argument, if any. A tool
    merely mentioned ("I ran it with run_cmd") is not a call."""
    for name, main_arg in tools.items():
        word = re.escape(name)
        given = re.search(rf"(?<![\w.]){word}`?\s*(?:\(\s*(?:\w+\s*=\s*)?|\s)[\"'`]([^\"'`\n]+)", text)
        if given is not None:
            return name, given.group(1) if main_arg else None
        if re.search(rf"(?<![\w.]){word}\s*\(|\b(?:use|call|run)\s+(?:the\s+)?`?{word}\b", text, re.I):
            return name, None
    return None


def _start_first(j: Judged) -> Fields | None:
    """send_input named with a command when no program waits: the model's command, to start."""
    e = j.evidence
    named = named_call(j.reply, e.tools) if j.reply else None
    if named is None or named[0] != "send_input" or e.waiting is not None or "run_cmd" not in e.tools:
        return None
    value = named[1]
    return {"call": Offer("run_cmd", {"command": value})} if value and looks_like_command(value) else None


def _named(j: Judged) -> Fields | None:
    e = j.evidence
    named = named_call(j.reply, e.tools) if j.reply else None
    if named is None:
        return None
    tool, value = named
    main_arg = e.tools.get(tool)
    form: object = ""
    if value is not None and main_arg:
        form = Offer(tool, {main_arg: value})
    return {"tool": tool, "question": _question(j), "form": Nested(NAMED_FORM) if form else "", "call": form}


def _told_to_open(j: Judged) -> Fields | None:
    """Steps that tell the user to open a project file and look, naming the first such file
    the model has not read."""
    e = j.evidence
    if e.root is None or "read_file" not in e.tools or e.acted or not NUMBERED_STEPS.search(j.reply + "\n"):
        return None  # steps after a change are a summary ("1. Read the file ..."), not a task
    for match in _BACKTICKED.finditer(j.reply):
        path = (e.root / match.group(1)).resolve()
        if is_inside_root(path, e.root) and path.is_file() and path not in e.read_paths:
            return {"path": match.group(1)}
    return None


def _shows_instead_of_doing(j: Judged) -> Fields | None:
    """The reply shows or describes a change the request asked for, and nothing changed. A
    question asks for none: an answer that quotes the code in a fence is an answer."""
    e = j.evidence
    if not j.reply or e.acted or e.asks_question:
        return None
    reading = reading_of(e)
    shows = _FENCED_CODE.search(j.reply) or NUMBERED_STEPS.search(j.reply + "\n") or reading.change or reading.run
    if not shows:
        return None
    return {"what": NOT_RUN if e.asks_to_run else NOT_APPLIED}


def _unrun_answer(j: Judged) -> Fields | None:
    return {} if j.reply and j.evidence.asks_to_run and _ran_nothing(j.evidence) else None


def _files_left(find: Callable[[TurnEvidence], list[str]]) -> Callable[[Judged], Fields | None]:
    """A condition on an answer: the files `find` says the turn left undone, as `paths` (and
    `it`, the pronoun for them)."""
    def when(j: Judged) -> Fields | None:
        left = find(j.evidence) if j.reply else None
        return {"paths": " and ".join(left), "it": "them" if len(left) > 1 else "it"} if left else None
    return when


_named_unchanged = _files_left(named_unchanged)
_claimed_unchanged = _files_left(claimed_unchanged)
_new_file_missing = _files_left(missing_new_files)


def _unchecked(j: Judged) -> Fields | None:
    return {"path": j.evidence.unchecked} if j.evidence.unchecked is not None else None


def unseen_number(e: TurnEvidence, text: str, bare: bool = False) -> str | None:
    """A number `text` states that neither the request nor any result of this turn showed,
    nor could be worked out from what they showed (`derived_numbers`: a unit conversion, a
    sum, a percentage, a small count, a year), and that is no count of things it names ("14
    files"); None when every one may be honest. `bare`: the text is a file's content,
    checked even before any call."""
    if e.calls == 0 and not bare:
        return None  # look_first covers an answer given without looking
    known = e.request + "\n" + "\n".join(e.seen)
    if not _SAYS_LINE.search(text):  # "3" from the `3| MAX = 4` of a file is no value
        known = LINE_PREFIXES.sub("", known)
    seen = SeenNumbers(m.group() for m in _ANY_NUMBER.finditer(known))
    stated = _LIST_MARKER.sub("", text)
    for m in _ANY_NUMBER.finditer(stated):
        after = stated[m.end():]
        if not (seen.explains(m.group(), after) or COUNT_WORDS.match(after)):
            return m.group()
    return None


def _unseen(j: Judged) -> Fields | None:
    number = unseen_number(j.evidence, j.reply) if j.reply else None
    return {"number": number} if number is not None else None


def _no_number(j: Judged) -> Fields | None:
    e = j.evidence
    if not j.reply or not e.calls or not e.asks_question or not reading_of(e).wants_number:
        return None
    return None if gives_number(j.reply, e.request) else {}


# ---------------------------------------------------------------- the table


def _waits(e: TurnEvidence) -> int:
    return e.inputs_sent


RULES: tuple[Rule, ...] = (
    Rule("echo", "echo", ECHOED, _echo, stops=True),
    Rule("result_first_offer", "empty", RESULT_FIRST_OFFER, _result_first_offer, once="result_first"),
    Rule("result_first_new_file", "empty", RESULT_FIRST_NEW_FILE, _result_first_new_file, once="result_first"),
    Rule("result_first_after_read", "empty", RESULT_FIRST_AFTER_READ, _result_first_after_read, once="result_first"),
    Rule("result_first_changed", "empty", RESULT_FIRST + "{changed}", _result_first_changed, once="result_first"),
    Rule("result_first", "empty", RESULT_FIRST_NEXT, _result_first),
    Rule("empty_after_offer", "empty", EMPTY_AFTER_OFFER, _empty_after_offer),
    Rule("empty_changed", "empty", "Your reply was empty. {changed}", _empty_changed, once="empty"),
    Rule("empty", "empty", EMPTY_REPLY, _empty_reply),
    Rule("shown_again", "shown", OFFER_AGAIN, _shown_again),
    Rule("shown", "shown", SHOWN_COMMAND, _shown),
    Rule("look", "look", LOOK_FIRST, _look_first),
    Rule("waiting", "waiting", STILL_WAITING + "{played}", _still_waiting, repeats=_waits),
    Rule("played", "waiting", PLAYED + "{played}", _played),
    Rule("version", "version", "{shown}", _version),
    Rule("failure", "failure", AFTER_FAILURE, _after_failure),
    Rule("claimed", "claimed", CLAIMED_RUN, _claimed_run),
    Rule("start_first", "named", START_FIRST, _start_first, once="named"),
    Rule("named", "named", NAMED_NOT_CALLED, _named),
    Rule("open", "open", OPEN_IT_YOURSELF, _told_to_open),
    Rule("apply", "apply", "{what}", _shows_instead_of_doing),
    Rule("unrun", "claimed", UNRUN_ANSWER, _unrun_answer, once="claimed"),
    Rule("claimed_change", "claimed", CLAIMED_UNCHANGED, _claimed_unchanged),
    Rule("new_file_missing", "named_files", NEW_FILE_MISSING, _new_file_missing),
    Rule("named_files", "named_files", NAMED_UNCHANGED, _named_unchanged),
    Rule("check", "check", UNCHECKED, _unchecked),
    Rule("unseen", "unseen", UNSEEN_NUMBER, _unseen),
    Rule("no_number", "number", NO_NUMBER, _no_number),
)
"""In order: the first rule that holds (and is not spent, off, or for another profile) is sent."""

RULE_LEVERS = tuple(dict.fromkeys(rule.lever for rule in RULES))

