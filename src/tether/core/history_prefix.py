"""What was worked out for the messages of the history sent last, kept while a new history
still starts with them.

Every request sends the whole history again, and a turn's history only grows at its end.
A per-request walk over every message (estimating its tokens, encoding its JSON, checking
its calls are answered) made the harness's CPU per round trip grow with the session; with
a `SeenPrefix` a request pays for the messages that are new and one identity check of
the rest.

A message counts as unchanged while it is the same object holding the same list of as many
parts: the loop replaces messages, it never edits their parts (parts are frozen).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import compress, count
from typing import Generic, TypeVar

from .messages import Message, Part

Value = TypeVar("Value")

_parts = operator.attrgetter("parts")


class SeenPrefix(Generic[Value]):
    """Leading messages of the last history seen, each with one value worked out for it."""

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._parts: list[list[Part]] = []
        self._sizes: list[int] = []
        self.values: list[Value] = []
        """One per message kept, in history order."""

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def first(self) -> Message | None:
        return self._messages[0] if self._messages else None

    def follow(self, history: Sequence[Message]) -> int:
        """Forget every message `history` does not start with; how many are still kept."""
        kept = self._unchanged(history)
        del self._messages[kept:], self._parts[kept:], self._sizes[kept:], self.values[kept:]
        return kept

    def add(self, message: Message, value: Value) -> None:
        """Keep `message`, the next one of the history, with its value."""
        self._messages.append(message)
        self._parts.append(message.parts)
        self._sizes.append(len(message.parts))
        self.values.append(value)

    def _unchanged(self, history: Sequence[Message]) -> int:
        # Every step in C: this runs several times a request over the whole history.
        leading = history[: len(self._messages)]
        replaced = map(operator.is_not, self._messages, leading)
        same = next(compress(count(), replaced), len(leading))
        parts = list(map(_parts, leading[:same]))
        new_parts = map(operator.is_not, self._parts, parts)
        same = next(compress(count(), new_parts), same)
        resized = map(operator.ne, self._sizes, map(len, parts[:same]))
        return next(compress(count(), resized), same)
