"""Nudges: one short message from the harness when a small model stops too early.

Small models end a turn in the same few ways: they answer without looking, send
an empty reply, show a fix instead of applying it, give up after one failed call,
or repeat the same failing call. When a reply ends the turn in one of those ways,
the loop sends the matching nudge as a user message and asks again. Each nudge is
sent at most once per turn, and a nudge never makes a call: the model decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..tools._paths import is_inside_root
from ..tools.nearby import closest_paths
from .dispatch import first_line
from .messages import Evidence, ToolCall
from .reply_shapes import file_text, looks_like_command, shown_command, shown_version
from .toolspec import ToolContext, ToolError

OPENING_NOTE = (
    "(Do this yourself with the tools, one call at a time. Look at the files first; never "
    "guess. Reply with a tool call now.)"
)
LOOK_FIRST = (
    "You have not looked at anything yet. Check first: use list_dir, read_file or "
    "search_in_file (or run_cmd) to see the files, then act. Do not guess."
)
EMPTY_REPLY = "Your reply was empty. Continue: make the next tool call, or give your final answer."
NOT_APPLIED = (
    "The task is not done: you have only answered or described it. Do it now with the tools: "
    "reply with the next tool call only (write_file creates or replaces a file, edit_file "
    "changes part of one, run_cmd runs a command). If the task asked for no change, repeat "
    "your final answer."
)
NOT_RUN = (
    "The task is not done: you have only described it. Run it yourself now: reply with a "
    "run_cmd call only. A program that asks questions keeps running; answer it with "
    "send_input, one answer at a time, and read what it prints."
)
AFTER_FAILURE = (
    "Your last tool call failed ({error}). Do not stop here: fix the call or try another "
    "way, then finish the task. If it really cannot be done, say why."
)
UNSEEN_NUMBER = (
    "Your answer says {number}, but no tool result showed {number}. Check it with the tools "
    "(search for where it is set, read that file), then answer."
)
UNREAD_OVERWRITE = (
    "{path} already exists and you had not read it, so it was not overwritten. {shown}"
    "Change only the part that needs changing: edit_file, or write_file again with the whole "
    "new content. (Send the same write_file again only if you really mean to replace it all.)"
)
UNREAD_SHOWN = "It holds now:\n{text}\n"
UNREAD_TOO_LONG = "Read it with read_file first. "
SHOW_UNREAD_CHARS = 3_000
"""A file this short is shown in the refusal, so the next call can be the right write."""
UNCHECKED = (
    "You changed {path} but have not run anything since. Check your work first: run it, or "
    "its tests, with run_cmd and read the output. Then fix what is wrong, or answer."
)
CODE_SUFFIXES = frozenset({
    ".py", ".js", ".mjs", ".ts", ".sh", ".bash", ".rb", ".go", ".rs", ".java", ".kt", ".c",
    ".h", ".cc", ".cpp", ".cs", ".php", ".pl", ".lua", ".swift", ".r", ".jl",
})
"""Files whose change is worth running before the answer (a config value needs no run)."""
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
FIND_IT_YOURSELF = " Do not tell the user how to find the answer: find it yourself, then answer."
REPEATED_CALL = (
    "(You already made this exact call in this turn, and its result above has not changed. "
    "Do not send it again: use what it showed. Make a different call, or give the final answer.)"
)
SHRINKING_WRITE = (
    "Not written: write_file replaces the whole file, and this content would delete {lost} of "
    "the {total} lines {path} has now. {shown}To add to the file, send write_file again with the "
    "whole new file (the lines it has now and your new ones), or change one part with edit_file. "
    "(Send the same write_file again only if you really mean to delete those lines.){merged}"
)
SHRINK_MERGED = "\nTo keep the file and add your code at its end, reply with only:\n{call}\n"
VERSION_SHOWN = (
    "Your reply shows a new version of {path} but did not write it, so the file is unchanged. "
    "If that version is right, write it: reply with only:\n{call}\n(Or change only the lines "
    "that differ, with edit_file.)"
)
OPEN_IT_YOURSELF = (
    "Your reply tells the user to open {path} and look: do it yourself. To read it, reply with "
    "only:\n{call}\nThen answer from what it shows."
)
_BACKTICKED = re.compile(r"`([\w./-]+\.\w{1,5})`")
MAX_WAITING_NUDGES = 8
"""The most times a turn is told a program still waits (each after new input went to it)."""
RENAME_LEFT = (
    "The old name {old} is still in the project, so the rename is not done:\n{places}\n"
    "Rename it there too (edit_file), then check with search_in_file that {old} is gone."
)
RENAME_PLACES = 6
"""Lines of the old name shown in the rename nudge."""
_RENAME = re.compile(r"\brename\b(.*?)\s(?:to|into|as)\s+(.*)", re.I | re.S)
_RENAME_NOUNS = frozenset({
    "the", "a", "an", "setting", "function", "method", "class", "variable", "field", "key",
    "option", "constant", "module", "attribute", "parameter", "argument", "property", "everywhere",
})
UNSEEN_WRITTEN = (
    "Not written: no tool result showed {number}, so it is not a count you looked up. Count "
    "with a tool first (run_cmd with `grep -c PATTERN FILE` prints the number of matching "
    "lines; search_in_file's last line says how many lines matched), then write the number "
    "it gave.{last}"
)
LAST_COUNT = " Your last search said: {count}"
_COUNT_LINE = re.compile(r"^\(\d+ matching lines in \d+ files?\)$", re.M)
_BARE_NUMBER = re.compile(r"\s*\d+(?:\.\d+)?\s*")
NO_SCRIPT = (
    "Not run: {path} does not exist in this project, so the command could only fail.{closest} "
    "Only run files the project has (they are listed in the first message); if the task needs "
    "nothing run, do not run anything: go on with the task itself."
)
_SCRIPT_RUN = re.compile(r"^(?:python3?|node|bash|sh|ruby|perl)\s+([\w./-]+\.(?:py|js|mjs|sh|rb|pl))(?:\s|$)")
SHRINK_CHECK_BYTES = 64 * 1024
"""Files up to this size are compared line by line before a whole-file write replaces them."""
REPEATED_FAILURE = (
    "\n(Note: this is the same call that already failed. Repeating it will not help: "
    "change the arguments or do something else.)"
)

_FENCED_CODE = re.compile(r"^[ \t]*```", re.M)
_NUMBERED_STEPS = re.compile(r"^\s*1[.)]\s+\S.*\n(?:.*\n)*?\s*2[.)]\s+\S", re.M)
_CHANGE_VERBS = (
    "fix|change|edit|update|set|add|create|write|make|rename|replace|remove|delete|implement|"
    "refactor|move|save|append|insert|modify|bump|convert|raise|lower|scale|turn"
)
_CHANGE_WORDS = re.compile(rf"\b({_CHANGE_VERBS})\b", re.I)
_RUN_VERBS = "run|execute|play|register|start|launch"
_RUN_WORDS = re.compile(rf"\b({_RUN_VERBS})\b", re.I)
"""A request to run something ("run report.py and tell me the total?") is not a question
about the code: its answer comes from running it."""
_ACTION_WORDS = re.compile(rf"\b({_CHANGE_VERBS}|{_RUN_VERBS})\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])\d[\d,_]*\d(?:\.\d+)?(?![\w])")
"""Numbers of two digits or more: a one-digit one is too often a list item or a count."""
_ANY_NUMBER = re.compile(r"(?<![\w.])\d(?:[\d,_]*\d)?(?:\.\d+)?(?![\w])")
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s", re.M)
_BARE_ANSWER_WORDS = 4
"""A bare answer to a question ("2", "It is 2.") is checked even when its number has one
digit: small models answer "how many times does it retry?" with a guess like that. A longer
answer's one-digit numbers are too often counts of what it saw ("the notes list 3 items")."""
_REPLY_KEPT = frozenset({"apply"})
SEEN_TEXT_CAP = 400_000
_SHORT_CHAT = 3
"""A request of fewer words than this (a greeting, "thanks") needs no looking."""


def failed(evidence: Evidence) -> bool:
    """The call failed, or what it ran did (a non-zero exit, a timeout)."""
    summary = evidence.summary
    return evidence.error or summary == "timed out" or (
        summary.startswith("exit ") and not summary.startswith("exit 0")
    )


def _current_text(path: Path) -> str:
    """What the file holds, for a refusal to overwrite it unseen ("read it first", if long)."""
    text = file_text(path, SHOW_UNREAD_CHARS)
    return UNREAD_TOO_LONG if text is None else UNREAD_SHOWN.format(text=text.rstrip("\n"))


def lines_lost(old: str, new: str) -> tuple[int, int]:
    """(how many of `old`'s non-blank lines `new` no longer has, how many it had); indentation
    and order do not count, so a rewrite that keeps the code is not a loss."""
    kept = {line.strip() for line in new.splitlines()}
    old_lines = [line.strip() for line in old.splitlines() if line.strip()]
    return sum(line not in kept for line in old_lines), len(old_lines)


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


def occurrences(name: str, ctx: ToolContext) -> str:
    """The project's lines that hold `name` as a whole word, as search_in_file shows them (its
    rules apply: ignored, denied and binary files are skipped); "" when there are none."""
    from ..tools.file_search import SearchInFileParams, search_in_file  # the tool, only when asked

    try:
        output = search_in_file(SearchInFileParams(pattern=rf"\b{re.escape(name)}\b", path="."), ctx)
    except (ToolError, OSError):
        return ""
    return "" if output.summary.startswith("0 ") else output.text


def renamed_names(request: str) -> tuple[str, str] | None:
    """(old, new) when the request asks to rename one name to another ("rename the max_items
    setting to item_limit"); None otherwise."""
    match = _RENAME.search(request)
    if match is None:
        return None

    def names(words: str) -> list[str]:
        cleaned = (w.strip("`'\".,;:()") for w in words.split())
        return [w for w in cleaned if w.lower() not in _RENAME_NOUNS and re.fullmatch(r"[A-Za-z_][\w.-]*", w)]

    before, after = names(match.group(1)), names(match.group(2))
    if not before or not after or before[-1] == after[0]:
        return None
    return before[-1], after[0]


_QUESTION_START = re.compile(
    r"^\W*(how|what|which|where|why|when|who|whose|does|do|is|are|was|were|tell|explain|"
    r"describe|show|list|find|count)\b", re.I
)


def _is_question(request: str) -> bool:
    """A request that asks about the project and asks for no change ("how many times does
    it retry?", "which file decides ...?"); "can you fix the parser?" is not one."""
    text = request.strip()
    asks = text.endswith("?") or bool(_QUESTION_START.match(text))
    return asks and not _CHANGE_WORDS.search(text) and not _RUN_WORDS.search(text)


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
    warned_paths: set[Path] = field(default_factory=set)
    unchecked: str | None = None
    """The code file changed last since the last command that ran (None: checked or none)."""
    last_kind: str = ""
    """The kind of the last nudge sent ("look", "empty", "failure", "apply", "check", "unseen")."""
    tools: dict[str, str | None] = field(default_factory=dict)
    """The tools on offer and each one's main argument, to tell a call written as prose."""
    show_call: Callable[[str, dict[str, str]], str] | None = None
    """Renders a call as the protocol in use writes it (for the named-not-called nudge)."""
    shrink_warned: set[Path] = field(default_factory=set)
    root: Path | None = None
    """The project root, to tell a path the reply names from one it made up."""
    find: Callable[[str], str] | None = None
    """Where a name still occurs in the project ("path:line: text" lines, "" for nowhere)."""
    commands: set[str] = field(default_factory=set)
    """The commands run_cmd ran this turn (a command shown again is not suggested again)."""
    waiting: str | None = None
    """The session of the last command that is still waiting for input (None: none is)."""
    answered: bool = True
    """Input went to a program since the last waiting nudge (or none was sent yet)."""
    waiting_nudges: int = 0

    def saw(self, key: str, evidence: Evidence, changes_things: bool) -> None:
        """Record one finished call (`key`: its name and arguments)."""
        self.calls += 1
        if self.seen_chars < SEEN_TEXT_CAP:
            # the call's own arguments count as seen: a number in a path it named
            # (notes/meeting-2024-04-18.txt) was not made up
            seen = " ".join(str(v) for v in evidence.call.arguments.values()) + "\n" + evidence.result
            self.seen.append(seen)
            self.seen_chars += len(seen)
        if evidence.command is not None:
            waits = evidence.command.state == "waiting_for_input"
            self.waiting = evidence.command.session if waits else None
            self.answered = self.answered or evidence.call.name == "send_input"
        if evidence.call.name == "run_cmd":
            self.commands.add(str(evidence.call.arguments.get("command", "")).strip())
        if failed(evidence):
            self.last_failure = first_line(evidence.result, 160) or evidence.summary
            self.failures[key] = self.last_failure
            return
        self.last_failure = None
        self.acted = self.acted or changes_things
        tool = evidence.call.name
        if tool == "run_cmd":
            self.unchecked = None
        elif tool in ("write_file", "edit_file"):
            path = evidence.call.arguments.get("filepath")
            if isinstance(path, str) and Path(path).suffix.lower() in CODE_SUFFIXES:
                self.unchecked = path

    def saw_read(self, path: Path, shown: str) -> None:
        self.read_paths.add(path)
        self.touched[path] = shown

    def overwrite_refusal(self, path: Path, shown: str, readable: bool) -> str | None:
        """Why a whole-file write of an existing file not read this turn waits (once per path):
        small models rewrite a file from a guess and lose what they never saw. `readable`: the
        file may be shown in the refusal (inside the project, no deny rule, not a key file)."""
        if path in self.read_paths or path in self.warned_paths or not path.is_file():
            return None
        self.warned_paths.add(path)
        current = _current_text(path) if readable else UNREAD_TOO_LONG
        return UNREAD_OVERWRITE.format(path=shown, shown=current)

    def shrink_refusal(self, path: Path, shown: str, content: str) -> str | None:
        """Why a whole-file write that would delete most of a file waits (once per path): a
        small model asked to add a function writes only the new one, and the rest is gone."""
        if path in self.shrink_warned or not path.is_file():
            return None
        old = file_text(path, SHRINK_CHECK_BYTES)
        if old is None:
            return None
        lost, total = lines_lost(old, content)
        if total < 3 or lost * 2 <= total:
            return None
        self.shrink_warned.add(path)
        merged = ""
        if self.show_call is not None and len(old) + len(content) <= SHOW_UNREAD_CHARS:
            # what such a write almost always meant: the new code added to the old file
            whole = old.rstrip("\n") + "\n\n\n" + content.lstrip("\n")
            merged = SHRINK_MERGED.format(call=self.show_call("write_file", {"filepath": shown, "content": whole}))
        current = "" if merged else _current_text(path)  # the offered call holds the old text
        return SHRINKING_WRITE.format(lost=lost, total=total, path=shown, shown=current, merged=merged)

    def unseen_written(self, content: str) -> str | None:
        """Why a new file holding only a number no result showed waits (once per turn): asked
        to count into a file, a small model writes a number it made up."""
        if not _BARE_NUMBER.fullmatch(content) or self._unseen_number(content.strip(), bare=True) is None:
            return None
        if not self._once("written"):
            return None
        counts = [m.group() for seen in self.seen for m in _COUNT_LINE.finditer(seen)]
        last = LAST_COUNT.format(count=counts[-1]) if counts else ""
        return UNSEEN_WRITTEN.format(number=content.strip(), last=last)

    def repeat_note(self, key: str, evidence: Evidence) -> str:
        """The note for a result when this exact call had already failed (once per turn)."""
        if key in self.failures and failed(evidence) and self._once("repeat"):
            return REPEATED_FAILURE
        return ""

    def opening_note(self) -> str:
        """The reminder sent beside the request in the turn's first request ("" for chat)."""
        return OPENING_NOTE if len(self.request.split()) >= _SHORT_CHAT else ""

    def nudge(self, reply_text: str) -> str | None:
        """The message to send instead of ending the turn on this reply, or None."""
        text = reply_text.strip()
        if not text:
            return EMPTY_REPLY if self._once("empty") else None
        shown = self._shown_command(text)
        if shown is not None:
            return shown
        if self.calls == 0 and len(self.request.split()) >= _SHORT_CHAT and self._once("look"):
            return LOOK_FIRST
        if self._still_waiting():
            return STILL_WAITING.format(session=self.waiting)
        version = self._shown_version(text)
        if version is not None:
            return version
        if self.last_failure is not None and self._once("failure"):
            return AFTER_FAILURE.format(error=self.last_failure)
        named = _named_call(text, self.tools)
        if named is not None and self._once("named"):
            return self._named_not_called(*named)
        told = self._told_to_open(text)
        if told is not None:
            return told
        if not self.acted and self._shows_instead_of_doing(text) and self._once("apply"):
            return NOT_RUN if self._asks_to_run() else NOT_APPLIED
        left = self._rename_left()
        if left is not None:
            return left
        if self.unchecked is not None and self._once("check"):
            return UNCHECKED.format(path=self.unchecked)
        unseen = self._unseen_number(text)
        if unseen is not None and self._once("unseen"):
            return UNSEEN_NUMBER.format(number=unseen)
        return None

    def _shown_command(self, text: str) -> str | None:
        """The nudge for a command shown to the user instead of run (once per turn)."""
        command = shown_command(text)
        if command is None or command in self.commands or self.show_call is None:
            return None
        if re.split(r"[\s(]", command, maxsplit=1)[0] in self.tools:
            return None  # a tool written as a command: the named-not-called nudge's case
        if "run_cmd" not in self.tools or not self._once("shown"):
            return None
        question = FIND_IT_YOURSELF if _is_question(self.request) else ""
        call = self.show_call("run_cmd", {"command": command})
        return SHOWN_COMMAND.format(command=command, call=call, question=question)

    def _told_to_open(self, text: str) -> str | None:
        """The nudge for steps that tell the user to open a project file and look (once per
        turn), with the read_file call for the first such file the model has not read."""
        if self.root is None or self.show_call is None or "read_file" not in self.tools:
            return None
        if not _NUMBERED_STEPS.search(text + "\n"):
            return None
        for match in _BACKTICKED.finditer(text):
            path = (self.root / match.group(1)).resolve()
            if is_inside_root(path, self.root) and path.is_file() and path not in self.read_paths:
                if not self._once("open"):
                    return None
                call = self.show_call("read_file", {"filepath": match.group(1)})
                return OPEN_IT_YOURSELF.format(path=match.group(1), call=call)
        return None

    def _still_waiting(self) -> bool:
        """Whether to say the program still waits. Unlike the other nudges this one may come
        again in a turn, but only after the model answered the program since the last one (a
        guessing game takes several answers), so it cannot repeat without progress."""
        if self.waiting is None or not self.answered or self.waiting_nudges >= MAX_WAITING_NUDGES:
            return False
        self.answered, self.waiting_nudges, self.last_kind = False, self.waiting_nudges + 1, "waiting"
        return True

    def _rename_left(self) -> str | None:
        """The nudge for a rename that left the old name somewhere (once per turn): small
        models rename it in the file the request names and stop there."""
        names = renamed_names(self.request)
        if names is None or not self.acted or self.find is None:
            return None
        places = self.find(names[0])
        if not places or not self._once("rename"):
            return None
        shown = "\n".join(places.splitlines()[:RENAME_PLACES])
        return RENAME_LEFT.format(old=names[0], places=shown)

    def _shown_version(self, text: str) -> str | None:
        """The nudge for a new version of a file shown in a code block instead of written
        (once per turn), with the write_file call that would write it."""
        if self.show_call is None or "write_file" not in self.tools or _is_question(self.request):
            return None
        version = shown_version(text, self.touched)
        if version is None or not self._once("version"):
            return None
        path, content = version
        self.read_paths.update(p for p, shown in self.touched.items() if shown == path)
        call = self.show_call("write_file", {"filepath": path, "content": content})
        return VERSION_SHOWN.format(path=path, call=call)

    def _named_not_called(self, tool: str, value: str | None) -> str:
        main_arg = self.tools.get(tool)
        form = ""
        if tool == "send_input" and value and self.waiting is None and looks_like_command(value):
            if self.show_call is not None and "run_cmd" in self.tools:
                return START_FIRST.format(call=self.show_call("run_cmd", {"command": value}))
        if value is not None and main_arg and self.show_call is not None:
            form = NAMED_FORM.format(call=self.show_call(tool, {main_arg: value}))
        question = FIND_IT_YOURSELF if _is_question(self.request) else ""
        return NAMED_NOT_CALLED.format(tool=tool, form=form, question=question)

    def _unseen_number(self, text: str, bare: bool = False) -> str | None:
        """A number the answer states that neither the request nor any result of this turn
        showed (a made-up port, count or total); None when every one was seen. `bare`: check
        one-digit numbers too."""
        if self.calls == 0 and not bare:
            return None  # look_first covers an answer given without looking
        known = self.request + "\n" + "\n".join(self.seen)
        digits_seen = {m.group().replace(",", "").replace("_", "") for m in _ANY_NUMBER.finditer(known)}
        bare = bare or (len(text.split()) <= _BARE_ANSWER_WORDS and _is_question(self.request))
        checked = _ANY_NUMBER if bare else _NUMBER
        for m in checked.finditer(_LIST_MARKER.sub("", text)):
            number = m.group()
            if number.replace(",", "").replace("_", "") not in digits_seen:
                return number
        return None

    def _shows_instead_of_doing(self, text: str) -> bool:
        """The reply shows or describes a change the request asked for. A question asks for
        none: an answer that quotes the code in a fence is an answer (nudging it made the
        model "apply" its answer to the file it quoted)."""
        if _is_question(self.request):
            return False
        return bool(
            _FENCED_CODE.search(text)
            or _NUMBERED_STEPS.search(text + "\n")
            or _ACTION_WORDS.search(self.request)
        )

    def _asks_to_run(self) -> bool:
        """The request asks to run something and asks for no change to the files."""
        return bool(_RUN_WORDS.search(self.request)) and not _CHANGE_WORDS.search(self.request)

    def keeps_reply(self) -> bool:
        """Whether the reply the last nudge answers is worth keeping in the history. A wrong
        answer kept there anchors a small model, which repeats it; a fix shown in prose is
        kept, so the model can apply what it wrote."""
        return self.last_kind in _REPLY_KEPT

    def _once(self, kind: str) -> bool:
        if kind in self.sent:
            return False
        self.sent.add(kind)
        self.last_kind = kind
        return True


KEEP_TESTS = (
    "Not changed: the user asked you to leave the tests as they are, and {path} is a test. "
    "Fix the code it tests instead: run the tests with run_cmd, read which function fails "
    "and why, then edit that function's file."
)
_LEAVES_TESTS = re.compile(
    r"\b(?:without\s+(?:changing|touching|editing|modifying)|leave|leaving|keep|"
    r"(?:do\s+not|don'?t|never|not)\s+(?:change|touch|edit|modify))\b[^.;\n]{0,40}?\btests?\b",
    re.I,
)
_TEST_FILE = re.compile(
    r"(?:^|/)(?:tests?/|test_[^/]*$|[^/]*_test\.[a-z]+$|[^/]*\.(?:test|spec)\.[a-z]+$)", re.I
)


def leaves_tests(request: str) -> bool:
    """The request says to keep the tests unchanged ("without changing the test", "leave
    the tests themselves alone")."""
    return bool(_LEAVES_TESTS.search(request))


def is_test_path(shown: str) -> bool:
    return bool(_TEST_FILE.search(shown.replace("\\", "/")))


def missing_script(call: ToolCall, ctx: ToolContext) -> str | None:
    """Why `python hello.py` is not run when the project has no hello.py: small models run
    the file of the prompt's example, or a name they guessed, and then flounder over the
    error. The refusal names the closest files that do exist."""
    command = call.arguments.get("command")
    match = _SCRIPT_RUN.match(command.strip()) if isinstance(command, str) else None
    if match is None or match.group(1).startswith("/"):
        return None
    try:
        script = ctx.resolve(match.group(1))
        if script.exists():
            return None
    except (OSError, RuntimeError, ValueError, ToolError):
        return None
    close = closest_paths(script, ctx.root)
    closest = f" Closest existing paths: {', '.join(close)}." if close else ""
    return NO_SCRIPT.format(path=match.group(1), closest=closest)


def guard_call(watch: TurnWatch, call: ToolCall, ctx: ToolContext) -> str | None:
    """Why a call waits, before it runs (None: it runs). read_file marks a path as seen;
    write_file over an unseen existing file waits once, and so does one that would delete
    most of a file it has read. A change to a test file is refused whenever the request said
    to leave the tests alone: small models make a failing test pass by editing it."""
    if call.name == "run_cmd":
        return missing_script(call, ctx)
    filepath = call.arguments.get("filepath")
    if call.name not in ("read_file", "write_file", "edit_file") or not isinstance(filepath, str):
        return None
    if call.name != "read_file" and leaves_tests(watch.request) and is_test_path(filepath):
        return KEEP_TESTS.format(path=filepath)
    try:
        path = ctx.resolve(filepath).resolve()
    except (OSError, RuntimeError, ValueError, ToolError):  # the call itself will say why
        return None
    if call.name == "read_file":
        watch.saw_read(path, filepath)
        return None
    if call.name == "edit_file":
        watch.touched[path] = filepath  # a missed edit shows a short file whole
        return None
    content = call.arguments.get("content")
    if isinstance(content, str) and not path.exists():
        made_up = watch.unseen_written(content)
        if made_up is not None:
            return made_up
    readable = is_inside_root(path, ctx.root) and ctx.may_read(path)
    unread = watch.overwrite_refusal(path, filepath, readable)
    if unread is not None or not readable or not isinstance(content, str):
        return unread
    return watch.shrink_refusal(path, filepath, content)
