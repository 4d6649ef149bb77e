"""The file tools: read, write, edit, delete, copy, make directories, list and search.

`read_file` shows every line as `N:hh|text`, where `hh` is a short hash of the
line's text. `edit_file` accepts those `N:hh` anchors back, so the model can
replace a range of lines without retyping it, and a stale anchor (the line
changed since it was read) is refused instead of editing the wrong text.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from tether.core.toolspec import Tool, ToolContext, ToolError, ToolOutput
from tether.safety.git_guard import GitConfigError, run_hardened
from tether.safety.paths import file_identity
from tether.store.atomic import atomic_write_bytes
from tether.tools._paths import display_path, is_inside_root, near_names
from tether.tools._regex_worker import PatternTooSlow, RegexWorker, WorkerFailed
from tether.tools._regular import (
    NotARegularFile,
    TooLarge,
    copy_regular,
    open_regular,
    read_at_most,
    refuse_special,
)
from tether.tools.nearby import closest_paths

READ_LINE_LIMIT = 400
READ_CHAR_CAP = 30_000
READ_LINE_CAP = 4_000
"""Characters of one line shown by read_file; longer lines (minified code) are cut."""
MAX_READ_BYTES = 64 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
DIFF_CHAR_CAP = 4_000
CLOSEST_MATCH_SECONDS = 2.0
LIST_ENTRY_CAP = 500
SEARCH_MATCH_CAP = 200
SEARCH_TIME_LIMIT = 5.0
SEARCH_CHAR_CAP = 15_000
SEARCH_MAX_FILE_BYTES = 2 * 1024 * 1024
SEARCH_LINE_WIDTH = 200
GIT_LIST_TIMEOUT = 10.0
SKIP_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__"})
UTF8_BOM = b"\xef\xbb\xbf"

_ANCHOR_RE = re.compile(r"\s*(\d+)\s*:\s*([0-9a-fA-F]{2})(?![0-9a-fA-F])")
_READ_PREFIX_RE = re.compile(r"^\d+:[0-9a-f]{2}\|", re.MULTILINE)


# --- parameters -----------------------------------------------------------


class ReadFileParams(BaseModel):
    filepath: str = Field(description="Path of the file to read.")
    offset: int | None = Field(None, ge=0, description="1-based line number to start at.")
    limit: int | None = Field(None, ge=1, description="Most lines to return (default 400).")


class WriteFileParams(BaseModel):
    filepath: str = Field(description="Path of the file to create or overwrite.")
    content: str = Field(description="The complete new content of the file.")


class EditFileParams(BaseModel):
    filepath: str = Field(description="Path of the file to edit.")
    old_content: str | None = Field(
        None, description="Exact text to replace; must occur exactly once."
    )
    new_content: str = Field(description="Replacement text.")
    start_anchor: str | None = Field(
        None, description="Instead of old_content: first line to replace, as 'N:hh' from read_file."
    )
    end_anchor: str | None = Field(
        None, description="Last line to replace, as 'N:hh' (default: start_anchor)."
    )


class DeleteFileParams(BaseModel):
    filepath: str = Field(description="Path of the file to delete.")


class CopyFileParams(BaseModel):
    source: str = Field(description="Path of the file to copy.")
    destination: str = Field(description="Path of the new copy; must not exist yet.")


class CreateDirParams(BaseModel):
    path: str = Field(description="Directory to create, with any missing parents.")


class ListDirParams(BaseModel):
    path: str = Field(".", description="Directory to list.")


class SearchInFileParams(BaseModel):
    pattern: str = Field(description="Python regular expression to search for.")
    path: str = Field(".", description="File or directory to search.")


# --- shared helpers ---------------------------------------------------------

_Params = TypeVar("_Params", bound=BaseModel)


def _os_errors_as_tool_errors(
    handler: Callable[[_Params, ToolContext], ToolOutput],
) -> Callable[[_Params, ToolContext], ToolOutput]:
    """An unexpected OSError (permissions, a file where a directory should be)
    becomes a plain message for the model instead of a traceback."""

    @functools.wraps(handler)
    def wrapper(args: _Params, ctx: ToolContext) -> ToolOutput:
        try:
            return handler(args, ctx)
        except OSError as err:
            raise ToolError(_describe_os_error(err, ctx.root)) from err

    return wrapper


def _describe_os_error(err: OSError, root: Path) -> str:
    if isinstance(err, NotARegularFile):
        return (
            f"{display_path(err.path, root)} is {err.kind}, not a regular file; the file "
            "tools only read and write regular files (reading it could wait forever)."
        )
    if isinstance(err, TooLarge):
        return (
            f"{display_path(err.path, root)} gave more than its size said (over "
            f"{err.limit:,} bytes): a kernel file that never ends or a file something keeps "
            "writing to; not copied."
        )
    reason = err.strerror or str(err)
    if err.filename is None:
        return reason
    return f"{reason}: {display_path(Path(os.fsdecode(err.filename)), root)}"


def _not_found(path: Path, ctx: ToolContext, what: str = "File") -> ToolError:
    shown = display_path(path, ctx.root)
    elsewhere = closest_paths(path, ctx.root)
    hint = f" Closest existing paths: {', '.join(elsewhere)}." if elsewhere else ""
    if not path.parent.is_dir():
        parent = display_path(path.parent, ctx.root)
        return ToolError(f"{what} not found: {shown} (the directory {parent} does not exist).{hint}")
    similar = near_names(path)
    if similar:
        hint = f" Similar names there: {', '.join(similar)}."
    return ToolError(f"{what} not found: {shown}.{hint}")


def line_hash(text: str) -> str:
    """Two hex characters from a stable hash of a line's text (without its line ending)."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2s(data, digest_size=1).hexdigest()


def _split_keepends(text: str) -> list[str]:
    """Lines split on "\\n" only (like editors and grep), each keeping its ending."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _bare(line: str) -> str:
    """A line without its ending ("\\n" or "\\r\\n")."""
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    return line


def _count_lines(text: str) -> int:
    return len(_split_keepends(text))


def _render_line(number: int, text: str) -> str:
    shown = text
    if len(text) > READ_LINE_CAP:
        shown = text[:READ_LINE_CAP] + f" [... line cut: {len(text):,} characters]"
    return f"{number}:{line_hash(text)}|{shown}"


@dataclass(frozen=True)
class _Loaded:
    """A text file's content and what is needed to write it back the same way."""

    text: str
    encoding: str
    bom: bool = False

    @property
    def newline(self) -> str:
        crlf = self.text.count("\r\n")
        lone_lf = self.text.count("\n") - crlf
        return "\r\n" if crlf and crlf >= lone_lf else "\n"

    def encode(self, text: str, shown: str) -> bytes:
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as err:
            raise ToolError(
                f"{shown} is stored as {self.encoding} and the new text has characters "
                f"it cannot hold ({err.object[err.start : err.end]!r})."
            ) from err
        return UTF8_BOM + data if self.bom else data


def _load_text(path: Path, ctx: ToolContext) -> _Loaded:
    shown = display_path(path, ctx.root)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file. Use list_dir to see its entries.")
    if not path.exists():
        raise _not_found(path, ctx)
    with open_regular(path) as handle:  # a FIFO or device is refused, never waited on
        size = os.fstat(handle.fileno()).st_size
        try:
            if size > MAX_READ_BYTES:
                raise TooLarge(path, MAX_READ_BYTES)
            data = read_at_most(handle, path, MAX_READ_BYTES)  # /proc files report 0 bytes
        except TooLarge:
            raise ToolError(
                f"{shown} is too large to load (over {MAX_READ_BYTES:,} bytes). Use "
                "search_in_file to find the part you need."
            ) from None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(
            f"{shown} looks like a binary file (it contains NUL bytes); not reading it."
        )
    return _decode(data)


def _decode(data: bytes) -> _Loaded:
    bom = data.startswith(UTF8_BOM)
    body = data[len(UTF8_BOM) :] if bom else data
    try:
        return _Loaded(body.decode("utf-8"), "utf-8", bom)
    except UnicodeDecodeError:
        return _Loaded(data.decode("latin-1"), "latin-1")


def _write_bytes(path: Path, data: bytes) -> None:
    """Write atomically (see tether.store.atomic), keeping an existing file's mode. `path` comes
    from ctx.resolve with every symlink followed (so a link updates what it points at and
    stays a link): it is written as checked, not resolved a second time."""
    atomic_write_bytes(path, data)


# --- read_file --------------------------------------------------------------


@_os_errors_as_tool_errors
def read_file(args: ReadFileParams, ctx: ToolContext) -> ToolOutput:
    path = ctx.resolve(args.filepath)
    shown = display_path(path, ctx.root)
    loaded = _load_text(path, ctx)
    lines = [_bare(line) for line in _split_keepends(loaded.text)]
    if not lines:
        return ToolOutput(f"(empty file: {shown})", summary=f"{shown}: empty")
    start = max(args.offset or 1, 1)
    if start > len(lines):
        raise ToolError(
            f"offset={start} is past the end of {shown}, which has {len(lines):,} lines."
        )
    page, next_line = _page(lines, start, args.limit or READ_LINE_LIMIT)
    if next_line <= len(lines):
        page.append(
            f"[... file continues: {len(lines):,} lines total; "
            f"call read_file with offset={next_line} to read more]"
        )
    if loaded.encoding != "utf-8":
        page.insert(0, f"[note: not valid UTF-8; decoded as {loaded.encoding}]")
    summary = f"{shown}: lines {start}-{next_line - 1} of {len(lines):,}"
    return ToolOutput("\n".join(page), summary=summary)


def _page(lines: list[str], start: int, limit: int) -> tuple[list[str], int]:
    """Rendered lines from `start` within the line limit and the character cap,
    and the number of the first line not shown."""
    page: list[str] = []
    used = 0
    number = start
    while number <= len(lines) and len(page) < limit:
        rendered = _render_line(number, lines[number - 1])
        if page and used + len(rendered) + 1 > READ_CHAR_CAP:
            break
        page.append(rendered)
        used += len(rendered) + 1
        number += 1
    return page, number


# --- write_file -------------------------------------------------------------


@_os_errors_as_tool_errors
def write_file(args: WriteFileParams, ctx: ToolContext) -> ToolOutput:
    path = ctx.resolve(args.filepath)
    shown = display_path(path, ctx.root)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give a file path to write.")
    refuse_special(path)
    existed = path.exists()
    _write_bytes(path, args.content.encode("utf-8"))
    verb = "Overwrote" if existed else "Created"
    count = _count_lines(args.content)
    return ToolOutput(
        f"{verb} {shown} ({count:,} lines).",
        summary=f"{verb.lower()} {shown}",
        changed_paths=(path,),
    )


# --- edit_file --------------------------------------------------------------


@dataclass(frozen=True)
class _Anchor:
    line: int
    hash: str
    name: str


@_os_errors_as_tool_errors
def edit_file(args: EditFileParams, ctx: ToolContext) -> ToolOutput:
    path = ctx.resolve(args.filepath)
    shown = display_path(path, ctx.root)
    use_anchors = _choose_edit_mode(args)
    loaded = _load_text(path, ctx)
    if use_anchors:
        edited = _edit_by_anchors(loaded, args, shown)
    else:
        edited = _edit_by_match(loaded, args.old_content or "", args.new_content, shown)
    edited = _keep_final_newline(loaded.text, edited)
    if edited == loaded.text:
        raise ToolError(f"The edit leaves {shown} unchanged (new_content equals the old text).")
    _write_bytes(path, loaded.encode(edited, shown))
    diff, added, removed = _short_diff(loaded.text, edited, shown)
    return ToolOutput(
        f"Edited {shown} (+{added} -{removed} lines).\n{diff}",
        summary=f"edited {shown} (+{added} -{removed})",
        changed_paths=(path,),
    )


def _choose_edit_mode(args: EditFileParams) -> bool:
    """True for the anchor mode, False for exact match; empty strings count as absent
    because models often send every optional parameter."""
    has_old = bool(args.old_content)
    has_anchors = bool(args.start_anchor or args.end_anchor)
    if has_old and has_anchors:
        raise ToolError(
            "Use one edit mode: either old_content (the exact text to replace) or "
            "start_anchor/end_anchor (line anchors from read_file), not both."
        )
    if args.end_anchor and not args.start_anchor:
        raise ToolError("end_anchor needs start_anchor too (the first line of the range).")
    if has_old or has_anchors:
        return has_anchors
    if args.old_content == "":
        raise ToolError(
            "old_content is empty. Give the exact text to replace, or start_anchor/end_anchor; "
            "to create a file use write_file."
        )
    raise ToolError(
        "Say what to replace: old_content (exact text that occurs once) or "
        "start_anchor (and optionally end_anchor) as 'N:hh' from read_file."
    )


def _to_lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _in_style(text: str, newline: str) -> str:
    lf = _to_lf(text)
    return lf if newline == "\n" else lf.replace("\n", newline)


def _keep_final_newline(before: str, after: str) -> str:
    """The file keeps (or keeps lacking) its final newline whatever the edit said."""
    if not after or not before:
        return after
    had = before.endswith("\n")
    if had and not after.endswith("\n"):
        return after + ("\r\n" if before.endswith("\r\n") else "\n")
    if not had and after.endswith("\n"):
        return after[:-2] if after.endswith("\r\n") else after[:-1]
    return after


def _edit_by_match(loaded: _Loaded, old: str, new: str, shown: str) -> str:
    text = loaded.text
    newline = loaded.newline
    # The model writes "\n"; in a CRLF file the same text is stored with "\r\n".
    variants = dict.fromkeys([(_in_style(old, newline), _in_style(new, newline)), (old, new)])
    for old_variant, new_variant in variants:
        positions = _occurrences(text, old_variant)
        if len(positions) == 1:
            start = positions[0]
            return text[:start] + new_variant + text[start + len(old_variant) :]
        if positions:
            raise _not_unique_error(text, positions, shown)
    at_end = _edit_at_unterminated_end(text, old, new)
    if at_end is not None:
        return at_end
    raise _not_found_error(text, old, shown)


def _edit_at_unterminated_end(text: str, old: str, new: str) -> str | None:
    """Whole lines written as a raw block end with a newline, but the same lines may end a
    file that has none: match them there (and only there)."""
    if not (old.endswith("\n") and new.endswith("\n")) or text.endswith("\n"):
        return None
    old_lines, new_lines = old[:-1], new[:-1]
    if old_lines and text.endswith(old_lines) and text.count(old_lines) == 1:
        return text[: len(text) - len(old_lines)] + new_lines
    return None


def _occurrences(text: str, needle: str) -> list[int]:
    positions: list[int] = []
    start = text.find(needle)
    while start != -1:
        positions.append(start)
        start = text.find(needle, start + 1)
    return positions


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _not_unique_error(text: str, positions: list[int], shown: str) -> ToolError:
    lines = ", ".join(str(_line_of(text, pos)) for pos in positions[:20])
    more = f" and {len(positions) - 20} more" if len(positions) > 20 else ""
    return ToolError(
        f"old_content occurs {len(positions)} times in {shown} (starting at lines {lines}{more}). "
        "Include more surrounding lines so it matches exactly once, or use start_anchor/end_anchor."
    )


def _not_found_error(text: str, old: str, shown: str) -> ToolError:
    file_lines = [_bare(line) for line in _split_keepends(text)]
    old_lines = [_bare(line) for line in _split_keepends(_to_lf(old))] or [""]
    closest = _closest_window(file_lines, old_lines)
    message = f"old_content was not found in {shown}."
    if closest is None or closest[1] < 0.3:
        return ToolError(f"{message} Nothing in the file looks similar; read_file it again.")
    first, ratio = closest
    last = min(first + len(old_lines) - 1, len(file_lines))
    shown_lines = "\n".join(_render_line(n, file_lines[n - 1]) for n in range(first, last + 1))
    window_text = "\n".join(file_lines[first - 1 : last])
    return ToolError(
        f"{message} The closest match ({ratio:.0%} similar) is {_line_range(first, last)}:\n"
        f"{shown_lines}\n{_mismatch_hint(old, window_text)} Copy the text exactly as it is "
        f"now, or replace those lines with start_anchor='{first}:{line_hash(file_lines[first - 1])}'"
        f" and end_anchor='{last}:{line_hash(file_lines[last - 1])}'."
    )


def _line_range(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _mismatch_hint(old: str, window_text: str) -> str:
    if _READ_PREFIX_RE.search(old):
        return "old_content seems to include read_file's 'N:hh|' prefixes; leave them out."
    if old.split() == window_text.split():
        return "It differs only in whitespace or indentation."
    return "Check whitespace, indentation and the exact wording."


def _closest_window(file_lines: list[str], old_lines: list[str]) -> tuple[int, float] | None:
    """The 1-based first line and similarity of the window of len(old_lines) lines
    most like old_lines. Cheap upper bounds skip most windows, as in difflib."""
    if not file_lines:
        return None
    size = len(old_lines)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(old_lines))
    best: tuple[int, float] = (1, -1.0)
    deadline = time.monotonic() + CLOSEST_MATCH_SECONDS
    for index in range(max(1, len(file_lines) - size + 1)):
        if index % 256 == 0 and time.monotonic() > deadline:
            break
        matcher.set_seq1("\n".join(file_lines[index : index + size]))
        if matcher.real_quick_ratio() <= best[1] or matcher.quick_ratio() <= best[1]:
            continue
        ratio = matcher.ratio()
        if ratio > best[1]:
            best = (index + 1, ratio)
    return best


def _parse_anchor(raw: str, name: str) -> _Anchor:
    match = _ANCHOR_RE.match(raw)
    if match is None:
        raise ToolError(
            f"{name}={raw!r} is not an anchor; use the 'N:hh' prefix read_file shows, e.g. '12:a3'."
        )
    return _Anchor(int(match.group(1)), match.group(2).lower(), name)


def _check_anchor(anchor: _Anchor, lines: list[str], shown: str) -> None:
    if not 1 <= anchor.line <= len(lines):
        raise ToolError(
            f"{anchor.name} {anchor.line}:{anchor.hash} is outside {shown}, which has "
            f"{len(lines):,} lines. Read the file again for current anchors."
        )
    if line_hash(_bare(lines[anchor.line - 1])) != anchor.hash:
        raise ToolError(
            f"{anchor.name} {anchor.line}:{anchor.hash} is stale: line {anchor.line} of {shown} "
            f"has changed since it was read. Current lines around it:\n"
            f"{_lines_around(lines, anchor.line)}\nUse these fresh anchors, or read_file again."
        )


def _lines_around(lines: list[str], center: int, radius: int = 3) -> str:
    first, last = max(1, center - radius), min(len(lines), center + radius)
    return "\n".join(_render_line(n, _bare(lines[n - 1])) for n in range(first, last + 1))


def _edit_by_anchors(loaded: _Loaded, args: EditFileParams, shown: str) -> str:
    lines = _split_keepends(loaded.text)
    start = _parse_anchor(args.start_anchor or "", "start_anchor")
    end = _parse_anchor(args.end_anchor, "end_anchor") if args.end_anchor else start
    _check_anchor(start, lines, shown)
    _check_anchor(end, lines, shown)
    if end.line < start.line:
        raise ToolError(
            f"end_anchor (line {end.line}) comes before start_anchor (line {start.line})."
        )
    block = _in_style(args.new_content, loaded.newline)
    # new_content stands for whole lines, so it ends with a line break like the lines it replaces.
    if block and not block.endswith("\n"):
        block += loaded.newline
    return "".join(lines[: start.line - 1]) + block + "".join(lines[end.line :])


def _short_diff(before: str, after: str, shown: str) -> tuple[str, int, int]:
    old_lines = [_bare(line) for line in _split_keepends(before)]
    new_lines = [_bare(line) for line in _split_keepends(after)]
    diff = list(
        difflib.unified_diff(old_lines, new_lines, f"a/{shown}", f"b/{shown}", n=2, lineterm="")
    )
    added = sum(1 for line in diff[2:] if line.startswith("+"))
    removed = sum(1 for line in diff[2:] if line.startswith("-"))
    text = "\n".join(diff)
    if len(text) > DIFF_CHAR_CAP:
        text = (
            text[:DIFF_CHAR_CAP].rsplit("\n", 1)[0]
            + "\n[... diff cut; read_file to see the result]"
        )
    return text, added, removed


# --- delete_file, copy_file, create_dir ---------------------------------------


@_os_errors_as_tool_errors
def delete_file(args: DeleteFileParams, ctx: ToolContext) -> ToolOutput:
    path = ctx.resolve(args.filepath, follow_symlinks=False)  # unlink removes a link itself
    shown = display_path(path, ctx.root)
    if path.is_dir() and not path.is_symlink():
        raise ToolError(
            f"{shown} is a directory; delete_file removes single files only. "
            "Delete the files inside it one by one, or ask the user."
        )
    if not path.exists() and not path.is_symlink():
        raise _not_found(path, ctx)
    path.unlink()
    return ToolOutput(f"Deleted {shown}.", summary=f"deleted {shown}", changed_paths=(path,))


@_os_errors_as_tool_errors
def copy_file(args: CopyFileParams, ctx: ToolContext) -> ToolOutput:
    source = ctx.resolve(args.source)
    destination = ctx.resolve(args.destination, follow_symlinks=False)  # a link is refused below
    shown_source = display_path(source, ctx.root)
    shown_destination = display_path(destination, ctx.root)
    if source.is_dir():
        raise ToolError(f"{shown_source} is a directory; copy_file copies single files.")
    if not source.exists():
        raise _not_found(source, ctx)
    refuse_special(source)  # copying /dev/zero or a FIFO would never end
    if destination.is_dir():
        suggestion = display_path(destination / source.name, ctx.root)
        raise ToolError(
            f"{shown_destination} is an existing directory; give the full destination "
            f"file path, e.g. {suggestion}."
        )
    if destination.exists() or destination.is_symlink():
        raise ToolError(
            f"Destination already exists: {shown_destination}. copy_file never overwrites; "
            "choose another name or delete_file it first."
        )
    destination.parent.mkdir(parents=True, exist_ok=True)
    copy_regular(source, destination)  # bounded: a /proc file or a growing one cannot fill the disk
    return ToolOutput(
        f"Copied {shown_source} to {shown_destination}.",
        summary=f"copied {shown_source} -> {shown_destination}",
        changed_paths=(destination,),
    )


@_os_errors_as_tool_errors
def create_dir(args: CreateDirParams, ctx: ToolContext) -> ToolOutput:
    path = ctx.resolve(args.path)
    shown = display_path(path, ctx.root)
    if path.is_dir():
        return ToolOutput(f"Directory {shown} already existed; nothing changed.")
    if path.exists():
        raise ToolError(f"{shown} exists and is a file, not a directory.")
    path.mkdir(parents=True, exist_ok=True)
    return ToolOutput(f"Created directory {shown}.", summary=f"created {shown}/")


# --- list_dir -----------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    name: str
    is_dir: bool
    size: int
    link: str | None

    def render(self) -> str:
        name = self.name + "/" if self.is_dir else self.name
        if self.link is not None:
            return f"{name} -> {self.link}"
        return name if self.is_dir else f"{name}  ({_human_size(self.size)})"


@_os_errors_as_tool_errors
def list_dir(args: ListDirParams, ctx: ToolContext) -> ToolOutput:
    path = ctx.resolve(args.path)
    shown = display_path(path, ctx.root)
    if not path.exists():
        raise _not_found(path, ctx, what="Directory")
    if not path.is_dir():
        raise ToolError(f"{shown} is a file, not a directory; use read_file to read it.")
    entries = sorted(_scan_entries(path), key=lambda e: (not e.is_dir, e.name.casefold(), e.name))
    dirs = sum(1 for e in entries if e.is_dir)
    lines = [f"{shown}/ ({dirs} directories, {len(entries) - dirs} files)"]
    lines += [entry.render() for entry in entries[:LIST_ENTRY_CAP]]
    if not entries:
        lines.append("(empty directory)")
    if len(entries) > LIST_ENTRY_CAP:
        lines.append(
            f"[... {len(entries) - LIST_ENTRY_CAP:,} more entries not shown; "
            "list a subdirectory or use search_in_file]"
        )
    return ToolOutput("\n".join(lines), summary=f"{shown}/: {len(entries)} entries")


def _scan_entries(path: Path) -> Iterator[_Entry]:
    with os.scandir(path) as scan:
        for item in scan:
            yield _entry_of(item)


def _entry_of(item: os.DirEntry[str]) -> _Entry:
    link = None
    if item.is_symlink():
        with contextlib.suppress(OSError):
            link = os.readlink(item.path)
    try:
        is_dir = item.is_dir()
        size = 0 if is_dir else item.stat().st_size
    except OSError:  # a broken symlink
        is_dir, size = False, 0
    return _Entry(item.name, is_dir, size, link)


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} TB"


# --- search_in_file -------------------------------------------------------------


@dataclass
class _SearchReport:
    matches: list[str] = field(default_factory=list)
    chars: int = 0
    files_searched: int = 0
    files_matched: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    skipped_outside: int = 0
    skipped_secret: int = 0
    skipped_special: int = 0
    skipped_denied: int = 0
    stopped: str = ""
    too_slow: bool = False


@_os_errors_as_tool_errors
def search_in_file(args: SearchInFileParams, ctx: ToolContext) -> ToolOutput:
    regex = _compile_pattern(args.pattern)
    target = ctx.resolve(args.path)
    if not target.exists():
        raise _not_found(target, ctx, what="Path")
    refuse_special(target)
    files = [target] if target.is_file() else _searchable_files(target)
    scope = _search_scope(ctx.root / os.path.expanduser(args.path), ctx.root)
    report = _SearchReport()
    secrets = ctx.secrets.identities() if ctx.secrets is not None else set()
    deadline = time.monotonic() + SEARCH_TIME_LIMIT
    with RegexWorker() as worker:  # the matching runs where the deadline can stop it
        for path in files:
            if time.monotonic() > deadline:
                report.stopped = (
                    f"[stopped after {SEARCH_TIME_LIMIT:g} s; narrow the path or the pattern "
                    "to search the rest]"
                )
                break
            if not is_inside_root(path, scope):  # a symlink leading out: never read unasked
                report.skipped_outside += 1
                continue
            if secrets and file_identity(str(path)) in secrets:  # a hard link to the saved keys
                report.skipped_secret += 1
                continue
            if not ctx.may_read(path):  # a deny rule covers it: the call named only its folder
                report.skipped_denied += 1
                continue
            _search_file(worker, regex, path, ctx.root, report, deadline)
            if report.stopped:
                break
    if report.too_slow and not report.matches:
        raise ToolError(report.stopped.strip("[]") + ".")
    return _render_search(report, args.pattern, display_path(target, ctx.root))


def _search_scope(target: Path, root: Path) -> Path:
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


def _searchable_files(directory: Path) -> list[Path] | Iterator[Path]:
    listed = _git_listed_files(directory)
    if not listed:  # not a repo, no git, or an ignored directory searched on purpose
        return _walk_files(directory)
    return [path for path in listed if not _under_skipped_dir(path, directory)]


def _git_listed_files(directory: Path) -> list[Path] | None:
    """Tracked and untracked-but-not-ignored files below `directory`, as git sees them."""
    if shutil.which("git") is None:
        return None
    try:
        # Hardened: no program the repository configures (fsmonitor, ...) runs.
        done = run_hardened(
            directory, "ls-files", "--cached", "--others", "--exclude-standard", "-z",
            timeout=GIT_LIST_TIMEOUT,
        )
    except (GitConfigError, OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    names = sorted({name for name in os.fsdecode(done.stdout).split("\0") if name})
    return [directory / name for name in names]


def _under_skipped_dir(path: Path, directory: Path) -> bool:
    try:
        parts = path.relative_to(directory).parts[:-1]
    except ValueError:
        return False
    return any(part in SKIP_DIRS for part in parts)


def _walk_files(directory: Path) -> Iterator[Path]:
    for current, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(name for name in dirnames if name not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(current) / name


def _search_file(
    worker: RegexWorker, regex: re.Pattern[str], path: Path, root: Path, report: _SearchReport,
    deadline: float,
) -> None:
    text = _searchable_text(path, report)
    if text is None:
        return
    report.files_searched += 1
    shown = display_path(path, root)
    try:
        hits = worker.matching_lines(regex.pattern, text, SEARCH_MATCH_CAP, deadline)
    except PatternTooSlow:
        report.too_slow = True
        report.stopped = (
            f"[the pattern {regex.pattern!r} was too slow: matching it in {shown} did not "
            f"finish within the search's {SEARCH_TIME_LIMIT:g} s. Nested repetition such as "
            "(a+)+ can take forever on some lines; simplify the pattern or narrow the path]"
        )
        return
    except WorkerFailed as err:
        raise ToolError(f"search_in_file could not run the search: {err}.") from err
    lines = text.split("\n")
    for number in hits:
        _add_match(report, f"{shown}:{number}: {_trim(lines[number - 1])}")
        if report.stopped:
            break
    report.files_matched += bool(hits)


def _searchable_text(path: Path, report: _SearchReport) -> str | None:
    """The file's text, or None (counted) for what search skips: large, binary, unreadable."""
    try:
        with open_regular(path) as handle:
            if os.fstat(handle.fileno()).st_size > SEARCH_MAX_FILE_BYTES:
                raise TooLarge(path, SEARCH_MAX_FILE_BYTES)
            data = read_at_most(handle, path, SEARCH_MAX_FILE_BYTES)
    except TooLarge:
        report.skipped_large += 1
        return None
    except NotARegularFile:  # a FIFO, device or socket in the tree: never opened blocking
        report.skipped_special += 1
        return None
    except OSError:
        return None
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
    if report.skipped_outside:
        parts.append(f"{report.skipped_outside} behind symlinks leading outside")
    if report.skipped_secret:
        parts.append(f"{report.skipped_secret} holding tether's saved keys")
    if report.skipped_special:
        parts.append(f"{report.skipped_special} FIFOs, devices or sockets")
    if report.skipped_denied:
        parts.append(f"{report.skipped_denied} a deny rule keeps from reading")
    return f"(skipped files: {', '.join(parts)})" if parts else ""


# --- the table ------------------------------------------------------------------


def _tool(name: str, description: str, params: type[BaseModel], handler: Any, **flags: Any) -> Tool:
    return Tool(name=name, description=description, params=params, handler=handler, **flags)


FILE_TOOLS: list[Tool] = [
    _tool(
        "read_file",
        "Read a text file. Each line is shown as 'N:hh|text' (N = line number, hh = line "
        "hash); edit_file accepts 'N:hh' as an anchor. Long files are paged: use offset.",
        ReadFileParams,
        read_file,
        reads=True,
        main_arg="filepath",
        path_params=("filepath",),
        result_cap=READ_CHAR_CAP + 1_000,
    ),
    _tool(
        "write_file",
        "Create a file or overwrite it with the complete new content (parents are created).",
        WriteFileParams,
        write_file,
        writes_files=True,
        block_params=("content",),
        main_arg="filepath",
        path_params=("filepath",),
        written_params=("filepath",),
    ),
    _tool(
        "edit_file",
        "Edit a file in one of two ways: replace old_content (exact text occurring once) "
        "with new_content, or replace the lines start_anchor..end_anchor ('N:hh' from "
        "read_file) with new_content. Returns a diff.",
        EditFileParams,
        edit_file,
        writes_files=True,
        block_params=("old_content", "new_content"),
        main_arg="filepath",
        path_params=("filepath",),
        written_params=("filepath",),
        reads_written=True,
    ),
    _tool(
        "delete_file",
        "Delete one file (not a directory).",
        DeleteFileParams,
        delete_file,
        writes_files=True,
        main_arg="filepath",
        path_params=("filepath",),
        written_params=("filepath",),
    ),
    _tool(
        "copy_file",
        "Copy a file to a new path; refuses to overwrite an existing destination.",
        CopyFileParams,
        copy_file,
        writes_files=True,
        main_arg="source",
        path_params=("source", "destination"),
        written_params=("destination",),
    ),
    _tool(
        "create_dir",
        "Create a directory and any missing parents.",
        CreateDirParams,
        create_dir,
        writes_files=True,
        main_arg="path",
        path_params=("path",),
        written_params=("path",),
    ),
    _tool(
        "list_dir",
        "List a directory: subdirectories first (with a trailing '/'), then files with sizes.",
        ListDirParams,
        list_dir,
        reads=True,
        main_arg="path",
        path_params=("path",),
        result_cap=32_000,
    ),
    _tool(
        "search_in_file",
        "Search a file, or every file under a directory, for a Python regular expression; "
        "prints 'path:line: text'. Skips .git, ignored, binary and very large files.",
        SearchInFileParams,
        search_in_file,
        reads=True,
        main_arg="pattern",
        path_params=("path",),
    ),
]
