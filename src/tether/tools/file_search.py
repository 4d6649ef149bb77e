"""search_in_file: a regular expression over one file or a folder (git's file list when
there is one), results capped.

A folder is searched by ripgrep when it is installed and takes the pattern (tools/ripgrep),
else in Python; either way over the same files (the walk's guards, the deny rules, the size
limit) and with the same cap, and with no limit on the search's time as a whole: the cap
and the note that says so end a search that finds too much. Python matches in a worker
process, where a deadline per file stops a pattern that makes no progress (catastrophic
backtracking)."""

from __future__ import annotations

import itertools
import math
import os
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import tether.tools.ripgrep as ripgrep  # a module, so the tests can stand in for rg
from tether.core.toolspec import ToolContext, ToolError, ToolOutput
from tether.host import (
    NotARegularFile,
    TooLarge,
    file_identity,
    open_regular,
    read_small_file,
    refuse_special,
    resolve_from,
    searchable_files,
)
from tether.tools._paths import display_path, is_inside_resolved, kernel_resolved
from tether.tools._regex_worker import PatternTooSlow, RegexWorker, WorkerFailed

from .file_text import (
    BINARY_SNIFF_BYTES,
    _bare,
    _not_found,
    _os_errors_as_tool_errors,
    _split_keepends,
)
from .outside_values import VALUES_SHOWN, ParsedModules, outside_values

if TYPE_CHECKING:
    from .params import SearchInFileParams

SEARCH_MATCH_CAP = 200
FILE_TIME_LIMIT = 5.0
"""Matching one file's text taking longer than this is a pattern that backtracks without
end: the search stops there and says so."""
SEARCH_CHAR_CAP = 15_000
SEARCH_MAX_FILE_BYTES = 2 * 1024 * 1024
SEARCH_LINE_WIDTH = 200
SEARCH_SHOW_FILE_LINES = 80
ELSEWHERE_LINES = 5
"""Matches in other files shown after a search of one file."""
ELSEWHERE_TIME_LIMIT = 1.0
ELSEWHERE_BELOW = 10
"""The rest of the project is searched only when the file searched had fewer matches than
this: a few lines that read a setting mean the answer may be one import away, while a file
full of matches is what was asked about (a log's ERROR lines), and the rotated log beside it
would only distract from the count."""
ELSEWHERE_FILES = 40
"""Files the look elsewhere reads at the most: the nearest ones (see _nearest_first)."""
ELSEWHERE_BYTES = 1024 * 1024
"""Bytes it reads at the most: a few large files do not take the whole second."""
NAMES_SCAN_CHARS = 20_000
"""How much of the searched file is read for the names of files it uses (imports come first)."""
VALUES_FILES = 5
"""Python files with matches whose constants from other modules are looked up."""
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


WalkRefusal = Literal["outside", "secret", "denied"]

# --- search_in_file -------------------------------------------------------------


@dataclass
class _SearchReport:
    pattern: str = ""
    """The pattern as the model wrote it (what messages quote)."""
    last_text: str = ""
    """The text of the last file searched (a miss in one short file shows it)."""
    matches: list[str] = field(default_factory=list)
    chars: int = 0
    files_searched: int = 0
    files_matched: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    skipped_special: int = 0
    refused: Counter[WalkRefusal] = field(default_factory=Counter)
    """Files a walk found that were not read, by walked_file_refusal's reason."""
    bytes_read: int = 0
    stopped: str = ""
    too_slow: bool = False
    python_hits: list[tuple[Path, str, set[int]]] = field(default_factory=list)
    """(file, text, matching line numbers) of the first Python files with matches, whose
    lines may read constants set elsewhere (`_with_values`)."""


@dataclass(frozen=True)
class _Limits:
    seconds: float | None = None
    """The whole search's time (None: none; the match cap ends it)."""
    max_bytes: int | None = None
    """Text read at the most, over all files (None: only each file's SEARCH_MAX_FILE_BYTES)."""


@_os_errors_as_tool_errors
def search_in_file(args: SearchInFileParams, ctx: ToolContext) -> ToolOutput:
    _compile_pattern(args.pattern)  # its errors name the pattern as the model wrote it
    regex = _compile_pattern(_smart_case(args.pattern))
    target = ctx.resolve(args.path)
    if not target.exists():
        raise _not_found(target, ctx, what="Path")
    refuse_special(target)
    scope = search_scope(ctx.root / os.path.expanduser(args.path), ctx.root)
    report = _SearchReport(pattern=args.pattern)
    with RegexWorker() as worker:  # the matching runs where the deadline can stop it
        rg = None if target.is_file() else ripgrep.usable(regex.pattern)
        if rg is not None:
            _search_with_rg(rg, regex, searchable_files(target), WalkGuard(ctx, scope), ctx.root, report)
        else:
            files = [target] if target.is_file() else searchable_files(target)
            _search_files(worker, regex, files, scope, ctx, report, _Limits())
        few = len(report.matches) < ELSEWHERE_BELOW
        one_file = target.is_file() and report.files_searched == 1 and few
        elsewhere = _elsewhere(worker, regex, target, report.last_text, ctx) if one_file else None
    if report.too_slow and not report.matches:
        raise ToolError(report.stopped.strip("[]") + ".")
    shown = display_path(target, ctx.root)
    output = _render_search(report, args.pattern, shown)
    if not report.matches and target.is_file() and report.files_searched == 1:
        output = _with_short_file(output, report.last_text, shown)
    output = _with_values(output, report, ctx)
    return _with_elsewhere(output, elsewhere, regex, shown) if elsewhere else output


def _with_values(output: ToolOutput, report: _SearchReport, ctx: ToolContext) -> ToolOutput:
    """The values of the constants the matching lines read from other project modules
    (`for attempt in range(limits.MAX_ATTEMPTS + 1)` shows `... = 5`): a small model
    answers with a number it sees on the line instead of opening the module that sets it."""
    found: list[str] = []
    parsed: ParsedModules = {}
    for path, text, lines in report.python_hits:
        for value in outside_values(path, text, ctx, lines, parsed):
            shown = str(value)
            matched = any(m.startswith(f"{value.module}:{value.line}: ") for m in report.matches)
            if not matched and shown not in found:  # a line the search shows already is left out
                found.append(shown)
    if not found:
        return output
    body = f"{output.text}\n[values the matching lines read from other files:\n" + "\n".join(
        found[:VALUES_SHOWN]) + "]"
    return ToolOutput(body, summary=output.summary)


def _search_files(
    worker: RegexWorker,
    regex: re.Pattern[str],
    files: Iterable[Path],
    scope: Path,
    ctx: ToolContext,
    report: _SearchReport,
    limits: _Limits,
) -> None:
    """Search each file the call may read (inside `scope`, no deny rule, not the saved keys),
    until the matches fill the report or a limit is reached."""
    guard = WalkGuard(ctx, scope)
    deadline = math.inf if limits.seconds is None else time.monotonic() + limits.seconds
    for path in files:
        if time.monotonic() > deadline:
            report.stopped = (
                f"[stopped after {limits.seconds:g} s; narrow the path or the pattern "
                "to search the rest]"
            )
            return
        if limits.max_bytes is not None and report.bytes_read >= limits.max_bytes:
            return
        refusal = guard.refusal(path)
        if refusal is not None:
            report.refused[refusal] += 1
            continue
        _search_file(worker, regex, path, ctx.root, report, min(deadline, time.monotonic() + FILE_TIME_LIMIT))
        if report.stopped:
            return


def _search_with_rg(
    program: str, regex: re.Pattern[str], files: Iterable[Path], guard: WalkGuard, root: Path,
    report: _SearchReport,
) -> None:
    """rg over the files `_readable` lets through, its matches streamed into the report
    until the cap."""
    found = ripgrep.search(program, regex.pattern, _readable(files, guard, report), SEARCH_MATCH_CAP)
    try:
        for matches in found:
            _record_file(report, matches.path, root, matches.lines, None)
            if report.stopped:
                return
    except ripgrep.PatternUnsupported as err:
        raise ToolError(f"search_in_file could not run the search: {err}.") from err
    finally:
        found.close()


def _readable(files: Iterable[Path], guard: WalkGuard, report: _SearchReport) -> Iterator[Path]:
    """The files a search may read, checked as `_searchable_text` checks them, from their
    first bytes only: inside the scope, no deny rule, not the keys, regular, not too large,
    no NUL byte at the start."""
    for path in files:
        refusal = guard.refusal(path)
        if refusal is not None:
            report.refused[refusal] += 1
            continue
        try:
            with open_regular(path) as handle:
                size = os.fstat(handle.fileno()).st_size
                head = b"" if size > SEARCH_MAX_FILE_BYTES else handle.read(BINARY_SNIFF_BYTES)
        except NotARegularFile:
            report.skipped_special += 1
            continue
        except OSError:
            continue
        if size > SEARCH_MAX_FILE_BYTES:
            report.skipped_large += 1
        elif b"\0" in head:
            report.skipped_binary += 1
        else:
            report.files_searched += 1
            report.bytes_read += size
            yield path


def _elsewhere(
    worker: RegexWorker, regex: re.Pattern[str], target: Path, text: str, ctx: ToolContext
) -> _SearchReport | None:
    """The same search over other files of the project, after a search of one file: a small
    model searches the file it guessed, and the answer is often one import away (a setting
    read from a defaults module). It runs on every one-file search, so it is bounded: the
    cached file list, the nearest ELSEWHERE_FILES files (those the searched file names, then
    its folder's, then its parents'), ELSEWHERE_BYTES of text. None when no other matches."""
    report = _SearchReport()
    others = itertools.islice(_nearest_first(ctx, target, text), ELSEWHERE_FILES)
    limits = _Limits(ELSEWHERE_TIME_LIMIT, max_bytes=ELSEWHERE_BYTES)
    _search_files(worker, regex, others, ctx.root, ctx, report, limits)
    return report if report.matches and not report.too_slow else None


def _nearest_first(ctx: ToolContext, target: Path, text: str) -> Iterator[Path]:
    """The project's files other than `target`, nearest first: files the target's text names
    by stem and with its suffix (`from .defaults import PORT` -> defaults.py), the files of
    its folder, of each folder above it, then the rest in list order. The near ones are
    taken at once (so is the file list, before the search's clock starts); the rest only as
    the budget takes them."""
    files = ctx.files
    place = _relative_name(target, ctx.root)
    words = dict.fromkeys(_WORD.findall(text[:NAMES_SCAN_CHARS]))
    near = [path for word in words for path in files.named(word + target.suffix)]
    folder = place.rpartition("/")[0] if place is not None else None
    while folder is not None:
        near += files.in_folder(folder)
        folder = folder.rpartition("/")[0] if folder else None
    itself = ctx.root / place if place is not None else None
    return _once_each(itertools.chain(near, files.paths()), itself)


def _once_each(paths: Iterable[Path], left_out: Path | None) -> Iterator[Path]:
    seen: set[Path] = set()
    for path in paths:
        if path not in seen and path != left_out:
            seen.add(path)
            yield path


def _relative_name(target: Path, root: Path) -> str | None:
    """`target` (resolved) as the file list names it (relative to the root, `/` between
    folders), or None outside the root."""
    resolved_root = kernel_resolved(root)
    if resolved_root is None or not target.is_relative_to(resolved_root):
        return None
    return target.relative_to(resolved_root).as_posix()


def _whole_words_first(matches: list[str], regex: re.Pattern[str]) -> list[str]:
    """The lines where the pattern matches as a whole word first (`port = 7341` before
    `import os` for the pattern "port"), each group in its own order: the preview has room
    for a few lines, and the ones inside longer words are rarely the answer."""
    try:
        inner = regex.pattern.removeprefix("(?i)")  # _smart_case's flag: kept in regex.flags
        whole = re.compile(rf"(?<!\w)(?:{inner})(?!\w)", regex.flags)
    except re.error:
        return matches
    return sorted(matches, key=lambda line: whole.search(line.split(": ", 1)[-1]) is None)


def _with_elsewhere(
    output: ToolOutput, report: _SearchReport, regex: re.Pattern[str], searched: str
) -> ToolOutput:
    shown = _whole_words_first(report.matches, regex)[:ELSEWHERE_LINES]
    more = f"; {len(report.matches)} more lines in {report.files_matched} other files" if len(
        report.matches
    ) > len(shown) else ""
    body = (
        f"{output.text}\nOther files in the project match too ({_folder_searches(searched)}"
        f"{more}):\n" + "\n".join(shown)
    )
    return ToolOutput(body, summary=output.summary)


def _folder_searches(searched: str) -> str:
    """How to search more than the one file: its top folder and the whole project. A request
    about a folder ("the python files under src/") is answered from that folder, and a model
    offered only "." counts the docs and tests too."""
    top, sep, _ = searched.partition("/")
    if not sep or top in ("", ".", ".."):
        return 'search path "." to see them all'
    return f'search path "{top}" for all of {top}/, "." for the whole project'


@dataclass
class WalkGuard:
    """Why a file a tool found by itself (walking a folder the call named) must not be
    read: the approval policy judged only the folder. What is the same for every file
    (the scope's resolution, the saved keys' identities) is worked out once per walk."""

    ctx: ToolContext
    scope: Path
    """Where the files must really be (see search_scope)."""
    _resolved_scope: Path | None = field(init=False, default=None)
    _secrets: set[tuple[int, int]] = field(init=False, default_factory=set)
    _folders: dict[str, str | None] = field(init=False, default_factory=dict)
    """Each folder's kernel resolution, made once per walk (a big tree has thousands of
    files in hundreds of folders)."""

    def __post_init__(self) -> None:
        self._resolved_scope = kernel_resolved(self.scope)
        if self.ctx.secrets is not None:
            self._secrets = self.ctx.secrets.identities()

    def refusal(self, path: Path) -> WalkRefusal | None:
        if not self._inside(path):  # a symlink leading out: never read unasked
            return "outside"
        if self._secrets and file_identity(str(path)) in self._secrets:  # a hard link to the keys
            return "secret"
        if not self.ctx.may_read(path):  # a deny rule covers it: the call named only its folder
            return "denied"
        return None

    def _inside(self, path: Path) -> bool:
        """Whether the file the kernel reaches for `path` lies in the scope."""
        if self._resolved_scope is None:
            return False
        if not path.is_absolute() or ".." in path.parts:  # resolved whole, as the kernel walks it
            return is_inside_resolved(path, self._resolved_scope)
        folder, name = os.path.split(str(path))
        if folder not in self._folders:
            resolved = kernel_resolved(Path(folder))
            self._folders[folder] = None if resolved is None else str(resolved)
        base = self._folders[folder]
        try:
            reached = resolve_from(base, name) if base is not None else None
        except (OSError, ValueError):
            reached = None
        scope = str(self._resolved_scope)
        return reached is not None and (reached == scope or reached.startswith(scope.rstrip(os.sep) + os.sep))


def _smart_case(pattern: str) -> str:
    """A pattern with no capital letter matches any case, as ripgrep's --smart-case does:
    "timeout" finds DEFAULT_TIMEOUT. Escapes such as \\S or \\W are not capitals. The
    flag goes inline because the pattern travels to the regex worker as text."""
    if not pattern or any(ch.isupper() for ch in re.sub(r"\\.", "", pattern)):
        return pattern
    return "(?i)" + pattern


def _with_short_file(output: ToolOutput, text: str, shown: str) -> ToolOutput:
    """A search that missed in one short file shows the file: the answer is often there under
    another word, and a small model otherwise concludes "there is none". The text is what the
    search itself read, so it passed every read check (links out, keys, deny rules)."""
    lines = [_bare(line) for line in _split_keepends(text)]
    if not lines or len(lines) > SEARCH_SHOW_FILE_LINES:
        return output
    page = [f"{number}| {line}" for number, line in enumerate(lines, 1)]  # no anchors: a glance
    body = f"{output.text}\nThe file is short; here it is whole ({shown}):\n" + "\n".join(page)
    return ToolOutput(body, summary=output.summary)


def search_scope(target: Path, root: Path) -> Path:
    """Where the files a search reads must really be: the project, or, for a path
    outside it that the user approved by name, that path."""
    named = os.path.normpath(os.path.abspath(target))
    for base in {os.path.abspath(root), os.path.realpath(root)}:
        if named == base or named.startswith(base.rstrip(os.sep) + os.sep):
            return root
    return target


def _compile_pattern(pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise ToolError("pattern is empty; give a regular expression to search for.")
    try:
        return re.compile(pattern)
    except re.error as err:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {err}. Escape characters such as "
            "( [ { . * + ? with a backslash to match them literally."
        ) from err
    except (OverflowError, RecursionError) as err:  # a{99999999999}, thousands of nested groups
        raise ToolError(
            f"The regular expression is too big to compile ({err}); use smaller repetition "
            "counts and fewer nested groups."
        ) from err


def _search_file(
    worker: RegexWorker,
    regex: re.Pattern[str],
    path: Path,
    root: Path,
    report: _SearchReport,
    deadline: float,
) -> None:
    text = _searchable_text(path, report)
    if text is None:
        return
    report.files_searched += 1
    report.last_text = text
    shown = display_path(path, root)
    try:
        hits = worker.matching_lines(regex.pattern, text, SEARCH_MATCH_CAP, deadline)
    except PatternTooSlow:
        report.too_slow = True
        report.stopped = (
            f"[the pattern {report.pattern!r} was too slow: matching it in {shown} did not "
            f"finish within {FILE_TIME_LIMIT:g} s. Nested repetition such as "
            "(a+)+ can take forever on some lines; simplify the pattern or narrow the path]"
        )
        return
    except WorkerFailed as err:
        raise ToolError(f"search_in_file could not run the search: {err}.") from err
    lines = text.split("\n")
    _record_file(report, path, root, [(n, lines[n - 1]) for n in hits], text)


def _record_file(
    report: _SearchReport, path: Path, root: Path, hits: list[tuple[int, str]], text: str | None
) -> None:
    """One file's matching lines, until the report is full. `text` is the file's, when the
    search read it (rg's matches come without it: it is read here for the first few Python
    files, whose lines may read values set elsewhere)."""
    if hits and path.suffix == ".py" and len(report.python_hits) < VALUES_FILES:
        text = text if text is not None else _python_text(path)
        if text is not None:
            report.python_hits.append((path, text, {n for n, _ in hits}))
    shown = display_path(path, root)
    for number, line in hits:
        _add_match(report, f"{shown}:{number}: {_trim(line)}")
        if report.stopped:
            break
    report.files_matched += bool(hits)


def _python_text(path: Path) -> str | None:
    try:
        return read_small_file(path, SEARCH_MAX_FILE_BYTES).decode("utf-8", errors="replace")
    except (TooLarge, NotARegularFile, OSError):
        return None


def _searchable_text(path: Path, report: _SearchReport) -> str | None:
    """The file's text, or None (counted) for what search skips: large, binary, unreadable."""
    try:
        data = read_small_file(path, SEARCH_MAX_FILE_BYTES)
    except TooLarge:
        report.skipped_large += 1
        return None
    except NotARegularFile:  # a FIFO, device or socket in the tree: never opened blocking
        report.skipped_special += 1
        return None
    except OSError:
        return None
    report.bytes_read += len(data)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        report.skipped_binary += 1
        return None
    return data.decode("utf-8", errors="replace")


def _trim(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= SEARCH_LINE_WIDTH else line[:SEARCH_LINE_WIDTH] + "..."


def _add_match(report: _SearchReport, rendered: str) -> None:
    report.matches.append(rendered)
    report.chars += len(rendered) + 1
    if len(report.matches) >= SEARCH_MATCH_CAP or report.chars >= SEARCH_CHAR_CAP:
        report.stopped = (
            f"[stopped after {len(report.matches)} matches; narrow the pattern or the path "
            "to see the rest]"
        )


def _render_search(report: _SearchReport, pattern: str, shown: str) -> ToolOutput:
    lines = list(report.matches)
    if len(report.matches) > 1 and not report.stopped:
        lines.append(f"({len(report.matches)} matching lines in {report.files_matched} files)")
    if not lines:
        lines.append(
            f"No matches for {pattern!r} in {shown} ({report.files_searched} files searched)."
        )
    if report.stopped:
        lines.append(report.stopped)
    skipped = _skipped_note(report)
    if skipped:
        lines.append(skipped)
    summary = f"{len(report.matches)} matches in {report.files_matched} files"
    return ToolOutput("\n".join(lines), summary=summary)


def _skipped_note(report: _SearchReport) -> str:
    parts: list[str] = []
    if report.skipped_binary:
        parts.append(f"{report.skipped_binary} binary")
    if report.skipped_large:
        parts.append(f"{report.skipped_large} over {SEARCH_MAX_FILE_BYTES // (1024 * 1024)} MB")
    if report.refused["outside"]:
        parts.append(f"{report.refused['outside']} behind symlinks leading outside")
    if report.refused["secret"]:
        parts.append(f"{report.refused['secret']} holding tether's saved keys")
    if report.skipped_special:
        parts.append(f"{report.skipped_special} FIFOs, devices or sockets")
    if report.refused["denied"]:
        parts.append(f"{report.refused['denied']} a deny rule keeps from reading")
    return f"(skipped files: {', '.join(parts)})" if parts else ""
