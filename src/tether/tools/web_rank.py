"""Passages of candidate pages ranked by BM25 against the query, with a relevance floor.

The statistics come from the candidate pool itself (rank-bm25's Okapi BM25 over every
passage of every page read), so a term that every candidate shares (the language, the
library the search was about) weighs little, and one only the right page has weighs most.
The floor: the query's discriminating terms (all but those found on more than half of
three or more candidate pages) must appear in a passage (all of them when there are one or
two, two thirds otherwise). When no passage clears it, the search says it found nothing relevant instead of
handing over the closest junk.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

FILLER = frozenset("""
a an and are as at be by can could did do does for from get got how i if in into is it its
me my of on or please should so than that the their them then there these this those to use
used using want was we what when where which who why will with would you your about any
way best example show tell find know need make work works working between vs versus like
""".split())
"""Words a question is phrased with rather than about."""
WORD = re.compile(r"[A-Za-z0-9_]+(?:[.:\-][A-Za-z0-9_]+)*")
PASSAGE_WORDS = 120
"""Paragraphs are joined up to about this many words: long enough to answer, short enough
that BM25's length normalisation sees a focused passage."""
UBIQUITOUS = 0.5
"""A term on more than this share of the candidate pages does not tell them apart..."""
MIN_POOL = 3
"""...when there are at least this many: with fewer, no term is common knowledge."""


def stem(word: str) -> str:
    """A light suffix strip, so `reversed`, `reverses` and `reversing` meet `reverse`."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The text's words, lower-cased and stemmed; a dotted or dashed identifier also gives
    its pieces (`os.path.join`: os.path.join, os, path, join)."""
    found: list[str] = []
    for match in WORD.finditer(text.lower()):
        word = match.group()
        found.append(stem(word))
        if re.search(r"[.:\-]", word):
            found.extend(stem(piece) for piece in re.split(r"[.:\-]+", word) if piece)
    return found


def distill(query: str) -> str:
    """The query for a keyword API: identifiers and content words kept, filler dropped."""
    kept = [w for w in WORD.findall(query) if w.lower() not in FILLER]
    return " ".join(kept) or query.strip()


def query_terms(query: str) -> list[str]:
    return list(dict.fromkeys(t for t in terms(distill(query)) if t not in FILLER))


@dataclass(frozen=True)
class Passage:
    page: int
    """The index of its page in the pool."""
    text: str


@dataclass(frozen=True)
class Ranked:
    passage: Passage
    score: float
    missing: tuple[str, ...]
    """Discriminating terms the passage lacks."""
    clears: bool


def split_passages(text: str, page: int) -> list[Passage]:
    """Paragraphs of `text`, short ones joined up to about PASSAGE_WORDS words, long ones cut."""
    passages: list[Passage] = []
    current: list[str] = []
    count = 0
    for paragraph in (p.strip() for p in re.split(r"\n\s*\n", text)):
        if not paragraph:
            continue
        words = paragraph.split()
        while len(words) > 2 * PASSAGE_WORDS:  # one huge paragraph becomes several
            passages.append(Passage(page, " ".join(words[:PASSAGE_WORDS])))
            words = words[PASSAGE_WORDS:]
        if count and count + len(words) > PASSAGE_WORDS:
            passages.append(Passage(page, "\n".join(current)))
            current, count = [], 0
        current.append(" ".join(words) if len(words) != len(paragraph.split()) else paragraph)
        count += len(words)
    if current:
        passages.append(Passage(page, "\n".join(current)))
    return passages


def discriminating(wanted: list[str], pages: list[set[str]]) -> list[str]:
    """The query terms that tell candidate pages apart: on at most UBIQUITOUS of them (or on
    none); with fewer than MIN_POOL pages, every term."""
    if len(pages) < MIN_POOL:
        return wanted
    return [t for t in wanted if sum(t in p for p in pages) / len(pages) <= UBIQUITOUS]


def needed(count: int) -> int:
    """How many of `count` discriminating terms a passage must hold."""
    return count if count <= 2 else math.ceil(count * 2 / 3)


def rank(query: str, passages: list[Passage]) -> list[Ranked]:
    """Every passage with its BM25 score and floor verdict, best first."""
    wanted = query_terms(query)
    if not passages or not wanted:
        return []
    tokens = [terms(p.text) for p in passages]
    pool = [set(t) for t in tokens]
    pages: dict[int, set[str]] = {}
    for passage, words in zip(passages, pool, strict=True):
        pages.setdefault(passage.page, set()).update(words)
    key = discriminating(wanted, list(pages.values()))
    # BM25's scores order the passages; the floor is the terms test (with one or two
    # passages Okapi's idf goes negative, so a score threshold would mean nothing there).
    from rank_bm25 import (
        BM25Okapi,  # with numpy, a tenth of the chat's start: only a search needs it
    )

    scores = BM25Okapi(tokens).get_scores(wanted)
    ranked = []
    for passage, words, score in zip(passages, pool, scores, strict=True):
        missing = tuple(t for t in key if t not in words)
        clears = len(key) - len(missing) >= needed(len(key)) and bool(words & set(wanted))
        ranked.append(Ranked(passage, float(score), missing, clears))
    return sorted(ranked, key=lambda r: (not r.clears, -r.score))
