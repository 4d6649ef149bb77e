"""Nudges: one short message from the harness when a small model stops too early.

Small models end a turn in the same few ways: they answer without looking, send
an empty reply, show a fix instead of applying it, give up after one failed call,
or repeat the same failing call. When a reply ends the turn in one of those ways,
the loop sends the matching nudge as a user message and asks again. Each nudge is
sent at most once per turn, and a nudge never makes a call: the model decides.
"""

from __future__ import annotations

import re

from .after_change import change_made
from .answer_checks import PASS_CLAIM, RAN_CLAIM
from .named_files import named_unchanged_nudge
from .offers import told_to_open, unseen_number_nudge
from .reply_shapes import (
    CHANGE_VERBS,
    NUMBERED_STEPS,
    RUN_VERBS,
    asks_for_number,
    gives_number,
    looks_like_command,
    requested_new_file,
    shown_command,
)
from .shown_code import version_nudge
from .turn_watch import SHORT_CHAT, TurnWatch

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
REPEATED_CALL = (
    "(You already made this exact call in this turn, and its result above has not changed. "
    "Do not send it again: use what it showed. Make a different call, or give the final answer.)"
)
MAX_EMPTY_OFFERS = 3
"""The most calls an empty reply is given again in one turn (each a different call)."""
CLAIMED_RUN = (
    "Your answer says it ran, but no command ran in this turn: nothing was run, so its "
    "output is not known. Run it with run_cmd, then answer from what it prints."
)
UNRUN_ANSWER = (
    "The request asks you to run it, but no command ran in this turn, so this answer is not "
    "from its output. Run it with run_cmd, then answer from what it prints."
)

_FENCED_CODE = re.compile(r"^[ \t]*```", re.M)
_ACTION_WORDS = re.compile(rf"\b({CHANGE_VERBS}|{RUN_VERBS})\b", re.I)


def _named_call(text: str, tools: dict[str, str | None]) -> tuple[str, str | None] | None:
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


def echoes(text: str, nudged: list[str]) -> bool:
    """The reply repeats a nudge word for word: small models echo the harness's note
    (the final answer "The task is not done: ..."), which answers nothing."""
    flat = " ".join(text.split())
    return any(" ".join(sent.split())[:_ECHO_CHARS] in flat for sent in nudged)


def shown_command_nudge(watch: TurnWatch, text: str) -> str | None:
    """The nudge for a command shown to the user instead of run (once per turn)."""
    command = shown_command(text)
    if command is None or command in watch.commands or watch.show_call is None:
        return None
    if re.split(r"[\s(]", command, maxsplit=1)[0] in watch.tools:
        return None  # a tool written as a command: the named-not-called nudge's case
    if "run_cmd" not in watch.tools:
        return None
    if "shown" in watch.sent:  # shown again after its call was written out: once more, firmly
        again = bool(watch.offered) and command in watch.offered and watch.once("again")
        return OFFER_AGAIN.format(call=watch.offered) if again else None
    watch.once("shown")
    question = FIND_IT_YOURSELF if watch.asks_question() else ""
    call = watch.offer("run_cmd", {"command": command})
    return SHOWN_COMMAND.format(command=command, call=call, question=question)


def claimed_run_nudge(watch: TurnWatch, text: str, plain: bool = False) -> str | None:
    """The nudge for an answer that says it ran something when nothing ran this turn, or that
    answers a request to run something ("play guess.py and tell me the prize code") before
    anything ran (once per turn), with the run_cmd call for the script the request names, if
    it names one: the model copies the worked example's last line, "Done: ... (I ran it).",
    or makes up what the program would print, without running it. An answer that claims
    nothing gets it only when `plain` (the plainer nudges had their turn)."""
    if watch.commands or "run_cmd" not in watch.tools or watch.calls == 0:
        return None
    claims = bool(RAN_CLAIM.search(text) or PASS_CLAIM.search(text))
    if not (claims or watch.asks_to_run() and plain) or not watch.once("claimed"):
        return None
    return CLAIMED_RUN if claims else UNRUN_ANSWER


def waiting_answer(watch: TurnWatch, text: str) -> str:
    """When the reply plays the waiting program's dialogue itself ("Your guess: 25 / Too
    low. / ..."), the send_input call for its first answer to the program's question: the
    model's own answer, sent where it belongs instead of the rest it invented. "" when the
    reply holds no answer after the question the program asked."""
    prompt = watch.waiting_prompt.strip()
    if not prompt or watch.waiting is None or watch.show_call is None or "send_input" not in watch.tools:
        return ""
    match = re.search(rf"{re.escape(prompt)}[ \t]*([^\n]+)", text)
    value = match.group(1).strip().strip("`*") if match else ""
    if not value:
        return ""
    call = watch.offer("send_input", {"session": watch.waiting, "text": value})
    return WAITING_ANSWER.format(prompt=prompt, value=value, call=call)


def empty_reply_nudge(watch: TurnWatch, result_first: bool) -> str | None:
    """The nudge for an empty reply. One that began with a tool result (cut off by the text
    protocol's stop at the result marker: a small model writes the result it expects, often
    right after being given a call to send) is told so, once; any other empty reply gets the
    plain note once. After those, what is left to do (a program waiting for input, a failed
    call, a code change never run) gets its own nudge: an empty reply is no answer."""
    if result_first and watch.once("result_first"):
        if watch.offered:
            return RESULT_FIRST_OFFER.format(call=watch.offered)
        last = watch.last_call
        if last is not None and last.name == "read_file" and watch.asks_change():
            # it was about to write out the file it had read
            read = last.arguments.get("filepath", "the file")
            new = requested_new_file(watch.request, watch.root)
            if new is not None and new != read:  # not the read file: the one to create
                return RESULT_FIRST_NEW_FILE.format(path=read, new=new)
            return RESULT_FIRST_AFTER_READ.format(path=read)
        return RESULT_FIRST + changed if (changed := change_made(watch)) else RESULT_FIRST_NEXT
    offers_sent = sum(kind.startswith("empty:") for kind in watch.sent)
    if watch.offered and offers_sent < MAX_EMPTY_OFFERS and watch.once(f"empty:{watch.offered}"):
        # again for each new call offered (a rename's next place): the model that sent one
        # offered call and replied empty to the next ended the turn with a file left
        return EMPTY_AFTER_OFFER.format(call=watch.offered)
    if watch.once("empty"):
        changed = change_made(watch)
        return f"Your reply was empty. {changed}" if changed else EMPTY_REPLY
    if watch.still_waiting():
        return STILL_WAITING.format(session=watch.waiting)
    if watch.last_failure is not None and watch.once("failure"):
        return AFTER_FAILURE.format(error=watch.last_failure)
    if watch.unchecked is not None and watch.once("check"):
        return UNCHECKED.format(path=watch.unchecked)
    return None











def nudge_for(watch: TurnWatch, reply_text: str, result_first: bool = False) -> str | None:
    """The message to send instead of ending the turn on this reply, or None.
    `result_first`: the reply began with a tool result (see loop.began_with_result)."""
    message = _pick(watch, reply_text.strip(), result_first)
    if message is not None:
        watch.nudged.append(message)
    return message


def _pick(watch: TurnWatch, text: str, result_first: bool) -> str | None:
    if echoes(text, watch.nudged):
        return ECHOED if watch.once("echo") else None
    if not text:
        return empty_reply_nudge(watch, result_first)
    shown = shown_command_nudge(watch, text)
    if shown is not None:
        return shown
    if watch.calls == 0 and len(watch.request.split()) >= SHORT_CHAT and watch.once("look"):
        return LOOK_FIRST
    if watch.still_waiting():
        return STILL_WAITING.format(session=watch.waiting) + waiting_answer(watch, text)
    if watch.waiting is not None and "played" not in watch.sent:  # once, even with no answer since
        played = waiting_answer(watch, text)
        if played and watch.once("played"):
            return PLAYED.format(session=watch.waiting) + played
    version = version_nudge(watch, text)
    if version is not None:
        return version
    if watch.last_failure is not None and watch.once("failure"):
        return AFTER_FAILURE.format(error=watch.last_failure)
    left = claimed_run_nudge(watch, text)
    if left is not None:
        return left
    named = _named_call(text, watch.tools)
    if named is not None and watch.once("named"):
        return _named_not_called(watch, *named)
    told = told_to_open(watch, text)
    if told is not None:
        return told
    if not watch.acted and _shows_instead_of_doing(watch, text) and watch.once("apply"):
        return NOT_RUN if watch.asks_to_run() else NOT_APPLIED
    unrun = claimed_run_nudge(watch, text, plain=True)
    if unrun is not None:
        return unrun
    untouched = named_unchanged_nudge(watch)
    if untouched is not None:
        return untouched
    if watch.unchecked is not None and watch.once("check"):
        return UNCHECKED.format(path=watch.unchecked)
    unseen = watch.unseen_number(text)
    if unseen is not None and (message := unseen_number_nudge(watch, unseen)) is not None:
        return message
    if watch.calls and watch.asks_question() and asks_for_number(watch.request) and not gives_number(text, watch.request) and watch.once("no_number"):
        return NO_NUMBER
    return None


def _named_not_called(watch: TurnWatch, tool: str, value: str | None) -> str:
    main_arg = watch.tools.get(tool)
    form = ""
    if tool == "send_input" and value and watch.waiting is None and looks_like_command(value):
        if watch.show_call is not None and "run_cmd" in watch.tools:
            return START_FIRST.format(call=watch.offer("run_cmd", {"command": value}))
    if value is not None and main_arg and watch.show_call is not None:
        form = NAMED_FORM.format(call=watch.offer(tool, {main_arg: value}))
    question = FIND_IT_YOURSELF if watch.asks_question() else ""
    return NAMED_NOT_CALLED.format(tool=tool, form=form, question=question)


def _shows_instead_of_doing(watch: TurnWatch, text: str) -> bool:
    """The reply shows or describes a change the request asked for. A question asks for
    none: an answer that quotes the code in a fence is an answer (nudging it made the
    model "apply" its answer to the file it quoted)."""
    if watch.asks_question():
        return False
    return bool(
        _FENCED_CODE.search(text)
        or NUMBERED_STEPS.search(text + "\n")
        or _ACTION_WORDS.search(watch.request)
    )
