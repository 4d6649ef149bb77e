"""The values a turn's results showed, ranked by the question's words: the choices for an
answer that gave a number no result showed.

A small model asked "how many times does the uploader retry?" reads `client.py`, whose note
says `policy.MAX_UPLOAD_RETRIES = 11`, and answers "2" all the same: told once that no result
showed 2, it answers 2 again. Picking among a few named values is easier for it than finding
one in a page of code, so the second time the nudge lists them, the names sharing the most
words with the question first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

VALUES_LISTED = 5
_LINE_PREFIX = re.compile(r"^\s*(?:\d+(?::[0-9a-f]{2})?\| ?|[^\s:]+:\d+: )")
_ASSIGNED = re.compile(
    r"""(?P<name>[A-Za-z_][\w.]*)["']?\s*(?::\s*[A-Za-z_][\w\[\], ]*)?\s*[=:]\s*(?P<value>-?\d[\d_,]*(?:\.\d+)?)\b(?![.\w])"""
)
_WORD = re.compile(r"[A-Za-z]+")
_STEM = 4


def _stems(words: Iterable[str]) -> set[str]:
    return {w[:_STEM].lower() for w in words if len(w) >= 3}


def _name_words(name: str) -> list[str]:
    """`policy.MAX_UPLOAD_RETRIES` -> policy, MAX, UPLOAD, RETRIES; `maxItems` -> max, Items."""
    return re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", name)


def seen_values(results: Iterable[str], question: str) -> list[str]:
    """`name = value` lines found in the results (a constant, a setting, a key), those sharing
    the most word stems with the question first, at most VALUES_LISTED; [] when none share any."""
    wanted = _stems(_WORD.findall(question))
    scored: dict[str, int] = {}
    for text in results:
        for raw in text.splitlines():
            line = _LINE_PREFIX.sub("", raw, count=1)
            for m in _ASSIGNED.finditer(line):
                shown = f"{m.group('name')} = {m.group('value')}"
                score = len(wanted & _stems(_name_words(m.group("name"))))
                if score and score > scored.get(shown, 0):
                    scored[shown] = score
    ranked = sorted(scored, key=lambda shown: -scored[shown])  # stable: first seen first on ties
    return ranked[:VALUES_LISTED]
