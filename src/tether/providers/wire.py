"""Request bodies encoded once: every request sends the whole history again, so each
message (and the tool list) is turned into JSON the first time it is sent and reused.

The harness's own CPU per tool round trip would otherwise grow with the history; with
this it grows only with the bytes joined, which is a memcpy.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ..core.history_prefix import SeenPrefix
from ..core.messages import Message
from ..core.toolspec import Tool
from ..host import clean_data, has_bad_chars


class RawJson(str):
    """JSON text already encoded and cleaned: a body field that goes into the request as it is."""


def dumps_clean(value: Any) -> str:
    """JSON of `value`; a lone surrogate anywhere (a file name that is not UTF-8, a broken
    character in a prompt) is cleaned first, found with one scan of the encoded text."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if has_bad_chars(text):
        text = json.dumps(clean_data(value), ensure_ascii=False, separators=(",", ":"))
    return text


def encode_body(body: dict[str, Any]) -> bytes:
    """The request body as UTF-8 JSON, its RawJson fields spliced in as they are."""
    raw = {key: value for key, value in body.items() if isinstance(value, RawJson)}
    if not raw:
        return dumps_clean(body).encode("utf-8")
    slot = {key: f"\0raw:{key}\0" for key in raw}  # a string no JSON value encodes to alone
    text = dumps_clean({key: slot.get(key, value) for key, value in body.items()})
    for key, value in raw.items():
        text = text.replace(json.dumps(slot[key]), value, 1)
    return text.encode("utf-8")


class WireCache:
    """Each message's wire JSON. The messages the last request began with are reused by
    position while the history still starts with them (`SeenPrefix`); any other message by
    the identity of its parts (parts are frozen; a message that gains a part is another
    key), so a history rebuilt from the same parts is not encoded again. Only what the
    latest request sent is kept."""

    def __init__(self, encode: Callable[[Message], list[dict[str, Any]]]) -> None:
        self.encode = encode
        self._seen: SeenPrefix[tuple[Hashable, str]] = SeenPrefix()
        self._by_parts: dict[Hashable, tuple[list[Any], str]] = {}
        self._tools: tuple[list[Tool], RawJson] | None = None

    def messages(self, history: Sequence[Message]) -> RawJson:
        """The JSON array of the history's wire messages."""
        seen = len(self._seen)
        kept = self._seen.follow(history)
        for message in history[kept:]:
            self._seen.add(message, self._encoded(message))
        if kept < seen:  # messages left the history: forget their encodings
            self._by_parts = {key: self._by_parts[key] for key, _ in self._seen.values}
        pieces = filter(None, map(operator.itemgetter(1), self._seen.values))
        return RawJson("[" + ",".join(pieces) + "]")

    def _encoded(self, message: Message) -> tuple[Hashable, str]:
        key = (message.role, *map(id, message.parts))
        hit = self._by_parts.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], message.parts, strict=True)):
            encoded = [dumps_clean(entry) for entry in self.encode(message)]
            hit = (list(message.parts), ",".join(encoded))
            self._by_parts[key] = hit
        return key, hit[1]

    def tools(self, tools: Sequence[Tool], schema: Callable[[Tool], dict[str, Any]]) -> RawJson:
        """The JSON array of the tools' schemas; encoded again only when the tools change."""
        cached = self._tools
        if cached is None or len(cached[0]) != len(tools) or any(
                a is not b for a, b in zip(cached[0], tools, strict=False)):
            cached = (list(tools), RawJson(dumps_clean([schema(t) for t in tools])))
            self._tools = cached
        return cached[1]
