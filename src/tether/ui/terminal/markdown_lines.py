"""What one line of markdown is, as CommonMark reads it: a fence, a heading, a list item,
the start of an HTML block or a table, or something that interrupts a paragraph."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_THEMATIC_BREAK = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_LIST_ITEM = re.compile(r"^( {0,3})([-+*]|\d{1,9}[.)])(?:[ \t]+(.*))?$")
_BLOCK_QUOTE = re.compile(r"^ {0,3}>")
_QUOTE_MARKERS = re.compile(r"^(?: {0,3}> ?)+")
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_ESCAPED_PIPE = re.compile(r"\\\|")

# HTML blocks, as CommonMark defines them: the first five kinds run to an end
# marker (blank lines included), the last two to the next blank line.
_HTML_BLOCK_NAMES = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|"
    "h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|"
    "noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|"
    "thead|title|tr|track|ul"
)
_HTML_ATTRIBUTE = (
    r"""(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*(?:[^"'=<>`\x00-\x20]+|'[^']*'|"[^"]*"))?)"""
)
_HTML_RUNS_TO_MARKER = (
    (
        re.compile(r"^<(?:script|pre|style|textarea)(?=\s|>|$)", re.IGNORECASE),
        re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE),
    ),
    (re.compile(r"^<!--"), re.compile(r"-->")),
    (re.compile(r"^<\?"), re.compile(r"\?>")),
    (re.compile(r"^<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"^<!\[CDATA\["), re.compile(r"\]\]>")),
)
_HTML_BLOCK_TAG = re.compile(rf"^</?(?:{_HTML_BLOCK_NAMES})(?=\s|/?>|$)", re.IGNORECASE)
_HTML_LONE_TAG = re.compile(
    rf"^(?:<[A-Za-z][A-Za-z0-9-]*{_HTML_ATTRIBUTE}*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*$"
)


def _is_blank(line: str) -> bool:
    return not line.strip()


def _is_code_indented(line: str) -> bool:
    return line.startswith(("    ", "\t"))


def _starts_indented(line: str) -> bool:
    return line[:1] in (" ", "\t")


def _fence_opener(line: str) -> tuple[str, int, int, str] | None:
    """(fence character, fence length, indent, info string) when `line` opens a fence."""
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    indent, fence, info = match.groups()
    if fence[0] == "`" and "`" in info:
        return None  # markdown allows no backtick in the info string of a backtick fence
    return fence[0], len(fence), len(indent), info.strip()


def _closes_fence(line: str, char: str, length: int) -> bool:
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" ")) <= 3
        and len(stripped) >= length
        and stripped == char * len(stripped)
    )


def _list_item(line: str) -> re.Match[str] | None:
    if _THEMATIC_BREAK.match(line):
        return None  # "* * *" is a rule, not a list
    return _LIST_ITEM.match(line)


def _list_interrupts_paragraph(line: str) -> bool:
    """Markdown lets a list cut a paragraph short only with a bullet or "1." and some text."""
    match = _list_item(line)
    if match is None or not (match.group(3) or "").strip():
        return False
    marker = match.group(2)
    return marker in "-+*" or marker[:-1] == "1"


def _starts_other_block(line: str) -> bool:
    """A fence, heading, rule, quote or HTML block, each of which ends a paragraph, table or list."""
    return bool(
        _fence_opener(line)
        or _ATX_HEADING.match(line)
        or _THEMATIC_BREAK.match(line)
        or _BLOCK_QUOTE.match(line)
        or _html_interrupts_paragraph(line)
    )


@dataclass(frozen=True)
class _HtmlStart:
    end: re.Pattern[str] | None
    """What ends the block; None: the next blank line."""
    interrupts_paragraph: bool


def _html_start(line: str) -> _HtmlStart | None:
    text = line.lstrip(" ")
    if len(line) - len(text) > 3 or not text.startswith("<"):
        return None
    for start, end in _HTML_RUNS_TO_MARKER:
        if start.search(text):
            return _HtmlStart(end, True)
    if _HTML_BLOCK_TAG.search(text):
        return _HtmlStart(None, True)
    if _HTML_LONE_TAG.search(text):
        return _HtmlStart(None, False)
    return None


def _html_interrupts_paragraph(line: str) -> bool:
    start = _html_start(line)
    return start is not None and start.interrupts_paragraph


def _table_cell_count(line: str) -> int:
    cells = _ESCAPED_PIPE.sub("", line).strip()
    if cells.startswith("|"):
        cells = cells[1:]
    if cells.endswith("|"):
        cells = cells[:-1]
    return cells.count("|") + 1


def _starts_table(header: str, delimiter: str) -> bool:
    return (
        "|" in header
        and "|" in delimiter
        and bool(_TABLE_DELIMITER.match(delimiter))
        and _table_cell_count(header) == _table_cell_count(delimiter)
    )
