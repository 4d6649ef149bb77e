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
