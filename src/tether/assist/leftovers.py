"""After a change: a name the request names that the change took out of a file, still in others.

"Rename calc_total to compute_total" done in the file that defines it, not in the two that
call it; "remove the --legacy option" taken out of the parser, still in the README and the
shell script. The model answers that it is done because nothing it looked at says otherwise.
So when a reply would end a turn that changed files, the harness searches the project for
each name the request names (`RequestReading.code_names`) that one of the turn's changes
removed: an edit whose old text held the name and whose new text does not, or a write of a
file that, as the turn read it, held the name. The search is a `search_in_file` call through
the dispatcher (its rules, hooks and evidence apply as to the model's own), and the places
left go back to the model once, to change them too or to answer why they stay.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.messages import Evidence, ToolCall, new_call_id
from ..engine.turn_assist import GateVerdict
from .request import RequestReading
from .verify import CHECK_ID, Dispatch

PLACES_SHOWN = 12
LEFT_OVER = (
    "Your change took `{name}` out of {changed}, but the harness searched the project and "
    "`{name}` is still in:\n{places}\n"
    "If the request means these too, change each of them now; if they should stay as they are, "
    "answer and say why."
)
_MATCH_LINE = re.compile(r"^(?P<path>[^\n:]+):(?P<line>\d+): ", re.M)


SHORTEST_SEARCHED = 3
"""Names shorter than this (`-v`, `id`) are searched for only in the files the request
names: across a project they match everywhere."""


@dataclass(frozen=True)
class Removal:
    """A name a change of the turn took out of a file."""

    name: str
    path: str
    """The file, as the call named it."""
    definition: bool = False
    """What the change took out defined the name (`def name`, `class name`, a module-level
    `name =`): what uses it elsewhere is left pointing at nothing."""


def has_word(name: str, text: str) -> bool:
    """`name` occurs in `text` as a whole name (`total` is not in `subtotal` or `total_2`)."""
    return re.search(_whole(name), text) is not None


def _whole(name: str) -> str:
    return rf"(?<![\w-]){re.escape(name)}(?![\w-])"


def defines(name: str, text: str) -> bool:
    """`text` defines `name`: a function, class or type by its keyword, a constant or
    variable set at the start of a line (a module's, not a function's local), or a setting's
    key (`max_retries: 3` in YAML, `"max_retries": 3` in JSON, a field `max_retries: int`), or
    a shell function (`bump_part() {`)."""
    word = re.escape(name)
    keyword = (r"(?:export\s+)?(?:(?:async|pub|public|private|protected|static)\s+)*"
               r"(?:def|class|function|func|fn|struct|enum|interface|trait|type|module)")
    top = r"(?:export\s+)?(?:(?:const|let|var)\s+)?"
    key = rf"^[ \t]*(?:-[ \t]+)?[\"']?{word}[\"']?[ \t]*:(?!:)"
    shell = rf"^[ \t]*{word}[ \t]*\(\)[ \t]*\{{"
    return re.search(rf"^[ \t]*{keyword}[ \t]+{word}\b|^{top}{word}[ \t]*(?::[^=\n]*)?=(?!=)|{key}|{shell}",
                     text, re.M) is not None


def removals(reading: RequestReading, evidence: Sequence[Evidence]) -> list[Removal]:
    """The request's names that a successful change of the turn took out of a file, in order;
    not one a later change of the file put back ("keep calc_total as an alias")."""
    found: dict[tuple[str, str], Removal] = {}
    read_texts: dict[str, str] = {}
    for record in evidence:
        args, name = record.call.arguments, record.call.name
        path = str(args.get("filepath", ""))
        if record.error or not path:
            continue
        if name == "read_file":
            read_texts[path] = read_texts.get(path, "") + record.result
            continue
        before, after = _before_and_after(name, args, read_texts.get(path, ""))
        for code_name in reading.code_names:
            if has_word(code_name, after):
                found.pop((code_name, path), None)
            elif has_word(code_name, before):
                found.setdefault((code_name, path), Removal(code_name, path, defines(code_name, before)))
    return list(found.values())


def _before_and_after(tool: str, args: dict[str, object], read_text: str) -> tuple[str, str]:
    """What a change replaced and what it put there ("", "" for a call that changes nothing)."""
    if tool == "edit_file":
        return str(args.get("old_content") or ""), str(args.get("new_content") or "")
    if tool == "write_file":
        return read_text, str(args.get("content") or "")
    return "", ""


def search_call(name: str) -> ToolCall:
    """The harness's search of the whole project for `name` as a whole name, in its own case
    (search_in_file reads a pattern with no capital in any case: `debug` is no `DEBUG`)."""
    pattern = f"(?-i:{_whole(name)})"
    return ToolCall(f"{CHECK_ID}_{new_call_id()}", "search_in_file", {"pattern": pattern, "path": "."})


def places_left(result: str, reading: RequestReading, anywhere: bool = False) -> list[str]:
    """The matching lines of a search's result in the files the request is about and does
    not keep as they are (the files it says to leave alone; the tests, when it says to leave
    them). The files it names, when it names any ("rename fetch in api.py" is about api.py),
    unless the change is `anywhere`'s (see `project_wide`)."""
    lines = []
    for match in _MATCH_LINE.finditer(result):
        path = match.group("path")
        if reading.keeps(path) or _history(path) or (reading.files and not anywhere and path not in reading.files):
            continue
        end = result.find("\n", match.start())
        lines.append(result[match.start(): end if end >= 0 else len(result)])
    return lines


def places_anywhere(result: str) -> bool:
    """A search's result names at least one matching line."""
    return _MATCH_LINE.search(result) is not None


HISTORY_FILES = frozenset({"changelog", "changes", "history", "news", "releases", "release_notes", "release-notes"})
"""A project's record of past releases: the old name there is what those releases had."""


def _history(path: str) -> bool:
    return posixpath.basename(path).split(".", 1)[0].lower() in HISTORY_FILES


def project_wide(reading: RequestReading, removals: Sequence[Removal]) -> bool:
    """Whether the places left anywhere in the project count, not only in the files the
    request names: it says so ("everywhere", "all callers"), the change took out a definition
    (its uses elsewhere now name nothing), or the name is an option (users and scripts pass it);
    never for a short name (`-v`)."""
    long_enough = all(len(r.name.strip("-")) >= SHORTEST_SEARCHED for r in removals)
    return long_enough and (reading.everywhere or any(r.definition or r.name.startswith("-") for r in removals))


def searched(name: str, reading: RequestReading) -> bool:
    """A name is searched for unless it is too short to mean one thing across a project that
    the request names no file of."""
    return bool(reading.files) or len(name.strip("-")) >= SHORTEST_SEARCHED


def left_over_message(name: str, changed: Sequence[str], places: Sequence[str]) -> str:
    return LEFT_OVER.format(name=name, changed=" and ".join(changed), places="\n".join(_capped(places)))


class AtTheAnswer:
    """A gate with nothing to say after a reply's calls: a change may take several steps, so
    it looks only when the model would answer."""

    async def after_calls(self, evidence: Sequence[Evidence]) -> GateVerdict:
        return GateVerdict()

    async def before_start(self) -> GateVerdict:
        return GateVerdict()

    async def checks_change(self, path: str) -> bool:
        return False

    def passed(self) -> bool:
        return False


EARLY_MAX = 8
"""The most notes on places left a turn's changes get (a rename across many files is said
with each change; a turn that keeps changing the same lines is not told forever)."""
STILL_IN = (
    "The harness searched the project: `{name}` is still in these lines:\n{places}\n"
    "If the request means them too, change each line with edit_file (old_content: the line as it "
    "is, without its path and number; new_content: the line as it should be; or `{name}` alone "
    "and the new name, to rename it throughout one file); if they should stay, say why."
)
GONE = "The harness searched the project: `{name}` is in no other place now."


def still_in_message(name: str, places: Sequence[str]) -> str:
    return STILL_IN.format(name=name, places="\n".join(_capped(places)))


def _capped(places: Sequence[str]) -> list[str]:
    shown = list(places[:PLACES_SHOWN])
    if len(places) > PLACES_SHOWN:
        shown.append(f"(and {len(places) - PLACES_SHOWN} more lines)")
    return shown


@dataclass
class LeftoverGate(AtTheAnswer):
    """One turn's search for the names its changes took out: with `early`, right after each
    change that took one out (the places left said with the change's result, when they differ
    from the last said); once when the turn would end (the places go back to the model); and
    when it would end again, the places still left are the answer's last line."""

    reading: RequestReading
    dispatch: Dispatch
    early: bool = False
    done: bool = False
    seen: int = 0
    """The evidence looked at after calls so far."""
    told: int = 0
    said: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each name's places as last said after a change."""
    ended: bool = False
    """The answer's last line on the places left was given (or none was due)."""

    async def after_calls(self, evidence: Sequence[Evidence]) -> GateVerdict:
        """With `early`: after calls that changed files, each name the turn's changes took out
        and still has places left (or had, when last said) is searched for, and the places
        left go with the last result as a note; nothing is asked."""
        fresh, self.seen = evidence[self.seen:], len(evidence)
        if not self.early or self.done or self.told >= EARLY_MAX:
            return GateVerdict()
        if not any(record.changed_paths for record in fresh):
            return GateVerdict()
        records, left = await self._left(removals(self.reading, evidence))
        messages = []
        for name in (*left, *(n for n in self.said if n not in left)):
            places = tuple(left.get(name, ()))
            if places == self.said.get(name, ()):
                continue
            messages.append(still_in_message(name, places) if places else GONE.format(name=name))
            if places:
                self.said[name] = places
            else:
                self.said.pop(name, None)
        if not messages:
            return GateVerdict(unshown=records)
        self.told += 1
        return GateVerdict(note="\n\n".join(messages), unshown=records)

    async def before_answer(self, evidence: Sequence[Evidence]) -> GateVerdict:
        """Once, the places left go back to the model; when it answers again with places
        still left, they are the answer's last line (the user reads what is not done)."""
        if self.ended:
            return GateVerdict()
        found = removals(self.reading, evidence)
        if not found:
            return GateVerdict()
        records, left = await self._left(found)
        if self.done:
            self.ended = True
            lines = [left_at_end_line(name, places) for name, places in left.items() if places]
            return GateVerdict(note="\n".join(lines), evidence=records)
        self.done = True
        messages = [left_over_message(name, list(dict.fromkeys(r.path for r in found if r.name == name)), places)
                    for name, places in left.items() if places]  # every name's places, in one message
        if not messages:
            self.ended = True  # nothing was left: nothing to say at the end
            return GateVerdict(evidence=records)
        names = ", ".join(f"`{name}`" for name, places in left.items() if places)
        notice = f"{names} still in places the change left: they go back to the model"
        return GateVerdict(again="\n\n".join(messages), evidence=records, notice=notice)

    async def _left(self, found: Sequence[Removal]) -> tuple[tuple[Evidence, ...], dict[str, list[str]]]:
        """The searches made, and each searched name's places left (the match lines)."""
        records: list[Evidence] = []
        left: dict[str, list[str]] = {}
        for name in dict.fromkeys(removal.name for removal in found if searched(removal.name, self.reading)):
            result, record = await self.dispatch(search_call(name))
            records.append(record)
            anywhere = project_wide(self.reading, [r for r in found if r.name == name])
            left[name] = [] if result.is_error else places_left(result.content, self.reading, anywhere)
        return tuple(records), left


LEFT_AT_END = "Not done: the harness searched the project, and `{name}` is still in {places}."


def left_at_end_line(name: str, places: Sequence[str]) -> str:
    """The answer's last line for a name still left: its files, each with its line numbers."""
    lines: dict[str, list[str]] = {}
    for place in places:
        match = _MATCH_LINE.match(place)
        if match is not None:
            lines.setdefault(match.group("path"), []).append(match.group("line"))
    shown = ", ".join(f"{path} (line{'s' if len(numbers) > 1 else ''} {', '.join(numbers)})"
                      for path, numbers in lines.items())
    return LEFT_AT_END.format(name=name, places=shown)
