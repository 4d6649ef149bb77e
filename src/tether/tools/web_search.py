"""search_web's work: ask the sources at once, read the best pages, rank their passages.

Every source runs in a thread of its own under its own timeout; one that fails or hangs is
reported and the search goes on with the others. With SearXNG configured it is asked first
and the keyless sources only when it brings nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ..core.textclip import clip_words
from ..core.toolspec import ToolError
from .web_fetch import Fetcher
from .web_rank import Passage, Ranked, distill, query_terms, rank, split_passages, terms
from .web_sources import SOURCE_HEADERS, Candidate, Source
from .web_text import html_to_text, looks_like_html

MAX_PASSAGES = 5
PER_PAGE = 2
PASSAGE_CHARS = 900
PAGE_BYTES = 1_000_000
T = TypeVar("T")


@dataclass(frozen=True)
class SourceAnswer:
    name: str
    candidates: list[Candidate]
    error: str = ""

    def line(self) -> str:
        return f"{self.name} failed ({self.error})" if self.error else f"{self.name} {len(self.candidates)}"


@dataclass
class Page:
    candidate: Candidate
    title: str
    text: str
    note: str = ""
    """How it was read: "" (the page), or why only the snippet stands in for it."""


@dataclass
class SearchReport:
    query: str
    answers: list[SourceAnswer] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    chosen: list[Ranked] = field(default_factory=list)
    rejected: list[tuple[Page, str]] = field(default_factory=list)

    @property
    def cleared(self) -> bool:
        return bool(self.chosen)

    def summary(self) -> str:
        sources = ", ".join(a.line() for a in self.answers)
        read = sum(1 for p in self.pages if not p.note)
        floor = (f"floor cleared ({len(self.chosen)} passages)" if self.cleared
                 else "nothing relevant (floor not cleared)")
        return f"{sources} · {read} pages read · {floor}"


def in_threads(jobs: Sequence[Callable[[], T]], timeout: float, late: Callable[[], T]) -> list[T]:
    """Each job's result, in order, each job in a daemon thread of its own; a job still
    running after `timeout` gives `late()`, and its thread is left to end with its own
    request timeout (a daemon, so it never holds up tether's exit)."""
    results: list[tuple[bool, Any] | None] = [None] * len(jobs)
    finished = threading.Semaphore(0)

    def run(index: int, job: Callable[[], T]) -> None:
        try:
            results[index] = (True, job())
        except BaseException as exc:  # handed to the caller below
            results[index] = (False, exc)
        finally:
            finished.release()

    for index, job in enumerate(jobs):
        threading.Thread(target=run, args=(index, job), name="web", daemon=True).start()
    deadline = time.monotonic() + timeout
    for _ in jobs:
        if not finished.acquire(timeout=max(0.0, deadline - time.monotonic())):
            break
    out: list[T] = []
    for result in results:
        if result is None:
            out.append(late())
        elif not result[0]:
            raise result[1]
        else:
            out.append(result[1])
    return out


class WebSearch:
    def __init__(self, fetcher: Fetcher, sources: Sequence[Source], first: Source | None,
                 source_timeout: float, pages: int) -> None:
        self.fetcher = fetcher
        self.sources = list(sources)
        self.first = first
        self.source_timeout = source_timeout
        self.pages = pages

    def search(self, query: str) -> SearchReport:
        if not query_terms(query):
            raise ToolError("The query has no words to search for; name what you are looking for.")
        report = SearchReport(query)
        if self.first is not None:
            report.answers = self._ask([self.first], query)
        if not any(a.candidates for a in report.answers):
            report.answers += self._ask(self.sources, query)
        candidates = best_candidates(query, [a.candidates for a in report.answers], self.pages)
        report.pages = self._read(candidates)
        choose(report)
        return report

    def _ask(self, sources: Sequence[Source], query: str) -> list[SourceAnswer]:
        distilled = " ".join(query_terms_raw(query))

        def job(source: Source) -> Callable[[], SourceAnswer]:
            return lambda: self._ask_one(source, distilled if source.keyword else query)

        jobs = [job(s) for s in sources]
        answers = in_threads(jobs, self.source_timeout + 1, lambda: SourceAnswer("", [], "timed out"))
        return [a if a.name else SourceAnswer(s.name, [], a.error) for a, s in zip(answers, sources, strict=True)]

    def _ask_one(self, source: Source, query: str) -> SourceAnswer:
        try:
            fetched = self.fetcher.fetch(source.url(query), headers=SOURCE_HEADERS,
                                         timeout=self.source_timeout)
            if fetched.status != 200:
                return SourceAnswer(source.name, [], f"HTTP {fetched.status}")
            return SourceAnswer(source.name, source.parse(fetched.text()))
        except (ToolError, ValueError, KeyError, TypeError, AttributeError) as exc:
            return SourceAnswer(source.name, [], first_words(str(exc)) or type(exc).__name__)

    def _read(self, candidates: list[Candidate]) -> list[Page]:
        jobs = [(lambda c=c: self._read_one(c)) for c in candidates]
        pages = in_threads(jobs, 2 * self.fetcher.limits.timeout + 1, lambda: None)
        return [p or Page(c, c.title, c.snippet, "timed out; snippet only")
                for p, c in zip(pages, candidates, strict=True)]

    def _read_one(self, candidate: Candidate) -> Page:
        try:
            fetched = self.fetcher.fetch(candidate.url, other_hosts=True, max_bytes=PAGE_BYTES)
        except ToolError as exc:
            return Page(candidate, candidate.title, candidate.snippet, f"{first_words(str(exc))}; snippet only")
        if fetched.status != 200:
            return Page(candidate, candidate.title, candidate.snippet, f"HTTP {fetched.status}; snippet only")
        body = fetched.text()
        if looks_like_html(fetched.content_type, body):
            title, text = html_to_text(body)
            return Page(candidate, title or candidate.title, text)
        if fetched.content_type.startswith("text/") or not fetched.content_type:
            return Page(candidate, candidate.title, body)
        return Page(candidate, candidate.title, candidate.snippet, f"{fetched.content_type}; snippet only")


def query_terms_raw(query: str) -> list[str]:
    """The distilled query's words as written (stemming is for matching, not for asking)."""
    return distill(query).split()


def first_words(text: str, limit: int = 120) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return clip_words(line, limit)


def normal_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.lower(), parts.path.rstrip("/") or "/", parts.query, ""))


def best_candidates(query: str, lists: Sequence[list[Candidate]], count: int) -> list[Candidate]:
    """The `count` candidates to read: found by more sources first, then with more query
    words in their title and snippet, then higher in their source's list."""
    wanted = set(query_terms(query))
    seen: dict[str, tuple[Candidate, int, int]] = {}
    for found in lists:
        for position, candidate in enumerate(found):
            key = normal_url(candidate.url)
            if key in seen:
                first, votes, best = seen[key]
                seen[key] = (first, votes + 1, min(best, position))
            else:
                seen[key] = (candidate, 1, position)

    def order(entry: tuple[Candidate, int, int]) -> tuple[int, int, int]:
        candidate, votes, position = entry
        overlap = len(wanted & set(terms(f"{candidate.title} {candidate.snippet}")))
        return (-votes, -overlap, position)

    return [entry[0] for entry in sorted(seen.values(), key=order)[:count]]


def choose(report: SearchReport) -> None:
    """The passages that clear the floor (at most MAX_PASSAGES, PER_PAGE per page) and the
    pages none of whose passages did, with what their best passage lacked."""
    passages: list[Passage] = []
    for index, page in enumerate(report.pages):
        passages += split_passages(f"{page.title}\n\n{page.text}", index)
    ranked = rank(report.query, passages)
    per_page: dict[int, int] = {}
    for item in ranked:
        if not item.clears or len(report.chosen) >= MAX_PASSAGES:
            continue
        if per_page.get(item.passage.page, 0) < PER_PAGE:
            per_page[item.passage.page] = per_page.get(item.passage.page, 0) + 1
            report.chosen.append(item)
    relevant = {r.passage.page for r in ranked if r.clears}
    for index, page in enumerate(report.pages):
        if index in relevant:  # chosen, or relevant beyond the passage cap
            continue
        best = next((r for r in ranked if r.passage.page == index), None)
        why = f"lacks {', '.join(best.missing)}" if best and best.missing else "no passage matched"
        report.rejected.append((page, why))
