"""edit_file with one mode, for small models: replace old_content with new_content.

The full edit_file also takes line anchors; small models mix the two modes
(`start_anchor: "1:1"` beside old_content) and stop at the error. This variant
offers only the replacement, and answers any other argument with the right form.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.read_lines import READ_PREFIX
from ..core.toolspec import Tool, ToolContext, ToolError, ToolOutput
from .edit_blanks import blank_lines_change
from .edit_indent import reindented_change
from .edit_rename import renamed_throughout
from .edit_repair import repaired_edit
from .edit_syntax import syntax_guard
from .limits import params_named

if TYPE_CHECKING:
    from .params import EditFileParams, SimpleEditParams

RIGHT_FORM = (
    '{"name": "edit_file", "arguments": {"filepath": "app.py", '
    '"old_content": "exact text now in the file", "new_content": "the text to put there"}}'
)
_ANCHOR_ADVICE = re.compile(
    r",? or (?:replace those lines with start_anchor=\S+ and end_anchor=\S+?|use start_anchor/end_anchor)(?=\.)"
)


SHOW_FILE_CHARS = 3_000
"""A file this short is shown whole when old_content missed: the model copies from it."""


def _current_text(path: Path, limit: int | None = SHOW_FILE_CHARS) -> str:
    """The file's text ("" when unreadable or over `limit` characters)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "" if limit is not None and len(text) > limit else text


def _shown_whole(text: str) -> str:
    return f"\nThe whole file now reads (copy old_content from it exactly):\n{text}" if text else ""


_INFORMATIVE = re.compile(r"[^\W_]")
REPAIRED_NOTE = (
    "old_content was not found as written, but its one changed line, {old!r}, is on line "
    "{line} and nowhere else (the lines around it held nothing to match), so that line was "
    "changed:\n"
)


def _one_line_change(full: Tool, params: EditFileParams, ctx: ToolContext, text: str) -> Any:
    """The edit, when old_content missed only in lines that say nothing: a small model wraps
    the line it changes in made-up braces or brackets (`{\n "timeout_s": 30\n}`). If exactly
    one line differs between old and new, every other line is bare punctuation, and the
    changed old line occurs once in the file, that one occurrence is changed. Anything more
    (context with words in it, which may name another place) stays an error."""
    change = _single_changed_line(params.old_content or "", params.new_content)
    if change is None or not text:
        return None
    old_line, new_line = change
    if text.count(old_line) != 1:
        return None
    start = text.index(old_line)
    if _cuts_a_word(text, start, start + len(old_line)):
        return None  # "x": 3 inside "x": 30 is another value
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    whole = text[line_start : line_end if line_end != -1 else len(text)]
    note = REPAIRED_NOTE.format(old=old_line, line=text.count("\n", 0, start) + 1)
    return repaired_edit(full, ctx, params.filepath, whole, whole.replace(old_line, new_line, 1), note)


SPREAD_NOTE = (
    "old_content was not found as written, but its lines are in the file in that order with "
    "other lines between them (lines {first}-{last}, and nowhere else), and only one of them "
    "changes, so line {line} was changed:\n"
)
MAX_GAP = 2
"""Lines the file may have between the lines of old_content, all gaps together, for the spread
repair (more, and the lines may come from different sections)."""


def _spread_change(full: Tool, params: EditFileParams, ctx: ToolContext, text: str) -> Any:
    """The edit, when old_content left out lines between its own: a small model writes
    `[cache]\nenabled = true` for a section that has a comment between the two. If
    exactly one line differs between old and new, and the old lines occur as whole lines in
    the file in that order, at most MAX_GAP lines apart, in exactly one place, that one line
    is changed there. The context picks the place (`enabled = true` may occur twice)."""
    old_lines = [line.strip() for line in (params.old_content or "").splitlines() if line.strip()]
    new_lines = [line.strip() for line in params.new_content.splitlines() if line.strip()]
    if len(old_lines) < 2 or len(old_lines) != len(new_lines):
        return None
    changed = [k for k, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    if len(changed) != 1:
        return None
    file_lines = text.splitlines(keepends=True)
    places = _spread_places([line.strip() for line in file_lines], old_lines)
    if len(places) != 1:
        return None
    place = places[0]
    first, last, at = place[0], place[-1], place[changed[0]]
    span = file_lines[first : last + 1]
    target = file_lines[at]
    fixed_line = target.replace(old_lines[changed[0]], new_lines[changed[0]], 1)
    new = "".join(fixed_line if n == at else line for n, line in enumerate(span, first))
    note = SPREAD_NOTE.format(first=first + 1, last=last + 1, line=at + 1)
    return repaired_edit(full, ctx, params.filepath, "".join(span), new, note)


def _spread_places(file_lines: list[str], wanted: list[str]) -> list[list[int]]:
    """Every placement of `wanted` as whole (stripped) lines of the file, in order, each at
    most MAX_GAP lines after the one before and MAX_GAP in all (the first match of each line
    is taken)."""
    places: list[list[int]] = []
    for start, line in enumerate(file_lines):
        if line != wanted[0]:
            continue
        place = [start]
        for want in wanted[1:]:
            after = place[-1] + 1
            window = file_lines[after : after + MAX_GAP + 1]
            if want not in window:
                break
            place.append(after + window.index(want))
        else:
            if place[-1] - place[0] + 1 - len(wanted) <= MAX_GAP:  # all the gaps together
                places.append(place)
    return places


def _cuts_a_word(text: str, start: int, end: int) -> bool:
    """The match text[start:end] begins or ends in the middle of a word or number."""

    def in_word(index: int) -> bool:
        return 0 <= index < len(text) and bool(_INFORMATIVE.match(text[index]))

    return (in_word(start - 1) and in_word(start)) or (in_word(end) and in_word(end - 1))


def _single_changed_line(old: str, new: str) -> tuple[str, str] | None:
    """(old line, new line), stripped, when they are the only lines that differ and the
    lines they share carry no letters or digits; None otherwise."""
    old_lines = [line.strip() for line in old.splitlines() if line.strip()]
    new_lines = [line.strip() for line in new.splitlines() if line.strip()]
    if len(old_lines) != len(new_lines):
        return None
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]
    shared = [a for a, b in zip(old_lines, new_lines, strict=True) if a == b]
    if len(changed) != 1 or any(_INFORMATIVE.search(line) for line in shared):
        return None
    old_line, new_line = changed[0]
    return (old_line, new_line) if _INFORMATIVE.search(old_line) else None


_READ_HASH = re.compile(r"^(\d+):[0-9a-f]{2}\|", re.M)


def _without_read_prefixes(text: str, filepath: str = "") -> str:
    """Text copied from read_file with its `N:hh|` line prefixes, or from search_in_file's
    matches of this file with their `path:N: ` prefixes: when all lines but perhaps the first
    have one, they are the tool's, not the file's, and are taken off (the match stays exact,
    so a wrong guess only fails to match)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and all(READ_PREFIX.match(line) for line in lines[1:] or lines):
        return READ_PREFIX.sub("", text)
    if filepath and lines and all(_match_of(line, filepath) for line in lines):
        return _SEARCH_PREFIX.sub("", text)
    return text


_SEARCH_PREFIX = re.compile(r"^(?:\./)?(?P<path>[^\s:]+):\d+: ?", re.M)
"""search_in_file's mark at the start of a matching line: `path:N: `."""


def _match_of(line: str, filepath: str) -> bool:
    """The line is a search match line of `filepath`."""
    found = _SEARCH_PREFIX.match(line)
    return found is not None and found.group("path") == filepath.removeprefix("./")


def plain_read_tool(full: Tool, numbered: bool = True) -> Tool:
    """read_file without the line hashes: the hashes serve only the anchor mode, which the
    one-mode edit_file does not offer, and small models copy them. `numbered`: each line as
    `N| text`; otherwise the file's text as it is (fewer tokens, nothing to copy by mistake)."""

    def handler(args: Any, ctx: ToolContext) -> Any:
        output = full.handler(args, ctx)
        if isinstance(output, ToolOutput):
            return replace(output, text=_READ_HASH.sub(r"\1| " if numbered else "", output.text))
        return output

    shown = ("each line is shown as 'N| text' (N = line number, not part of the file)"
             if numbered else "its text is shown as it is")
    return full.changed(
        description=f"Read a text file; {shown}. Long files are paged: use offset.",
        handler=handler,
    )


def _guarded(full: Tool, params: EditFileParams, ctx: ToolContext) -> Any:
    """syntax_guard's answer for an edit of a readable file (None: run the edit as sent)."""
    try:
        path = ctx.resolve(params.filepath)
    except (ToolError, OSError, ValueError):
        return None  # the edit itself says why
    if not ctx.may_read(path):
        return None
    return syntax_guard(full, params, ctx, _current_text(path, limit=None), path)


def simple_edit_tool(full: Tool) -> Tool:
    """The one-mode variant of the built-in edit_file tool `full`."""

    def handler(args: SimpleEditParams, ctx: ToolContext) -> Any:
        extra = sorted((args.model_extra or {}).keys())
        if extra:
            raise ToolError(
                f"edit_file takes only filepath, old_content and new_content (not "
                f"{', '.join(extra)}); nothing was changed. Send: {RIGHT_FORM}"
            )
        if not args.old_content:
            raise ToolError(
                "old_content is empty; nothing was changed. Copy the exact lines to replace "
                f"from read_file (without the 'N| ' prefixes), or use write_file for a whole "
                f"file. Send: {RIGHT_FORM}"
            )
        from .params import EditFileParams  # loaded with this tool's own model, at its first call

        params = EditFileParams(
            filepath=args.filepath,
            old_content=_without_read_prefixes(args.old_content, args.filepath),
            new_content=_without_read_prefixes(args.new_content, args.filepath),
            start_anchor=None,
            end_anchor=None,
        )
        guarded = _guarded(full, params, ctx)
        if guarded is not None:
            return guarded
        try:
            output: ToolOutput = full.handler(params, ctx)  # type: ignore[assignment]
        except ToolError as exc:
            message = _ANCHOR_ADVICE.sub("", str(exc))
            several = message.startswith("old_content occurs")
            if not several and not message.startswith("old_content was not found"):
                raise ToolError(message) from None
            current = _current_text(ctx.resolve(args.filepath), limit=None)  # read once, for every repair
            repaired = renamed_throughout(full, params, ctx, current) if several else (
                _one_line_change(full, params, ctx, current) or _spread_change(full, params, ctx, current)
                or blank_lines_change(full, params, ctx, current) or reindented_change(full, params, ctx, current))
            if repaired is not None:
                return repaired
            if several:
                raise ToolError(message) from None
            short = current if len(current) <= SHOW_FILE_CHARS else ""
            raise ToolError(message + _shown_whole(short)) from None
        return output

    return full.changed(
        description="Replace old_content (exact text that occurs once in the file) with "
        "new_content. Returns a diff.",
        params=params_named("SimpleEditParams"),
        handler=handler,
    )
