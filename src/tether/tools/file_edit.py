"""edit_file: replace exact text, or a range of lines named by the `N:hh` anchors
read_file shows; a stale anchor or an ambiguous match is refused, never guessed."""

from __future__ import annotations

import difflib
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tether.core.toolspec import ToolContext, ToolError, ToolOutput
from tether.tools._paths import display_path

from .code_notes import code_notes
from .file_text import (
    _bare,
    _load_text,
    _Loaded,
    _os_errors_as_tool_errors,
    _render_line,
    _split_keepends,
    _write_bytes,
    line_hash,
)

if TYPE_CHECKING:
    from .params import EditFileParams

DIFF_CHAR_CAP = 4_000
CLOSEST_MATCH_SECONDS = 2.0
_ANCHOR_RE = re.compile(r"\s*(\d+)\s*:\s*([0-9a-fA-F]{2})(?![0-9a-fA-F])")
_READ_PREFIX_RE = re.compile(r"^\d+:[0-9a-f]{2}\|", re.MULTILINE)

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
        f"Edited {shown} (+{added} -{removed} lines).\n{diff}" + code_notes(path, edited, shown, ctx, loaded.text),
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
