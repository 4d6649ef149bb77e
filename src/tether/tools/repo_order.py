"""Which source files a map parses first, decided before any is read: from what the
listing already knows (the path, the name, the size, the modification time) and from
what the conversation mentions.

On a big tree parsing is nearly all of a map's cost (milliseconds a file), and a budget
of a thousand tokens shows a few dozen definitions: the map parses the files most likely
to hold them, best first, and stops at the budget's share (see `files_to_parse`).
The weights are a table, read by one scoring function.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from .repo_tags import Stamp

FILES_PER_TOKEN = 0.5
"""Files parsed for each token of the budget: the ranking needs the files that use the
shown definitions as well as the files defining them."""
MIN_FILES = 256
"""Files parsed at the least, whatever the budget (a small tree is parsed whole)."""

LOW_VALUE_FOLDERS = frozenset({
    "test", "tests", "testing", "spec", "specs", "__tests__", "fixtures", "testdata",
    "example", "examples", "sample", "samples", "demo", "demos", "doc", "docs",
    "bench", "benches", "benchmarks", "vendor", "vendored", "third_party", "thirdparty",
    "extern", "external", "deps", "site-packages", "dist-packages", "build", "dist", "out",
    "target", "generated", "migrations", "locale", "locales",
})
"""Folders whose files rarely hold a project's structure."""
ENTRY_NAMES = frozenset({"__init__", "main", "index", "lib", "mod", "app", "core", "api"})


@dataclass(frozen=True)
class Weights:
    in_play: float = 100.0
    """A file the conversation read, changed or named."""
    mentioned_name: float = 20.0
    """The file's name (without suffix) is a word the conversation mentions."""
    mentioned_part: float = 4.0
    """A word of the file's name (`user_store` -> "store") is mentioned."""
    mentioned_folder: float = 6.0
    """A folder on its path is such a word."""
    per_level: float = -1.0
    """Each folder down from the mapped one."""
    low_value_folder: float = -8.0
    entry_name: float = 1.5
    per_size_decade: float = 1.0
    """log10 of the size: a file with more text defines more."""
    tiny: float = -3.0
    """Under TINY_BYTES: an empty `__init__.py`, a one-line re-export."""
    recent: float = 2.0
    """Changed within RECENT_NS of the newest file: what is being worked on."""


WEIGHTS = Weights()
TINY_BYTES = 120
RECENT_NS = 7 * 24 * 3600 * 10**9
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


def files_to_parse(budget: int) -> int:
    return max(MIN_FILES, int(budget * FILES_PER_TOKEN))


def parse_order(
    stamps: Mapping[str, Stamp], in_play: frozenset[str], words: frozenset[str],
    weights: Weights = WEIGHTS,
) -> list[str]:
    """The relative paths of `stamps`, most promising first (ties by path)."""
    lowered = frozenset(w.lower() for w in words)
    newest = max((mtime for mtime, _ in stamps.values()), default=0)
    scored = sorted(
        (-_score(path, stamp, path in in_play, lowered, newest, weights), path)
        for path, stamp in stamps.items()
    )
    return [path for _, path in scored]


def _score(
    path: str, stamp: Stamp, in_play: bool, words: frozenset[str], newest: int, weights: Weights
) -> float:
    parts = PurePosixPath(path)
    folders = [f.lower() for f in parts.parts[:-1]]
    stem = parts.stem.lower()
    mtime, size = stamp
    score = weights.in_play if in_play else 0.0
    if stem in words:
        score += weights.mentioned_name
    elif _name_words(stem) & words:
        score += weights.mentioned_part
    score += weights.mentioned_folder * sum(1 for f in folders if f in words)
    score += weights.per_level * len(folders)
    score += weights.low_value_folder * sum(1 for f in folders if f in LOW_VALUE_FOLDERS)
    score += weights.entry_name if stem in ENTRY_NAMES else 0.0
    score += weights.per_size_decade * math.log10(size + 1)
    score += weights.tiny if size < TINY_BYTES else 0.0
    score += weights.recent if newest - mtime <= RECENT_NS else 0.0
    return score


def _name_words(stem: str) -> frozenset[str]:
    return frozenset(w for w in _WORD_SPLIT.split(stem) if len(w) >= 4)
