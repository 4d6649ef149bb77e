"""HTML as readable text: what a person sees of the page's content, nothing that runs.

With readability-lxml installed (the `web` extra) its main-content extraction goes first and
its cleaned HTML comes through the same converter; without it the standard library's
HTMLParser does the whole job. Scripts, styles, navigation, forms and hidden elements
(`hidden`, `aria-hidden="true"`, `display:none`) are dropped: hidden text is where a page
puts instructions meant for a model and not for its reader.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

DROPPED = frozenset({
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
    "nav", "header", "footer", "aside", "form", "button", "select", "head",
})
VOID = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
    "source", "track", "wbr",
})
BLOCKS = frozenset({
    "p", "div", "section", "article", "main", "ul", "ol", "dl", "dt", "dd", "table", "tr",
    "blockquote", "pre", "figure", "figcaption", "details", "summary", "br", "hr", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "td", "th",
})
HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


def is_hidden(tag: str, attrs: dict[str, str]) -> bool:
    return (
        "hidden" in attrs
        or attrs.get("aria-hidden", "").lower() == "true"
        or bool(HIDDEN_STYLE.search(attrs.get("style", "")))
        or (tag == "input" and attrs.get("type", "").lower() == "hidden")
    )


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._in_title = False
        self._skip: list[str] = []
        """The open elements whose content is dropped, innermost last."""
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k.lower(): v or "" for k, v in attrs}
        if tag == "title" and not self.title:  # the document's, in <head> (dropped as text)
            self._in_title = True
        if tag in VOID:
            if not self._skip and tag in BLOCKS:
                self.parts.append("\n")
            return
        if self._skip or tag in DROPPED or is_hidden(tag, found):
            self._skip.append(tag)
            return
        self._open_block(tag)

    def _open_block(self, tag: str) -> None:
        if tag == "pre":
            self._pre += 1
        if tag in BLOCKS:
            self.parts.append("\n\n" if tag in ("p", "pre", "table", "blockquote") else "\n")
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skip:
            if tag in self._skip:  # close up to the matching element (unclosed ones inside)
                while self._skip and self._skip.pop() != tag:
                    pass
            return
        if tag == "pre" and self._pre:
            self._pre -= 1
        if tag in BLOCKS:
            self.parts.append("\n\n" if tag in ("p", "pre", "table", "blockquote") or tag[0] == "h" else "\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._skip:
            return
        self.parts.append(data if self._pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document: the main content when readability-lxml is
    installed, else the whole body; lines trimmed, runs of blank lines folded to one."""
    title, body = "", html
    try:
        from readability import Document  # the optional `web` extra
    except ImportError:
        pass
    else:
        try:
            document = Document(html)
            title, body = document.short_title() or "", document.summary(html_partial=True)
        except Exception:  # a page readability cannot take: the whole page, converted below
            title, body = "", html
    parser = _TextParser()
    parser.feed(body)
    parser.close()
    if not title:
        title = _title_of(html) if body is not html else parser.title
    return " ".join(title.split()), tidy("".join(parser.parts))


def _title_of(html: str) -> str:
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    return parser.title


def tidy(text: str) -> str:
    # Collapsed whitespace leaves at most one space before a line's text; more is a <pre>
    # block's own indentation, which code needs.
    lines = [re.sub(r"^ (?=\S)", "", line.rstrip()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def looks_like_html(content_type: str, text: str) -> bool:
    if "html" in content_type.lower():
        return True
    head = text.lstrip()[:200].lower()
    return head.startswith("<!doctype html") or head.startswith("<html")
