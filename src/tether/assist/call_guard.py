"""Reasons to ask before a call runs: a write that would lose what the model never saw, a
made-up count, a change to a test the user may want left alone, a script that is not there.

Each reason is a pure reading of the call and a snapshot of the turn's evidence: `(kind,
message)` or None. One policy applies them all (coach.Coach.call_reason, ask once): the first
time a call has a reason not sent yet this turn, its result is that reason instead of running
it (a call whose first reason was sent may wait for its next one: a write over a kept test
file that deletes most of it); the identical call sent again runs. Nothing is refused for good.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..core.messages import ToolCall
from ..core.textclip import clip_words
from ..core.toolspec import ToolContext, ToolError
from ..engine.prompts import EXAMPLE_FILE
from ..engine.turn_record import TurnEvidence
from ..tools._paths import is_inside_root
from ..tools.nearby import closest_paths
from .reply_shapes import file_text, is_test_path
from .request import named_script, new_code_file, reading_of
from .rules import unseen_number

Reason = tuple[str, str]
"""(what the reason is about, to send it once per turn; the message)."""

UNREAD_OVERWRITE = (
    "{path} already exists and you had not read it, so it was not overwritten. {shown}"
    "Change only the part that needs changing: edit_file, or write_file again with the whole "
    "new content. (Send the same write_file again only if you really mean to replace it all.)"
)
UNREAD_SHOWN = "It holds now:\n{text}\n"
UNREAD_TOO_LONG = "Read it with read_file first. "
SHOW_UNREAD_CHARS = 3_000
"""A file this short is shown in the refusal, so the next call can be the right write."""
SHRINKING_WRITE = (
    "Not written: write_file replaces the whole file, and this content would delete {lost} of "
    "the {total} lines {path} has now. {shown}To add to the file, send write_file again with the "
    "whole new file (the lines it has now and your new ones), or change one part with edit_file. "
    "(Send the same write_file again only if you really mean to delete those lines.)"
)
UNSEEN_WRITTEN = (
    "Not written: no tool result showed {number}, so it is not a count you looked up. Count "
    "with a tool first (run_cmd with `grep -c PATTERN FILE` prints the number of matching "
    "lines; search_in_file's last line says how many lines matched), then write the number "
    "it gave. (Send the same write_file again if the number is right.)"
)
_BARE_NUMBER = re.compile(r"\s*\d+(?:\.\d+)?\s*")
NO_SCRIPT_YET = (
    "Not run: {path} does not exist yet. The request asks you to write it: create it first with "
    "a write_file call holding its whole content, then run it."
)
NO_SCRIPT_PACKAGE = (
    "Not run: {path} does not exist, but {package} is a package with a __main__.py, so it runs as "
    "`python -m {package}`."
)
NO_SCRIPT = (
    "Not run: {path} does not exist in this project, so the command could only fail.{closest} "
    "Only run files the project has (they are listed in the first message); if the task needs "
    "nothing run, do not run anything: go on with the task itself."
)
_SCRIPT_RUN = re.compile(r"^(?:python3?|node|bash|sh|ruby|perl)\s+([\w./-]+\.(?:py|js|mjs|sh|rb|pl))(?:\s|$)")
SHRINK_CHECK_BYTES = 64 * 1024
"""Files up to this size are compared line by line before a whole-file write replaces them."""

SETTINGS_SUFFIXES = frozenset({".toml", ".json", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".env"})
SETTINGS_LINES_LOST = 3
"""A whole-file write of a settings file that loses this many lines waits, even when most stay:
a small model asked to change one value rewrites the file without the section it just edited."""


def _drops_settings(e: TurnEvidence, path: Path, lost: int) -> bool:
    """Whether a write loses several lines of a settings file when the request asks to remove
    nothing."""
    if lost < SETTINGS_LINES_LOST or reading_of(e).removes:
        return False
    return path.suffix.lower() in SETTINGS_SUFFIXES or path.name.startswith(".env")


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


def overwrite_refusal(e: TurnEvidence, path: Path, shown: str, readable: bool) -> Reason | None:
    """Why a whole-file write of an existing file not read this turn waits: small models
    rewrite a file from a guess and lose what they never saw. `readable`: the file may be
    shown in the reason (inside the project, no deny rule, not a key file)."""
    if path in e.read_paths or not path.is_file():
        return None
    if os.path.normpath(shown) in e.written:
        return None  # it wrote the file itself this turn (a second write of its own)
    current = _current_text(path) if readable else UNREAD_TOO_LONG
    return f"unread:{path}", UNREAD_OVERWRITE.format(path=shown, shown=current)


def shrink_refusal(e: TurnEvidence, path: Path, shown: str, content: str) -> Reason | None:
    """Why a whole-file write that would delete most of a file waits: a small model asked to
    add a function writes only the new one, and the rest is gone."""
    if not path.is_file():
        return None
    old = file_text(path, SHRINK_CHECK_BYTES)
    if old is None:
        return None
    lost, total = lines_lost(old, content)
    if total < 3 or not (lost * 2 > total or _drops_settings(e, path, lost)):
        return None
    message = SHRINKING_WRITE.format(lost=lost, total=total, path=shown, shown=_current_text(path))
    return f"shrink:{path}", message


DROPPED_DEFINITIONS = (
    "Not changed: this edit removes {names} from {path}, and the request asks to add, not "
    "to remove. new_content replaces old_content, so to add code keep the old lines in it. "
    "(Send the same edit again only if you really mean to remove them.)"
)
_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.M)


def dropped_definitions(e: TurnEvidence, call: ToolCall, shown: str) -> Reason | None:
    """Why an edit that drops a function or class waits, for a request to add something: a
    small model asked to add a function puts it in place of the one its old_content named."""
    old, new = call.arguments.get("old_content"), call.arguments.get("new_content")
    reading = reading_of(e)
    if not (isinstance(old, str) and isinstance(new, str)) or not reading.adds or reading.takes_away:
        return None
    kept = set(_DEFINITION.findall(new))
    gone = [name for name in dict.fromkeys(_DEFINITION.findall(old)) if name not in kept]
    if not gone:
        return None
    return f"dropped:{shown}", DROPPED_DEFINITIONS.format(names=", ".join(f"{n}()" for n in gone), path=shown)


def unseen_written(e: TurnEvidence, content: str) -> Reason | None:
    """Why a new file holding only a number no result showed waits: asked to count into a
    file, a small model writes a number it made up."""
    if not _BARE_NUMBER.fullmatch(content) or unseen_number(e, content.strip(), bare=True) is None:
        return None
    return "written", UNSEEN_WRITTEN.format(number=content.strip())


KEEP_TESTS = (
    "Not changed yet: the request may ask you to leave the tests as they are, and {path} is an "
    "existing test. If the code it tests is what is wrong, fix that code instead: run the tests "
    "with run_cmd, read which function fails and why, then edit that function's file. (If the "
    "request does mean this test to change, send the same call again: it will run.)"
)


KEEP_FILE = (
    "Not changed yet: the request says to leave {path} as it is. Change the other files the "
    "request is about instead (if {path} is a test, fix the code it tests: run it with run_cmd, "
    "read which function fails and why, then edit that function's file). (If the request does "
    "mean {path} to change, send the same call again: it will run.)"
)


def keep_tests_refusal(e: TurnEvidence, filepath: str, ctx: ToolContext) -> Reason | None:
    """KEEP_FILE for a change to a file the request names as one to leave as it is ("don't
    change app_test.py"); KEEP_TESTS for one to an existing test file (a new test changes no
    existing one) when the request seems to say to leave the tests alone: small models make a
    failing test pass by editing it. The request's words are read by a pattern, so the model
    decides."""
    reading = reading_of(e)
    relative = _project_relative(filepath, ctx)
    if not reading.keeps(relative) or not _exists(filepath, ctx):
        return None
    message = KEEP_FILE if reading.keeps_by_name(relative) else KEEP_TESTS
    return "keep_tests", message.format(path=filepath)


def _project_relative(filepath: str, ctx: ToolContext) -> str:
    """The path as the request names files (project-relative), however the call named it
    (`/abs/project/app_test.py`, `./app_test.py`)."""
    try:
        return os.path.relpath(ctx.resolve(filepath), ctx.root.resolve())
    except (OSError, RuntimeError, ValueError, ToolError):
        return filepath


def _exists(filepath: str, ctx: ToolContext) -> bool:
    try:
        return ctx.resolve(filepath).exists()
    except (OSError, RuntimeError, ValueError, ToolError):
        return False


RUN_NOT_CHANGE = (
    "Not changed yet: the request may only ask you to run the program and report what it does. "
    "If so, run it as it is with run_cmd (answer its questions with send_input), then answer "
    "from what it prints. (If the task does need {path} changed, send the same call again: it "
    "will run.)"
)
SAME_EDIT = (
    "Not changed: old_content and new_content are the same text, so this edit of {path} "
    "would change nothing. The request is: \"{request}\". Send the edit again with that "
    "change made in new_content."
)
REQUEST_SHOWN = 300
"""Characters of the request a reason repeats (a small model loses it after a long read)."""


def same_edit(e: TurnEvidence, call: ToolCall, filepath: str) -> Reason | None:
    """Both halves of an edit are the same text: a small model copies the file it just read
    into both (a change of spacing alone may be what was asked, so it is no copy)."""
    old, new = call.arguments.get("old_content"), call.arguments.get("new_content")
    if not (isinstance(old, str) and isinstance(new, str) and old == new):
        return None
    return f"same:{filepath}", SAME_EDIT.format(path=filepath, request=clip_words(e.request, REQUEST_SHOWN))


SAME_WRITE = (
    "Not written: {path} already holds this text, line for line, so this write would change "
    "nothing. The request is: \"{request}\". Send write_file again with that change made in "
    "the content."
)
COPIED_WRITE = (
    "Not written: this content is {source} as you read it, line for line, so {path} would "
    "be a copy of it. The request is: \"{request}\". Write {path} with the content that "
    "request needs. (If a copy is what the request asks for, send the same write_file again.)"
)


def _lines(text: str) -> list[str]:
    """The text's lines without spacing at their ends and without blank lines around it: a
    model copying a file drops the spaces at line ends and the final newline."""
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def unchanged_write(e: TurnEvidence, path: Path, shown: str, content: str) -> Reason | None:
    """Why a whole-file write of the text a file already holds waits: a small model writes
    the file it has just read back as it is, and takes the result for the change made. Not
    for a file the turn wrote itself: the same write sent again says "Unchanged" and runs
    (held back, a model changed the right count it had written to a wrong one)."""
    lines = _lines(content)
    if not lines or os.path.normpath(shown) in e.written:
        return None
    old = file_text(path, SHRINK_CHECK_BYTES)
    if old is None or _lines(old) != lines:
        return None
    return f"unchanged:{path}", SAME_WRITE.format(path=shown, request=clip_words(e.request, REQUEST_SHOWN))


def copied_write(e: TurnEvidence, path: Path, shown: str, content: str) -> Reason | None:
    """Why a write of another file's text, as the turn read it, waits: asked for a new
    script like an existing one (or a test beside the code), a small model writes the file
    it read, unchanged, under the new name."""
    lines = _lines(content)
    if not lines:
        return None
    for source in sorted(e.read_paths - {path}):
        text = file_text(source, SHRINK_CHECK_BYTES)
        if text is not None and _lines(text) == lines:
            return f"copy:{path}", COPIED_WRITE.format(
                source=e.touched.get(source) or source.name, path=shown,
                request=clip_words(e.request, REQUEST_SHOWN))
    return None


def missing_script(call: ToolCall, ctx: ToolContext, looked_at: Iterable[str] = (),
                   to_create: str | None = None) -> str | None:
    """Why `python hello.py` is not run when the project has no hello.py: small models run
    the file of the prompt's example, or a name they guessed, and then flounder over the
    error. The reason names the closest files that do exist, or else the project's files
    of that kind (those the turn looked at first), so the next call has a real file to run;
    a package with a __main__.py is named as one that runs with `python -m`. The file the
    request asks to create (`to_create`) is named as that: write it first."""
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
    if to_create is not None and os.path.normpath(match.group(1)) == os.path.normpath(to_create):
        return NO_SCRIPT_YET.format(path=match.group(1))
    package = script.with_suffix("")
    if script.suffix == ".py" and (package / "__main__.py").is_file():
        return NO_SCRIPT_PACKAGE.format(path=match.group(1), package=match.group(1)[:-3].replace("/", "."))
    close = closest_paths(script, ctx.root)
    if close:
        closest = f" Closest existing paths: {', '.join(close)}."
    else:
        kind = same_kind_files(ctx, script.suffix, looked_at)
        closest = f" The project's {script.suffix} files: {', '.join(kind)}." if kind else ""
    if script.name == EXAMPLE_FILE:
        closest = f" {EXAMPLE_FILE} is the instructions' example, not a file of this project." + closest
    return NO_SCRIPT.format(path=match.group(1), closest=closest)


def same_kind_files(ctx: ToolContext, suffix: str, looked_at: Iterable[str], limit: int = 5) -> list[str]:
    """Up to `limit` project files with this suffix, tests left out, the ones the turn
    looked at (as the model named them) first."""
    first = [shown for shown in looked_at if Path(shown).suffix == suffix]
    found = sorted(name for name in ctx.files.names() if name.endswith(suffix))
    others = [name for name in found if not is_test_path(name) and name not in first]
    return list(dict.fromkeys(first + others))[:limit]


def run_not_change(e: TurnEvidence, filepath: str, ctx: ToolContext) -> Reason | None:
    """RUN_NOT_CHANGE for a change to an existing file when the request asks only to run a
    script the project has: asked to run a script and answer its questions, a small model
    may rewrite the script instead. "start server.py and debug why it crashes" may well need
    db.py changed: the reason is sent once, and the call sent again runs."""
    if not e.asks_to_run or named_script(reading_of(e), ctx.root) is None:
        return None
    return "run_not_change", RUN_NOT_CHANGE.format(path=filepath)


def call_reasons(e: TurnEvidence, call: ToolCall, ctx: ToolContext) -> Iterator[Reason]:
    """Why a call should wait, before it runs, the most telling reason first (none: no
    reason), each worked out only when the one before it was passed over. The reasons are
    read from the call and what the turn has done."""
    if call.name == "run_cmd":
        to_create = new_code_file(reading_of(e), e.root)
        missing = missing_script(call, ctx, e.touched.values(), to_create)
        if missing:
            yield "missing:" + str(call.arguments.get("command")), missing
        return
    filepath = call.arguments.get("filepath")
    if call.name not in ("write_file", "edit_file") or not isinstance(filepath, str):
        return
    yield from _found(lambda: keep_tests_refusal(e, filepath, ctx),
                      lambda: run_not_change(e, filepath, ctx) if _exists(filepath, ctx) else None)
    if call.name == "edit_file":
        yield from _found(lambda: same_edit(e, call, filepath),
                          lambda: dropped_definitions(e, call, filepath))
        return
    try:
        path = ctx.resolve(filepath).resolve()
    except (OSError, RuntimeError, ValueError, ToolError):  # the call itself will say why
        return
    content = call.arguments.get("content")
    if isinstance(content, str) and not path.exists():
        yield from _found(lambda: unseen_written(e, content), lambda: copied_write(e, path, filepath, content))
        return
    readable = is_inside_root(path, ctx.root) and ctx.may_read(path)
    yield from _found(lambda: overwrite_refusal(e, path, filepath, readable))
    if readable and isinstance(content, str):
        yield from _found(lambda: unchanged_write(e, path, filepath, content),
                          lambda: shrink_refusal(e, path, filepath, content),
                          lambda: copied_write(e, path, filepath, content))


def _found(*checks: Callable[[], Reason | None]) -> Iterator[Reason]:
    """The reasons `checks` find, in order; a check runs only when the caller asks for more
    (the coach stops at the first reason it has not sent this turn)."""
    for check in checks:
        reason = check()
        if reason is not None:
            yield reason
