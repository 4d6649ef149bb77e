"""repo_map: the repository's most important definitions, signatures only, fitted to a
token budget.

The files are git's list (tracked and not ignored: `.gitignore` and the exclude files
as git reads them) or, outside a repository, a walk that skips tool folders; every
file passes the same checks a search makes (no symlink leading out, not tether's keys,
no deny rule). On a big tree only the budget's share of them is parsed, the most
promising first (repo_order), and the map says it was cut short. Tags are cached per
file by modification time and size, in memory and on disk (repo_tag_store); a finished map
is cached by the file set, the budget and the focus, never by the prompt's text, so a
new prompt neither rescans nor re-ranks unless it brings a new file or defined name
into play.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.messages import Message, Text
from ..core.model_table import CHARS_PER_TOKEN
from ..core.toolspec import ToolContext
from ..host import searchable_files
from ._paths import display_path
from .ast_grammars import EXTRA_HINT, Grammars, language_of
from .file_search import WalkGuard, search_scope
from .repo_order import files_to_parse, parse_order
from .repo_rank import Focus, Ranking, rank_definitions
from .repo_tag_store import TagStore
from .repo_tags import Definition, FileTags, Stamp, TagCache, stamp_of

MAP_CACHE_SIZE = 16
PARSE_SECONDS = 8.0
"""CPU seconds after which parsing stops, whatever is left of the budget's share (a tree of
huge files): the map is made from what was read and says so. CPU time, not the clock's: on
a loaded machine the clock would cut the map short for other programs' work."""
RECENT_MESSAGES = 30
"""How far back the conversation is read for names and files in play."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_PATHLIKE = re.compile(r"[\w./-]+\.\w+")
PATH_ARGUMENTS = ("filepath", "path", "source", "destination")


def tokens_of(text: str) -> int:
    """The estimate the context guard uses (characters per token)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


@dataclass(frozen=True)
class Mentions:
    """What a conversation talks about, before it is matched against the repository."""

    words: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()


def mentions_in(messages: Sequence[Message], extra: Iterable[str] = ()) -> Mentions:
    """Identifiers and path-like words of the recent user and assistant text, the path
    arguments of recent tool calls, and `extra` (the call's own focus list)."""
    words: set[str] = set()
    paths: set[str] = set()
    for message in messages[-RECENT_MESSAGES:]:
        for part in message.parts:
            if isinstance(part, Text) and message.role in ("user", "assistant"):
                words.update(_IDENTIFIER.findall(part.text))
                paths.update(_PATHLIKE.findall(part.text))
        for call in message.tool_calls:
            paths.update(v for k in PATH_ARGUMENTS if isinstance(v := call.arguments.get(k), str))
    for item in extra:
        words.update(_IDENTIFIER.findall(item))
        paths.add(item)
    return Mentions(frozenset(words), frozenset(paths))


@dataclass
class RepoMap:
    text: str
    files: int
    shown_definitions: int
    cached: bool
    parsed: int = 0
    """Source files whose tags the map was made from (fewer than `files` when cut short)."""


@dataclass(frozen=True)
class _Tagged:
    """The tags a map is made from, and how far the work got."""

    tags: dict[str, FileTags]
    total: int
    """Source files under the mapped folder."""
    out_of_time: bool


@dataclass
class RepoMapper:
    """The caches of one project's maps; one per tool table."""

    grammars: Grammars = field(default_factory=Grammars)
    tag_folder: Path | None = None
    """Where the on-disk tag cache lives (None: tags are kept in memory only)."""
    parse_seconds: float = PARSE_SECONDS
    tag_cache: TagCache = field(init=False)
    _store: TagStore | None = None
    _maps: OrderedDict[tuple[object, ...], tuple[str, int]] = field(default_factory=OrderedDict)
    _last_ranking: tuple[object, Ranking] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.tag_cache = TagCache(self.grammars)

    def build(self, ctx: ToolContext, directory: Path, budget: int, mentions: Mentions) -> RepoMap:
        """The map of the source files under `directory` (one map at a time: a second call
        waits and then finds the first one's tags cached)."""
        with self._lock:
            return self._build(ctx, directory, budget, mentions)

    def _build(self, ctx: ToolContext, directory: Path, budget: int, mentions: Mentions) -> RepoMap:
        stamps = _source_files(ctx, directory)
        by_name = {display_path(path, ctx.root): path for path in stamps}
        focus_files = _files_in_play(by_name, mentions.paths)
        tagged = self._tags_in_order(ctx.root, by_name, stamps, focus_files, mentions, budget)
        if directory == ctx.root:  # a map of one folder must not drop the others' tags
            self.tag_cache.keep_only({by_name[name] for name in tagged.tags})
        tags = tagged.tags
        file_set = tuple(sorted((name, stamps[by_name[name]]) for name in tags))
        focus = Focus(focus_files, frozenset(_defined_names(tags) & mentions.words))
        key = (file_set, tagged.total, budget, focus)
        if key in self._maps:
            self._maps.move_to_end(key)
            text, shown = self._maps[key]
            return RepoMap(text, tagged.total, shown, cached=True, parsed=len(tags))
        note = "\n".join(n for n in (self._note(), _cut_note(tagged, self.parse_seconds)) if n)
        text, shown = fit_to_budget(self._ranking(file_set, focus, tags), tags, budget, note,
                                    total_files=tagged.total)
        self._maps[key] = (text, shown)
        while len(self._maps) > MAP_CACHE_SIZE:
            self._maps.popitem(last=False)
        return RepoMap(text, tagged.total, shown, cached=False, parsed=len(tags))

    def _tags_in_order(
        self, root: Path, by_name: dict[str, Path], stamps: dict[Path, Stamp],
        focus_files: frozenset[str], mentions: Mentions, budget: int,
    ) -> _Tagged:
        """The tags of the budget's share of the files, taken in `parse_order`, until the
        share is read or the time is up; freshly parsed tags go to the on-disk cache."""
        order = parse_order({name: stamps[p] for name, p in by_name.items()}, focus_files,
                            mentions.words)
        store = self._store_for(root)
        deadline = time.thread_time() + self.parse_seconds
        tags: dict[str, FileTags] = {}
        out_of_time = False
        for name in order[:files_to_parse(budget)]:
            if time.thread_time() > deadline:
                out_of_time = True
                break
            path = by_name[name]
            tags[name] = self.tag_cache.tags(path, stamps[path], store)
        self.tag_cache.save(store)
        return _Tagged(tags, len(order), out_of_time)

    def _store_for(self, root: Path) -> TagStore | None:
        if self.tag_folder is None:
            return None
        if self._store is None or self._store.root != root:
            if self._store is not None:
                self._store.close()
            self._store = TagStore(self.tag_folder, root)
        return self._store

    def _ranking(self, file_set: object, focus: Focus, tags: dict[str, FileTags]) -> Ranking:
        """The last ranking again when only the budget changed."""
        if self._last_ranking is None or self._last_ranking[0] != (file_set, focus):
            self._last_ranking = ((file_set, focus), rank_definitions(tags, focus))
        return self._last_ranking[1]

    def _note(self) -> str:
        if self.grammars.available:
            return ""
        return f"[tree-sitter is missing: only Python files show definitions; {EXTRA_HINT}]"


def _cut_note(tagged: _Tagged, seconds: float) -> str:
    """What the map left out, when it did not read every source file."""
    parsed, total = len(tagged.tags), tagged.total
    if tagged.out_of_time:
        return (f"[cut short: parsing stopped after {seconds:g} s of CPU at {parsed:,} of {total:,} source "
                "files, taken most promising first; the tags read are kept, so mapping again "
                "goes further]")
    if parsed < total:
        return (f"[cut short: {parsed:,} of {total:,} source files parsed, the most promising by "
                "name, path, size and age and by what the conversation mentions; a larger "
                "budget, a folder's path or focus names map others]")
    return ""


def _source_files(ctx: ToolContext, directory: Path) -> dict[Path, Stamp]:
    """Files with a grammar under `directory` that a search may read, with their stamps."""
    guard = WalkGuard(ctx, search_scope(directory, ctx.root))
    found: dict[Path, Stamp] = {}
    for path in searchable_files(directory):
        if language_of(path) is None or guard.refusal(path) is not None:
            continue
        stamp = stamp_of(path)
        if stamp is not None:
            found[path] = stamp
    return found


def _files_in_play(files: Iterable[str], paths: frozenset[str]) -> frozenset[str]:
    """Repository files the conversation named: by path, or by a name only one file has."""
    wanted = {p.removeprefix("./") for p in paths}
    by_name: dict[str, list[str]] = {}
    chosen = set()
    for path in files:
        if path in wanted:
            chosen.add(path)
        by_name.setdefault(Path(path).name, []).append(path)
    for name in wanted:
        same = by_name.get(Path(name).name, [])
        if len(same) == 1 and (name == Path(name).name or same[0].endswith(name)):
            chosen.add(same[0])
    return frozenset(chosen)


def _defined_names(tags: dict[str, FileTags]) -> set[str]:
    return {d.name for file_tags in tags.values() for d in file_tags.definitions}


# --- fitting and rendering ---------------------------------------------------------


def fit_to_budget(
    ranking: Ranking, tags: dict[str, FileTags], budget: int, note: str = "",
    total_files: int | None = None,
) -> tuple[str, int]:
    """The map of the most definitions that fit in `budget` tokens (binary search over how
    many of the ranked definitions to show), and that count. `total_files` is what the
    header counts (default: the files of `tags`)."""
    total = len(tags) if total_files is None else total_files
    low, high = 0, len(ranking.definitions)
    best = render_map(ranking, 0, total, note)
    while low < high:
        middle = (low + high + 1) // 2
        text = render_map(ranking, middle, total, note)
        if tokens_of(text) <= budget:
            low, best = middle, text
        else:
            high = middle - 1
    if low == 0 and tokens_of(best) > budget:  # the budget's floor leaves room for this line
        best = _header(0, total, "")
    return best, low


def render_map(ranking: Ranking, count: int, total_files: int, note: str = "") -> str:
    """The first `count` ranked definitions, grouped by file (files in rank order,
    definitions in line order)."""
    chosen: dict[str, list[Definition]] = {}
    for path, definition in ranking.definitions[:count]:
        chosen.setdefault(path, []).append(definition)
    order = [path for path in ranking.files if path in chosen]
    lines = [_header(len(order), total_files, note)]
    for path in order:
        lines.append(f"{path}:")
        lines += [f"  {d.line}: {d.signature}" for d in sorted(chosen[path], key=lambda d: d.line)]
    return "\n".join(lines)


def _header(shown: int, total: int, note: str) -> str:
    head = f"Repository map: {shown:,} of {total:,} source files, most referenced definitions first."
    return f"{head}\n{note}" if note else head
