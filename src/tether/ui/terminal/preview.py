"""The diff an edit_file or write_file call would make, shown before it is approved."""

from __future__ import annotations

import re
from pathlib import Path

from tether.core.messages import ToolCall
from tether.host import read_file_bytes


def change_preview(call: ToolCall, root: Path | None) -> list[str] | None:
    """The unified diff an edit_file or write_file call would make, when it can be known."""
    args = call.arguments
    path = args.get("filepath")
    if not isinstance(path, str):
        return None
    if call.name == "edit_file":
        lines = _edit_preview_lines(args, path, root)
        if lines is None:
            return None
        old_lines, new_lines = lines
    elif call.name == "write_file" and isinstance(args.get("content"), str):
        current = _current_text(path, root)
        if current is None:
            return None
        old_lines = current.splitlines()
        new_lines = args["content"].splitlines()
    else:
        return None
    import difflib  # at the first preview: no start shows a diff

    diff = difflib.unified_diff(old_lines, new_lines, path, path, lineterm="", n=2)
    return list(diff)[2:] or ["(no change)"]


PREVIEW_FILE_LIMIT = 2_000_000
"""Bytes; a bigger file is previewed by its snippet alone, to keep the diff quick."""


def _edit_preview_lines(
    args: dict[str, object], path: str, root: Path | None
) -> tuple[list[str], list[str]] | None:
    """The lines before and after an edit_file call, for the approval diff.

    The whole current file is diffed where it can be read, so the hunk headers
    carry the file's real line numbers. Otherwise, or when old_content does not
    occur exactly once, only the snippet is diffed. None: nothing to show.
    """
    raw_new = args.get("new_content", "")
    new = (raw_new if isinstance(raw_new, str) else str(raw_new)).replace("\r\n", "\n")
    old = args.get("old_content")
    current = _text_if_readable(path, root)
    # CRLF files: the tool matches the model's "\n" text against "\r\n" lines.
    text = current.replace("\r\n", "\n") if current is not None else None
    if isinstance(old, str) and old:
        old_lf = old.replace("\r\n", "\n")
        first = text.find(old_lf) if text is not None else -1
        if text is None or first == -1 or text.find(old_lf, first + 1) != -1:
            return old.splitlines(), new.splitlines()
        edited = text[:first] + new + text[first + len(old_lf) :]
        return _split_lf(text), _split_lf(edited)
    start = args.get("start_anchor")
    end = args.get("end_anchor") or start
    if text is None or not isinstance(start, str) or not isinstance(end, str):
        return None
    lines = _split_lf(text)
    first_line, last_line = _anchored_line(start, lines), _anchored_line(end, lines)
    if first_line is None or last_line is None or last_line < first_line:
        return None
    return lines, lines[: first_line - 1] + _split_lf(new) + lines[last_line:]


def _anchored_line(anchor: str, lines: list[str]) -> int | None:
    """The line number an 'N:hh' anchor names, if it is in range and not stale."""
    from tether.tools.file_text import line_hash  # the file tools load with the first edit

    match = re.match(r"\s*(\d+)\s*:\s*([0-9a-fA-F]{2})(?![0-9a-fA-F])", anchor)
    if match is None:
        return None
    number = int(match.group(1))
    # A stale anchor makes the tool refuse: better no preview than the wrong lines.
    if not 1 <= number <= len(lines) or line_hash(lines[number - 1]) != match.group(2).lower():
        return None
    return number


def _text_if_readable(path: str, root: Path | None) -> str | None:
    try:
        return _target_text(path, root)
    except OSError:
        return None


def _target_text(path: str, root: Path | None) -> str:
    """The text of the file a call names; OSError when it is absent, larger than
    PREVIEW_FILE_LIMIT or not a regular file (a FIFO is refused, never waited on)."""
    target = Path(path) if root is None or Path(path).is_absolute() else root / path
    return read_file_bytes(target, PREVIEW_FILE_LIMIT).decode("utf-8", errors="replace")


def _split_lf(text: str) -> list[str]:
    """Lines split on "\n" only, numbered as the file tools number them."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _current_text(path: str, root: Path | None) -> str | None:
    """The text a write_file call replaces: "" for a new file, None when it cannot be
    previewed (a diff against nothing would misstate the change)."""
    try:
        return _target_text(path, root)
    except FileNotFoundError:
        return ""
    except OSError:
        return None
