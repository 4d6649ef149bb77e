"""The search sources: where search_web gets candidate pages, each source's wire format.

Keyless by default: DuckDuckGo's HTML endpoint, Wikipedia's search API, the Stack Exchange
API, GitHub's repository search; a self-hosted SearXNG when `searxng_url` is set. Each base
URL is a setting (tests point them at a local server). Keyword APIs get the distilled query,
the web engines the words as typed.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from .web_text import html_to_text

RESULTS_PER_SOURCE = 6


@dataclass(frozen=True)
class Candidate:
    title: str
    url: str
    snippet: str
    source: str


class Source(Protocol):
    """One place to search: how to ask it and how to read its answer."""

    @property
    def name(self) -> str: ...

    @property
    def keyword(self) -> bool:
        """True: it matches keywords (gets the distilled query); False: a web engine."""
        ...

    def url(self, query: str) -> str: ...

    def parse(self, body: str) -> list[Candidate]: ...


def _plain(fragment: str) -> str:
    """A title or snippet that arrives as HTML (highlight spans, entities) as plain text."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def _json(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise ValueError("the answer was not JSON") from None


@dataclass(frozen=True)
class DuckDuckGo:
    base: str
    name: str = "duckduckgo"
    keyword: bool = False

    def url(self, query: str) -> str:
        return f"{self.base.rstrip('/')}/?{urlencode({'q': query})}"

    def parse(self, body: str) -> list[Candidate]:
        links = re.findall(r'<a[^>]*class="result__a"[^>]*href="([^"]+)"[^>]*>(.*?)</a>', body, re.S)
        snippets = re.findall(r'class="result__snippet"[^>]*>(.*?)</(?:a|div|td)>', body, re.S)
        found = []
        for i, (href, title) in enumerate(links[:RESULTS_PER_SOURCE]):
            snippet = _plain(snippets[i]) if i < len(snippets) else ""
            found.append(Candidate(_plain(title), _result_target(html.unescape(href)), snippet, self.name))
        return [c for c in found if c.url]


def _result_target(href: str) -> str:
    """DuckDuckGo's links go through its redirector (`/l/?uddg=<target>`): the target."""
    if href.startswith("//"):
        href = "https:" + href
    parts = urlsplit(href)
    if parts.path.rstrip("/").endswith("/l"):
        return parse_qs(parts.query).get("uddg", [""])[0]
    if (parts.hostname or "").endswith("duckduckgo.com"):  # an ad (/y.js) or its own page
        return ""
    return href if parts.scheme in ("http", "https") else ""


@dataclass(frozen=True)
class Wikipedia:
    base: str
    name: str = "wikipedia"
    keyword: bool = True

    def url(self, query: str) -> str:
        params = {"action": "query", "list": "search", "srsearch": query, "format": "json",
                  "srlimit": RESULTS_PER_SOURCE}
        return f"{self.base.rstrip('/')}/w/api.php?{urlencode(params)}"

    def parse(self, body: str) -> list[Candidate]:
        hits = _json(body).get("query", {}).get("search", [])
        return [
            Candidate(hit["title"], f"{self.base.rstrip('/')}/wiki/{quote(hit['title'].replace(' ', '_'))}",
                      _plain(hit.get("snippet", "")), self.name)
            for hit in hits if isinstance(hit, dict) and isinstance(hit.get("title"), str)
        ]


@dataclass(frozen=True)
class StackExchange:
    base: str
    site: str = "stackoverflow"
    name: str = "stackexchange"
    keyword: bool = True

    def url(self, query: str) -> str:
        params = {"order": "desc", "sort": "relevance", "q": query, "site": self.site,
                  "pagesize": RESULTS_PER_SOURCE, "filter": "withbody"}
        return f"{self.base.rstrip('/')}/2.3/search/advanced?{urlencode(params)}"

    def parse(self, body: str) -> list[Candidate]:
        items = _json(body).get("items", [])
        return [
            Candidate(_plain(item.get("title", "")), item["link"],
                      html_to_text(item.get("body", ""))[1][:2000], self.name)
            for item in items if isinstance(item, dict) and isinstance(item.get("link"), str)
        ]


@dataclass(frozen=True)
class GitHub:
    base: str
    name: str = "github"
    keyword: bool = True

    def url(self, query: str) -> str:
        params = {"q": query, "per_page": RESULTS_PER_SOURCE}
        return f"{self.base.rstrip('/')}/search/repositories?{urlencode(params)}"

    def parse(self, body: str) -> list[Candidate]:
        items = _json(body).get("items", [])
        return [
            Candidate(item.get("full_name", ""), item["html_url"], item.get("description") or "", self.name)
            for item in items if isinstance(item, dict) and isinstance(item.get("html_url"), str)
        ]


@dataclass(frozen=True)
class SearXNG:
    base: str
    name: str = "searxng"
    keyword: bool = False

    def url(self, query: str) -> str:
        return f"{self.base.rstrip('/')}/search?{urlencode({'q': query, 'format': 'json'})}"

    def parse(self, body: str) -> list[Candidate]:
        results = _json(body).get("results", [])
        return [
            Candidate(_plain(r.get("title", "")), r["url"], _plain(r.get("content") or ""), self.name)
            for r in results[: RESULTS_PER_SOURCE * 2] if isinstance(r, dict) and isinstance(r.get("url"), str)
        ]


SOURCE_HEADERS = {"Accept": "application/json, text/html;q=0.9", "Accept-Language": "en"}
