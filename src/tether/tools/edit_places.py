"""Where a setting really is, when an edit_file of one `key: value` line missed.

A small model asked to change a value in a config file it never read writes the whole file
from a guess (`replicas: 1` in a made-up Deployment, for a file whose worker has
`replicas: 3`), and sends the same guess again after the error shows the real file. What it
means is clear from its own call: one line changes, `replicas: 1` -> `replicas: 5`. This
names the lines of the file that set that key, each under its section, and writes out the
edit_file call for the one place its guess points to (the section it names, or the only
place there is). The call is offered, never made: the model still has to send it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_SETTING = re.compile(r"""^(\s*)(?:-\s+)?["']?([A-Za-z_][\w.-]*)["']?\s*[:=]\s*(.*?)\s*,?\s*$""")
"""A `key: value` (YAML), `key = value` (TOML, INI) or `"key": value,` (JSON) line."""
_SECTION_KEY = re.compile(r"""^\s*(?:-\s+)?\[*["']?([A-Za-z_][\w.-]*)["']?\]*""")
_WORD = re.compile(r"[A-Za-z_][\w-]*")
MAX_PLACES = 8
MAX_BLOCK_LINES = 6
"""The offered old_content runs from the section's line to the setting's, at most this long."""


@dataclass(frozen=True)
class Place:
    line: int
    """1-based."""
    section: str
    """The key of the block the setting is in ("" at the top level)."""
    section_line: int
    """The section's own line (0 for none)."""


def changed_setting(old: str, new: str) -> tuple[str, str] | None:
    """(key, new value) when exactly one line differs between old and new and both are
    settings of the same key; None otherwise."""
    old_lines = [line for line in old.splitlines() if line.strip()]
    new_lines = [line for line in new.splitlines() if line.strip()]
    if len(old_lines) != len(new_lines):
        return None
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a.strip() != b.strip()]
    if len(changed) != 1:
        return None
    before, after = (_SETTING.match(_unwrapped(line)) for line in changed[0])
    if before is None or after is None or before.group(2) != after.group(2):
        return None
    return after.group(2), after.group(3)


def _unwrapped(line: str) -> str:
    """The line without braces a model wrapped one JSON setting in (`{"timeout_s": 30}`)."""
    return re.sub(r"^(\s*)[{\[]\s*", r"\1", re.sub(r"\s*[}\]]+\s*,?\s*$", "", line))


def setting_places(lines: list[str], key: str) -> list[Place]:
    """The lines that set `key`, each with the section it is under."""
    places = []
    for index, line in enumerate(lines):
        found = _SETTING.match(line)
        if found is not None and found.group(2) == key:
            section, at = _section_of(lines, index)
            places.append(Place(index + 1, section, at))
    return places


def _section_of(lines: list[str], index: int) -> tuple[str, int]:
    """The key of the nearest line above that opens a block holding line `index`: a less
    indented line (YAML, JSON), else a `[section]` header (TOML, INI); ("", 0) for none."""
    indent = _indent(lines[index])
    for above in range(index - 1, -1, -1):
        text = lines[above]
        if not text.strip() or text.lstrip().startswith(("#", "//", ";")):
            continue
        header = text.strip().startswith("[") and text.strip().endswith("]")
        if _indent(text) < indent or (indent == 0 and header):
            key = _SECTION_KEY.match(text)
            return (key.group(1) if key else text.strip()), above + 1
    return "", 0


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def places_hint(text: str, old: str, new: str, filepath: str) -> str:
    """The note for a missed edit whose one changed line sets a key the file has: where the
    key is set, and the edit_file call for the place the model's own old_content points to.
    "" when the edit is not of that kind or the file does not set the key."""
    setting = changed_setting(old, new)
    if setting is None:
        return ""
    key, value = setting
    lines = text.splitlines()
    places = setting_places(lines, key)
    if not places or len(places) > MAX_PLACES:
        return ""
    listed = "; ".join(f"line {p.line}" + (f" (in {p.section})" if p.section else "")
                       + f": {lines[p.line - 1].strip().rstrip(',')}" for p in places)
    note = f"\n{filepath} sets {key} on {listed}."
    chosen = _pointed_to(places, old)
    if chosen is None:
        return note + " Send the edit for the one you mean, copying its lines exactly."
    now = _SETTING.match(lines[chosen.line - 1])
    if now is not None and now.group(3) == value:
        return note + f" Line {chosen.line} already sets it to {value}."
    return note + " The call that changes the one your old_content names:\n" + _edit_call(
        lines, chosen, value, filepath)


def _pointed_to(places: list[Place], old: str) -> Place | None:
    """The only place, or the only one whose section is a word of the model's old_content."""
    if len(places) == 1:
        return places[0]
    words = set(_WORD.findall(old))
    named = [p for p in places if p.section and p.section in words]
    return named[0] if len(named) == 1 else None


def _edit_call(lines: list[str], place: Place, value: str, filepath: str) -> str:
    near = place.section_line > 0 and place.line - place.section_line < MAX_BLOCK_LINES
    start = place.section_line if near else place.line
    block = lines[start - 1 : place.line]
    line = block[-1]
    found = _SETTING.match(line)
    assert found is not None  # a place is a setting line
    old_value = found.group(3)
    at = line.rindex(old_value) if old_value else len(line)
    changed = line[:at] + value + line[at + len(old_value):]
    arguments = {"filepath": filepath, "old_content": "\n".join(block),
                 "new_content": "\n".join([*block[:-1], changed])}
    return json.dumps({"name": "edit_file", "arguments": arguments})
