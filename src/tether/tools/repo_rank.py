"""Which definitions matter most: files are linked from where a name is used to where it
is defined, and ranked with PageRank, personalized toward the files in play and the
names the conversation mentions.

A plain power iteration over a few thousand nodes is a few milliseconds of Python; a
graph library would be a large dependency for forty lines.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from .repo_tags import Definition, FileTags

DAMPING = 0.85
ITERATIONS = 50
TOLERANCE = 1e-6
"""Total change of rank at which the iteration stops: far below what reorders a map."""
MENTIONED_WEIGHT = 10.0
"""A name the conversation mentions counts this many times as much."""
IN_PLAY_WEIGHT = 50.0
"""Uses from a file in play count this many times as much: what it needs is what matters."""
PRIVATE_WEIGHT = 0.1
"""Names starting with "_" and names defined in many files say little about structure."""
WIDELY_DEFINED = 5
DISTINCTIVE_WEIGHT = 10.0
DISTINCTIVE_LENGTH = 8

Graph = Mapping[str, Mapping[str, float]]
"""Source node -> target node -> edge weight."""


def pagerank(
    nodes: list[str], edges: Graph, personalization: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Stationary ranks (summing to 1) of a random walk that follows weighted edges with
    probability DAMPING and otherwise jumps by `personalization` (uniform when empty).
    Rank on nodes without out-edges is spread by `personalization` too."""
    if not nodes:
        return {}
    jump = _normalized(personalization or {}, nodes)
    out_weight = {source: sum(targets.values()) for source, targets in edges.items()}
    rank = dict(jump)
    for _ in range(ITERATIONS):
        dangling = sum(rank[n] for n in nodes if not out_weight.get(n))
        fresh = {n: (1 - DAMPING + DAMPING * dangling) * jump[n] for n in nodes}
        for source, targets in edges.items():
            total = out_weight[source]
            if not total:
                continue
            share = DAMPING * rank[source] / total
            for target, weight in targets.items():
                fresh[target] += share * weight
        change = sum(abs(fresh[n] - rank[n]) for n in nodes)
        rank = fresh
        if change < TOLERANCE:
            break
    return rank


def _normalized(weights: Mapping[str, float], nodes: list[str]) -> dict[str, float]:
    kept = {n: weights.get(n, 0.0) for n in nodes}
    total = sum(kept.values())
    if total <= 0:
        return {n: 1 / len(nodes) for n in nodes}
    return {n: w / total for n, w in kept.items()}


@dataclass(frozen=True)
class Focus:
    """What the ranking leans toward. It is no part of the file set: the tags and the
    graph's shape do not depend on it."""

    in_play: frozenset[str] = frozenset()
    """Files (relative paths) the conversation read, changed or named."""
    names: frozenset[str] = frozenset()
    """Identifiers the conversation mentions."""


@dataclass
class Ranking:
    definitions: list[tuple[str, Definition]] = field(default_factory=list)
    """(file, definition), most important first."""
    files: list[str] = field(default_factory=list)
    """Every file, most important first."""


def rank_definitions(tags: Mapping[str, FileTags], focus: Focus) -> Ranking:
    """Definitions ordered by the rank that flows to them along uses of their name."""
    files = sorted(tags)
    definers = _definers(tags)
    uses = {path: _uses(tags[path], path in focus.in_play, definers, focus) for path in files}
    rank = pagerank(files, _file_edges(uses), _jump_weights(tags, focus))
    score: dict[tuple[str, str], float] = defaultdict(float)
    for source, weights in uses.items():
        total = sum(weights.values())
        for target_and_name, weight in weights.items():
            score[target_and_name] += rank[source] * weight / total
    ranked = []
    for path in files:
        for definition in tags[path].definitions:
            # Definitions nobody uses keep a sliver of their file's rank, so they still
            # come, in file order, once the used ones are shown.
            value = score.get((path, definition.name), 0.0) + rank[path] * 1e-6
            ranked.append((value, path, definition))
    ranked.sort(key=lambda item: (-item[0], item[1], item[2].line))
    by_file = sorted(files, key=lambda path: (-rank[path], path))
    return Ranking([(path, d) for _, path, d in ranked], by_file)


def _definers(tags: Mapping[str, FileTags]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path, file_tags in tags.items():
        for definition in file_tags.definitions:
            found[definition.name].add(path)
    return found


def _uses(
    file_tags: FileTags, in_play: bool, definers: Mapping[str, set[str]], focus: Focus
) -> dict[tuple[str, str], float]:
    """(defining file, name) -> weight, for each defined name the file uses."""
    weights: dict[tuple[str, str], float] = {}
    for name, count in file_tags.references.items():
        where = definers.get(name)
        if not where:
            continue
        weight = math.sqrt(count) * _name_weight(name, len(where), focus)
        if in_play:
            weight *= IN_PLAY_WEIGHT
        for target in where:
            weights[(target, name)] = weight
    return weights


def _name_weight(name: str, definer_count: int, focus: Focus) -> float:
    weight = MENTIONED_WEIGHT if name in focus.names else 1.0
    if _distinctive(name):
        weight *= DISTINCTIVE_WEIGHT
    if name.startswith("_") or definer_count > WIDELY_DEFINED:
        weight *= PRIVATE_WEIGHT
    return weight


def _distinctive(name: str) -> bool:
    """Long compound names (`resolve_user_path`, `ToolContext`) link files on purpose;
    short plain words (`get`, `append`) mostly meet a library's method of that name."""
    compound = "_" in name.strip("_") or any(c.isupper() for c in name[1:])
    return compound and len(name) >= DISTINCTIVE_LENGTH


def _file_edges(uses: Mapping[str, Mapping[tuple[str, str], float]]) -> dict[str, dict[str, float]]:
    edges: dict[str, dict[str, float]] = {}
    for source, weights in uses.items():
        targets: dict[str, float] = defaultdict(float)
        for (target, _), weight in weights.items():
            targets[target] += weight
        if targets:
            edges[source] = dict(targets)
    return edges


def _jump_weights(tags: Mapping[str, FileTags], focus: Focus) -> dict[str, float]:
    """Files in play, and files defining a mentioned name, are where the walk restarts."""
    weights: dict[str, float] = {}
    for path, file_tags in tags.items():
        if path in focus.in_play or any(d.name in focus.names for d in file_tags.definitions):
            weights[path] = 1.0
    return weights
