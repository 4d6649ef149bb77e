"""Cutting long text down to size, always saying how much was cut.

Each caller picks its own limit and head/tail shares; the marker lines are
written here only, so a model (or a person) sees one form everywhere.
"""

from __future__ import annotations


def keep_ends(text: str, head: int, tail: int) -> str:
    """The first `head` and the last `tail` characters of `text`, with the number of
    characters left out between them. The caller decides whether `text` is long enough
    to need it."""
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted} characters omitted ...]\n{text[len(text) - tail:]}"


def keep_head(text: str, limit: int, what: str) -> str:
    """`text` whole when it fits in `limit` characters; else its first `limit` characters
    and a line `[... N <what> ...]` counting the rest."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} {what} ...]"


def clip_words(text: str, limit: int, mark: str = "…") -> str:
    """`text` whole when it fits in `limit` characters; else cut at the last space that
    leaves at least half of it (mid-word only for one very long word), `mark` saying that
    it goes on. A message cut as "This ca…" reads as a different word."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit - len(mark), 0)]
    space = cut.rfind(" ")
    ends_a_word = text[len(cut)] == " "
    if not ends_a_word and space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + mark
