"""The file tools: read, write, edit, delete, copy, make directories, list and search.

`read_file` shows every line as `N:hh|text`, where `hh` is a short hash of the
line's text. `edit_file` accepts those `N:hh` anchors back, so the model can
replace a range of lines without retyping it, and a stale anchor (the line
changed since it was read) is refused instead of editing the wrong text.

edit_file lives in `file_edit`, search_in_file in `file_search`, what the tools share in
`file_text`, and their table in `file_table`; this module holds the other handlers. The table
names each handler by where it lives, so the start (which builds the table before the first
request can be sent) imports none of these modules: a handler's module loads at the tool's
first call, and what only some calls need (the code notes after a write) at that call.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tether.core.toolspec import ToolContext, ToolError, ToolOutput
from tether.host import (
    copy_regular,
    read_small_file,
    refuse_special,
)
from tether.tools._paths import display_path

from .copy_check import code_lines, copied_from, copy_note
from .file_text import (
    _bare,
    _count_lines,
    _load_text,
    _not_found,
    _os_errors_as_tool_errors,
    _render_line,
    _split_keepends,
    _write_bytes,
)
from .limits import READ_CHAR_CAP
from .outside_values import outside_values_note

if TYPE_CHECKING:
    from .params import (
        CopyFileParams,
        CreateDirParams,
        DeleteFileParams,
        ListDirParams,
        ReadFileParams,
        WriteFileParams,
    )

READ_LINE_LIMIT = 400
LIST_ENTRY_CAP = 500
COMPARE_MAX_BYTES = 2 * 1024 * 1024
"""A write_file over a file up to this size is compared with what it holds."""


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
    return ToolOutput("\n".join(page) + outside_values_note(path, loaded.text, ctx), summary=summary)


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
    new = args.content.encode("utf-8")
    old = _current_bytes(path) if existed else None
    if old == new:  # not an error: a write sent again after it ran is done, not failed
        return ToolOutput(f"Unchanged: {shown} already held exactly this content; nothing was "
                          "written. If you meant to change it, this content does not hold the change.",
                          summary=f"unchanged {shown}")
    _write_bytes(path, new)
    verb = "Overwrote" if existed else "Created"
    count = _count_lines(args.content)
    same_code = old is not None and code_lines(old) == code_lines(new)
    source = None if same_code else copied_from(path, new)
    copy = "" if source is None else display_path(source, ctx.root)
    from .code_notes import code_notes

    return ToolOutput(
        f"{verb} {shown} ({count:,} lines)"
        + (": only blank lines and spacing changed, every other line is as it was, so what the code "
           "does is unchanged. To add code, use edit_file: old_content the file's last lines, "
           "new_content those lines with the new code after them." if same_code
           else ".") + (copy_note(copy) if copy else "")
        + code_notes(path, args.content, shown, ctx, _text_of(old)),
        summary=f"{verb.lower()} {shown}" + (f" (a copy of {copy})" if copy else ""),
        changed_paths=(path,),
    )


def _current_bytes(path: Path) -> bytes | None:
    """What `path` holds now, when it is small enough to compare (None otherwise)."""
    try:
        return read_small_file(path, COMPARE_MAX_BYTES)
    except OSError:  # too large, unreadable: written without the comparison
        return None


def _text_of(data: bytes | None) -> str | None:
    """A file's old bytes as text, for the checks that compare before and after (None: it
    was new, or too large to read for the comparison)."""
    return None if data is None else data.decode("utf-8", errors="replace")


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
