"""Guards before a call runs: a write that would lose what the model never saw, a made-up count,
a change to a test the user said to leave alone, a script that is not there.

Each returns why the call waits (its result instead of running it), or None. The turn's
TurnWatch says what the model has read and which guards it has had; a guard that holds a
call back once lets the same call through the second time, so the model decides.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from ..tools._paths import display_path, is_inside_root
from ..tools.nearby import closest_paths
from .count_scope import COUNT_LINE
from .failing_test import imported_project_names
from .messages import ToolCall
from .nudges import TurnWatch, requested_run
from .prompts import EXAMPLE_FILE
from .python_tree import parsed_python
from .reply_shapes import file_text, is_test_path, leaves_tests, requested_new_file
from .shown_code import version_nudge
from .textclip import clip_words
from .toolspec import ToolContext, ToolError

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
    "(Send the same write_file again only if you really mean to delete those lines.){merged}"
)
SHRINK_MERGED = "\nTo keep the file and add your code at its end, reply with only:\n{call}\n"
UNSEEN_WRITTEN = (
    "Not written: no tool result showed {number}, so it is not a count you looked up. Count "
    "with a tool first (run_cmd with `grep -c PATTERN FILE` prints the number of matching "
    "lines; search_in_file's last line says how many lines matched), then write the number "
    "it gave.{last}"
)
LAST_COUNT = " Your last search said: {count}"
_BARE_NUMBER = re.compile(r"\s*\d+(?:\.\d+)?\s*")
NO_SCRIPT_YET = (
    "Not run: {path} does not exist yet. The request asks you to write it: create it first with "
    "a write_file call holding its whole content, then run it."
)
INPUT_KEPT = (
    "Not changed: the request asks you to create {new}, and {path} is what it works on, so leave "
    "{path} as it is. Reply with only a write_file call for {new} with its whole content. (Send "
    "this call again only if the request really needs {path} changed.)"
)
DATA_SUFFIXES = frozenset({".csv", ".tsv", ".txt", ".log", ".dat", ".jsonl"})
NO_SCRIPT_PACKAGE = (
    "Not run: {path} does not exist, but {package} is a package with a __main__.py, so it runs as "
    "`python -m {package}`. To run that with the same arguments, reply with only:\n{call}"
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
_REMOVES = re.compile(r"\b(?:remove|delete|drop|strip|clear|empty|trim)", re.I)


def _drops_settings(watch: TurnWatch, path: Path, lost: int) -> bool:
    """Whether a write loses several lines of a settings file when the request asks to remove
    nothing."""
    if lost < SETTINGS_LINES_LOST or _REMOVES.search(watch.request):
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


def overwrite_refusal(watch: TurnWatch, path: Path, shown: str, readable: bool) -> str | None:
    """Why a whole-file write of an existing file not read this turn waits (once per path):
    small models rewrite a file from a guess and lose what they never saw. `readable`: the
    file may be shown in the refusal (inside the project, no deny rule, not a key file)."""
    if path in watch.read_paths or path in watch.warned_paths or not path.is_file():
        return None
    if os.path.normpath(shown) in watch.written:
        return None  # it wrote the file itself this turn (a second write of its own)
    watch.warned_paths.add(path)
    current = _current_text(path) if readable else UNREAD_TOO_LONG
    return UNREAD_OVERWRITE.format(path=shown, shown=current)


def shrink_refusal(watch: TurnWatch, path: Path, shown: str, content: str) -> str | None:
    """Why a whole-file write that would delete most of a file waits (once per path): a
    small model asked to add a function writes only the new one, and the rest is gone."""
    if path in watch.shrink_warned or not path.is_file():
        return None
    old = file_text(path, SHRINK_CHECK_BYTES)
    if old is None:
        return None
    lost, total = lines_lost(old, content)
    if total < 3 or not (lost * 2 > total or _drops_settings(watch, path, lost)):
        return None
    watch.shrink_warned.add(path)
    merged = ""
    settings = path.suffix.lower() in SETTINGS_SUFFIXES  # code added at the end is not what it meant
    if watch.show_call is not None and not settings and len(old) + len(content) <= SHOW_UNREAD_CHARS:
        # what such a write almost always meant: the new code added to the old file
        whole = old.rstrip("\n") + "\n\n\n" + content.lstrip("\n")
        merged = SHRINK_MERGED.format(call=watch.show_call("write_file", {"filepath": shown, "content": whole}))
    current = "" if merged else _current_text(path)  # the offered call holds the old text
    return SHRINKING_WRITE.format(lost=lost, total=total, path=shown, shown=current, merged=merged)

DROPPED_DEFINITIONS = (
    "Not changed: this edit removes {names} from {path}, and the request asks to add, not "
    "to remove. new_content replaces old_content, so to add code keep the old lines in it. "
    "To keep them and put your code after them, reply with only:\n{call}\n(Send the same "
    "edit again only if you really mean to remove them.)"
)
_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.M)
_ADDS = re.compile(r"\badd(?:s|ing)?\b", re.I)
_TAKES_AWAY = re.compile(r"\b(remove|delete|replace|rename|drop|instead of)\b", re.I)


def dropped_definitions(watch: TurnWatch, call: ToolCall, shown: str) -> str | None:
    """Why an edit that drops a function or class waits, for a request to add something
    (once per file): a small model asked to add a function puts it in place of the one its
    old_content named (slugify in place of title_case). The edit that keeps both is offered."""
    old, new = call.arguments.get("old_content"), call.arguments.get("new_content")
    if not (isinstance(old, str) and isinstance(new, str)) or not _ADDS.search(watch.request):
        return None
    if _TAKES_AWAY.search(watch.request):
        return None
    kept = set(_DEFINITION.findall(new))
    gone = [name for name in dict.fromkeys(_DEFINITION.findall(old)) if name not in kept]
    if not gone or watch.show_call is None or not watch.once(f"dropped:{shown}"):
        return None
    both = old.rstrip("\n") + "\n\n\n" + new.strip("\n") + ("\n" if old.endswith("\n") else "")
    offered = watch.offer("edit_file", {"filepath": shown, "old_content": old, "new_content": both})
    return DROPPED_DEFINITIONS.format(names=", ".join(f"{n}()" for n in gone), path=shown, call=offered)


def unseen_written(watch: TurnWatch, content: str) -> str | None:
    """Why a new file holding only a number no result showed waits (once per turn): asked
    to count into a file, a small model writes a number it made up."""
    if not _BARE_NUMBER.fullmatch(content) or watch.unseen_number(content.strip(), bare=True) is None:
        return None
    if not watch.once("written"):
        return None
    counts = [m.group() for seen in watch.seen for m in COUNT_LINE.finditer(seen)]
    last = LAST_COUNT.format(count=counts[-1]) if counts else ""
    return UNSEEN_WRITTEN.format(number=content.strip(), last=last)


KEEP_TESTS = (
    "Not changed yet: the request may ask you to leave the tests as they are, and {path} is an "
    "existing test. If the code it tests is what is wrong, fix that code instead: run the tests "
    "with run_cmd, read which function fails and why, then edit that function's file. (If the "
    "request does mean this test to change, send the same call again: it will run.)"
)
TESTED_FILES = 3
TEST_READ_BYTES = 64 * 1024
"""A test file up to this size is read for the imports that name the code it tests."""


def keep_tests_refusal(watch: TurnWatch, filepath: str, ctx: ToolContext) -> str | None:
    """KEEP_TESTS, with the project files the test imports (the code to fix) and the
    run_cmd call that runs the test, when it can be offered. Only for a test file that
    exists (a new test changes no existing one), and once per turn: the request's words are
    read by a pattern, so the model, told once, decides."""
    if not _exists(filepath, ctx) or not watch.once("keep_tests"):
        return None
    message = KEEP_TESTS.format(path=filepath)
    code = tested_files(filepath, ctx)
    if code:
        message += f" The code it imports: {', '.join(code)}."
    command = f"python -m pytest -q {filepath}"
    if watch.show_call is None or "run_cmd" not in watch.tools or command in watch.commands:
        return message
    return message + " The call that runs it:\n" + watch.offer("run_cmd", {"command": command})


def _exists(filepath: str, ctx: ToolContext) -> bool:
    try:
        return ctx.resolve(filepath).exists()
    except (OSError, RuntimeError, ValueError, ToolError):
        return False


def tested_files(filepath: str, ctx: ToolContext) -> list[str]:
    """The project's Python files a test file imports (`from pager.pages import ...` ->
    pager/pages.py), read under the rules; [] when it cannot be read."""
    try:
        path = ctx.resolve(filepath).resolve()
    except (OSError, RuntimeError, ValueError, ToolError):
        return []
    if not (is_inside_root(path, ctx.root) and ctx.may_read(path)):
        return []
    tree = parsed_python(file_text(path, TEST_READ_BYTES))
    if tree is None:
        return []
    modules = (display_path(module, ctx.root) for _, module in imported_project_names(tree, path, ctx.root))
    found = list(dict.fromkeys(modules))
    return found[:TESTED_FILES]


RUN_NOT_CHANGE = (
    "Not changed yet: the request may only ask you to run the program and report what it does. "
    "If so, run it as it is with run_cmd (answer its questions with send_input), then answer "
    "from what it prints.{call} (If the task does need {path} changed, send the same call "
    "again: it will run.)"
)
SAME_EDIT = (
    "Not changed: old_content and new_content are the same text, so this edit of {path} "
    "would change nothing. The request is: \"{request}\". Send the edit again with that "
    "change made in new_content."
)
REQUEST_SHOWN = 300
"""Characters of the request a refusal repeats (a small model loses it after a long read)."""


def _same_text(old: object, new: object) -> bool:
    """Both are the same text: a small model copies the file it just read into both halves
    of an edit (a change of spacing alone may be what was asked, so it is no copy)."""
    return isinstance(old, str) and isinstance(new, str) and old == new


def missing_script(call: ToolCall, ctx: ToolContext, looked_at: Iterable[str] = (),
                   offer: Callable[[str, dict[str, str]], str] | None = None,
                   to_create: str | None = None) -> str | None:
    """Why `python hello.py` is not run when the project has no hello.py: small models run
    the file of the prompt's example, or a name they guessed, and then flounder over the
    error. The refusal names the closest files that do exist, or else the project's files
    of that kind (those the turn looked at first), so the next call has a real file to run.
    `python greeter.py` where greeter/ is a package with a __main__.py gets the `python -m
    greeter` command with the same arguments, as a call when `offer` writes one out. The file
    the request asks to create (`to_create`) is named as that: write it first."""
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
        dotted = match.group(1)[:-3].replace("/", ".")
        as_module = f"python -m {dotted}" + str(command).strip()[match.end(1):]
        return NO_SCRIPT_PACKAGE.format(path=match.group(1), package=dotted,
                                        call=offer("run_cmd", {"command": as_module}) if offer else as_module)
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


def input_kept(watch: TurnWatch, path: Path, filepath: str) -> str | None:
    """Why a change to an existing data file (`path`, resolved) waits (once per path) when the request asks to
    create a new code file and does not name that data file: a model asked for a new script
    that reads a data file may change the data it had read instead."""
    if path.suffix.lower() not in DATA_SUFFIXES or path.name in watch.request or not path.is_file():
        return None
    new = requested_new_file(watch.request, watch.root)
    if new is None or not watch.once(f"input:{path}"):
        return None
    return INPUT_KEPT.format(new=new, path=filepath)


def run_not_change(watch: TurnWatch, filepath: str) -> str | None:
    """RUN_NOT_CHANGE, with the run_cmd call of the script the request names (asked to run a
    script and answer its questions, a small model may rewrite the script instead);
    None when the request names no script of the project to run ("register the plugin in
    config.json" asks for a change). Once per turn: "start server.py and debug why it crashes"
    may well need db.py changed, and the request's English is no reason to refuse for good."""
    if "run_not_change" in watch.sent:
        return None
    offered = requested_run(watch)
    if offered is None:
        return None
    watch.once("run_not_change")
    return RUN_NOT_CHANGE.format(path=filepath, call=f" The call that runs it:\n{offered[1]}")


def guard_call(watch: TurnWatch, call: ToolCall, ctx: ToolContext) -> str | None:
    """Why a call waits, before it runs (None: it runs). read_file marks a path as seen;
    write_file over an unseen existing file waits once, and so does one that would delete
    most of a file it has read. A change to an existing test file waits once when the request
    seems to say to leave the tests alone: small models make a failing test pass by editing
    it. Every guard holds a call back at most once; sent again, it runs."""
    if call.name == "run_cmd":
        offer = watch.offer if watch.show_call is not None and "run_cmd" in watch.tools else None
        to_create = requested_new_file(watch.request, watch.root)
        refused = missing_script(call, ctx, watch.touched.values(), offer, to_create)
        # the reply that ran a made-up script may also show the new version of a file:
        # no nudge answers a reply with a call, so the refusal offers that write
        version = version_nudge(watch, watch.reply_text) if refused else None
        return f"{refused}\n{version}" if refused and version else refused
    filepath = call.arguments.get("filepath")
    if call.name not in ("read_file", "write_file", "edit_file") or not isinstance(filepath, str):
        return None
    if call.name != "read_file" and leaves_tests(watch.request) and is_test_path(filepath):
        kept_test = keep_tests_refusal(watch, filepath, ctx)
        if kept_test is not None:
            return kept_test
    if call.name != "read_file" and watch.asks_to_run() and (ctx.root / filepath).exists():
        refused = run_not_change(watch, filepath)
        if refused is not None:
            return refused
    if call.name == "edit_file" and _same_text(call.arguments.get("old_content"), call.arguments.get("new_content")):
        return SAME_EDIT.format(path=filepath, request=clip_words(watch.request, REQUEST_SHOWN))
    try:
        path = ctx.resolve(filepath).resolve()
    except (OSError, RuntimeError, ValueError, ToolError):  # the call itself will say why
        return None
    if call.name == "read_file":
        watch.saw_read(path, filepath)
        return None
    kept = input_kept(watch, path, filepath)
    if kept is not None:
        return kept
    if call.name == "edit_file":
        watch.touched[path] = filepath  # a missed edit shows a short file whole
        return dropped_definitions(watch, call, filepath)
    content = call.arguments.get("content")
    if isinstance(content, str) and not path.exists():
        made_up = unseen_written(watch, content)
        if made_up is not None:
            return made_up
    readable = is_inside_root(path, ctx.root) and ctx.may_read(path)
    unread = overwrite_refusal(watch, path, filepath, readable)
    if unread is not None or not readable or not isinstance(content, str):
        return unread
    return shrink_refusal(watch, path, filepath, content)
