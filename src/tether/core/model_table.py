"""What varies by model family, as data: the table in models.toml (shipped with tether),
plus the user's own TETHER_HOME/models.toml, which adds entries or replaces one of the same
pattern. Never a project file: a repository must not change how tether treats its model.

Each entry holds only what genuinely differs between families (the profile when the size
is unknown, whether native tool calls are to be trusted, a temperature, a hosted model's
window, whether to ask for thoughts, whether it takes images); the code reads these fields
instead of branching on model names. The most specific matching pattern wins (see
`ModelTable.match`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ..host import read_toml_file

USER_FILE = "models.toml"
BUILTIN_FILE = Path(__file__).with_name("models.toml")
BUILTIN = "built-in"
CHARS_PER_TOKEN = 4
"""The estimate of text per token every count uses until a provider's own counts calibrate it
(the context guard, the repo map's budget)."""

ProfileName = Literal["small", "full"]


@dataclass(frozen=True)
class ModelEntry:
    """One family's row. None: the table says nothing, the usual rule applies."""

    patterns: tuple[str, ...]
    profile: ProfileName | None = None
    """The profile when neither the model's name nor its server states its size."""
    native_tools: bool | None = None
    """False: the family's native tool calls are absent or unreliable (text protocol)."""
    temperature: float | None = None
    """Sent when the user set none; before the small profile's own value."""
    context_window: int | None = None
    """A hosted model's window, for an API that states none."""
    thoughts: bool | None = None
    """Ask the API for the model's thinking (Gemini's `includeThoughts`)."""
    images: bool | None = None
    """True: the family takes images; otherwise a request with one is refused before it is
    sent (the image_input setting overrides)."""
    source: str = BUILTIN
    """Where the entry came from: "built-in" or the user file's path."""


@dataclass(frozen=True)
class ModelMatch:
    entry: ModelEntry
    pattern: str

    def shown(self) -> str:
        """For the status line and the json output: `qwen3 (built-in)`."""
        return f"{self.pattern} ({self.entry.source})"


@dataclass(frozen=True)
class ModelTable:
    entries: tuple[ModelEntry, ...] = ()
    problems: tuple[str, ...] = field(default=(), compare=False)
    """One line per file that could not be used (the built-in entries stand in for it)."""

    def match(self, model: str) -> ModelMatch | None:
        """The entry whose pattern matches `model` most specifically (the most characters
        that are not wildcards); on a tie the later entry, so the user's file wins."""
        name = _normal(model)
        best: tuple[int, int, ModelMatch] | None = None
        for order, entry in enumerate(self.entries):
            for pattern in entry.patterns:
                if _literal_head(pattern) not in name or _pattern_regex(pattern).search(name) is None:
                    continue
                rank = (_specificity(pattern), order)
                if best is None or rank >= best[:2]:
                    best = (*rank, ModelMatch(entry, pattern))
        return best[2] if best is not None else None

    def entry(self, model: str) -> ModelEntry | None:
        found = self.match(model)
        return found.entry if found is not None else None

    def with_entries(self, added: tuple[ModelEntry, ...]) -> ModelTable:
        """This table with `added` after it; an added entry replaces any of the same patterns."""
        taken = {p for entry in added for p in entry.patterns}
        kept = tuple(e for e in self.entries if not taken & set(e.patterns))
        return ModelTable(kept + added, self.problems)


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _specificity(pattern: str) -> int:
    return sum(1 for ch in pattern if ch not in "*?")


@cache
def _literal_head(pattern: str) -> str:
    """What a match must contain: the pattern up to its first wildcard. Checked before the
    regex, so a start compiles only the patterns that may match its model, not all of them."""
    normal = _normal(pattern)
    cut = min((i for i, ch in enumerate(normal) if ch in "*?"), default=len(normal))
    return normal[:cut]


@cache
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """Anywhere in the name from a word boundary (not inside a longer word), wildcards as globs."""
    body = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch)
                   for ch in _normal(pattern))
    return re.compile(r"(?:^|(?<=[^a-z0-9]))" + body)


# ---------------------------------------------------------------- reading a file

_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "profile": (str, "small or full"),
    "native_tools": (bool, "true or false"),
    "temperature": ((int, float), "a number from 0 to 2"),
    "context_window": (int, "a positive whole number of tokens"),
    "thoughts": (bool, "true or false"),
    "images": (bool, "true or false"),
}


class EntryError(ValueError):
    """A table entry that cannot be used; the message names the entry."""


def _patterns(raw: Any, label: str) -> tuple[str, ...]:
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items or not all(
        isinstance(p, str) and p.strip("*? ") for p in items
    ):
        raise EntryError(f"{label}: `match` must be a pattern or a list of patterns")
    return tuple(p.strip() for p in items)


def _checked(name: str, value: Any, label: str) -> Any:
    kind, wanted = _FIELDS[name]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)
    if ok and name == "profile":
        ok = value in ("small", "full")
    elif ok and name == "temperature":
        ok = 0 <= value <= 2
    elif ok and name == "context_window":
        ok = value > 0
    if not ok:
        raise EntryError(f"{label}: `{name}` must be {wanted}, not {value!r}")
    return float(value) if name == "temperature" else value


def parse_entry(raw: Any, number: int, source: str) -> ModelEntry:
    """One `[[model]]` table; EntryError naming it (its number and patterns) when it is wrong."""
    label = f"entry {number}"
    if not isinstance(raw, dict):
        raise EntryError(f"{label} is not a table")
    patterns = _patterns(raw.get("match"), label)
    label = f"entry {number} ({', '.join(patterns)})"
    unknown = sorted(set(raw) - set(_FIELDS) - {"match"})
    if unknown:
        raise EntryError(f"{label}: unknown field `{unknown[0]}` (known: match, {', '.join(_FIELDS)})")
    values = {name: _checked(name, value, label) for name, value in raw.items() if name != "match"}
    return ModelEntry(patterns, source=source, **values)


def parse_table(data: Any, source: str) -> tuple[ModelEntry, ...]:
    """The entries of a parsed file; EntryError for the first entry that is wrong."""
    if not isinstance(data, dict) or set(data) - {"model"}:
        raise EntryError("must hold only [[model]] entries")
    rows = data.get("model", [])
    if not isinstance(rows, list):
        raise EntryError("`model` must be a list of [[model]] entries")
    return tuple(parse_entry(row, number, source) for number, row in enumerate(rows, 1))


def read_entries(path: Path, source: str) -> tuple[tuple[ModelEntry, ...], str]:
    """The file's entries and "", or no entries and a one-line problem naming the file (and
    the entry at fault); an absent file has no entries and no problem."""
    loaded = read_toml_file(path)
    if not loaded.exists:
        return (), ""
    try:
        if loaded.broken:
            raise EntryError(loaded.problem)
        return parse_table(loaded.data, source), ""
    except EntryError as exc:
        where = "" if loaded.broken else f"{path}: "
        return (), f"{where}{exc}; the built-in model table is used"


@cache
def builtin_table() -> ModelTable:
    """The table shipped with tether, read once. A broken one is a bug: it raises."""
    entries, problem = read_entries(BUILTIN_FILE, BUILTIN)
    if problem or not entries:
        raise RuntimeError(problem or f"{BUILTIN_FILE} is missing")
    return ModelTable(entries)


def load_model_table(home: Path) -> ModelTable:
    """The built-in table with the user's TETHER_HOME/models.toml on top; a user file that
    cannot be used leaves the built-in table, and its problem in `problems`."""
    path = home / USER_FILE
    added, problem = read_entries(path, str(path))
    table = builtin_table().with_entries(added)
    return ModelTable(table.entries, (problem,)) if problem else table


def known_context_window(model: str) -> int | None:
    """The window of a known hosted model, from the built-in model table (models.toml: the
    entry of its family states it); None if unknown. A routing prefix such as `openai/` or
    `models/` does not hide the family."""
    entry = builtin_table().entry(model)
    return entry.context_window if entry is not None else None
