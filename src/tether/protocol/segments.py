"""A whole reply as segments: answer text, thinking and calls, each with its tags."""

from __future__ import annotations

from dataclasses import dataclass, field

from .jsonrepair import _first_json_start, _json_extent
from .scan import _Segmenter
from .shapes import _unclosed_block_value_start, _unclosed_param_value_start
from .tags import CALL_CLOSE, CALL_OPEN, FUNCTION_CLOSE, FUNCTION_OPEN


@dataclass
class _Segment:
    kind: str  # text | think | call | stray
    offset: int
    open_tag: str = ""
    parts: list[str] = field(default_factory=list)
    close_tag: str = ""

    @property
    def body(self) -> str:
        return "".join(self.parts)

    @property
    def raw(self) -> str:
        return self.open_tag + self.body + self.close_tag


def _segments(text: str, block_names: set[str], base: int = 0) -> list[_Segment]:
    segmenter = _Segmenter(block_names)
    segments: list[_Segment] = []
    offset = base
    for kind, chunk in segmenter.feed(text) + segmenter.flush():
        _add_event(segments, kind, chunk, offset)
        offset += len(chunk)
    return segments


def _add_event(segments: list[_Segment], kind: str, chunk: str, offset: int) -> None:
    last = segments[-1] if segments else None
    if kind == "text":
        if last is not None and last.kind == "text":
            last.parts.append(chunk)
        else:
            segments.append(_Segment("text", offset, parts=[chunk]))
    elif kind in ("think_open", "call_open"):
        segments.append(_Segment(kind.split("_")[0], offset, open_tag=chunk))
    elif kind == "stray_think_close":
        segments.append(_Segment("stray", offset, open_tag=chunk))
    elif kind in ("thinking", "call") and last is not None:
        last.parts.append(chunk)
    elif kind in ("think_close", "call_close") and last is not None:
        last.close_tag = chunk


def _split_reply(text: str, block_names: set[str]) -> list[_Segment]:
    """Segments of the whole reply.

    The streaming scanner lets an unclosed raw block (or XML parameter value) run
    to the end of the reply. With the whole reply in hand, one left unclosed
    inside a call that does have its closing tag ends at that tag, and the rest
    is read again.
    """
    segments: list[_Segment] = []
    base = 0
    while True:
        found = _segments(text[base:], block_names, base)
        segments.extend(found)
        last = found[-1] if found else None
        cut = _unclosed_value_cut(last) if last is not None else None
        if last is None or cut is None:
            return segments
        closer = CALL_CLOSE if last.open_tag == CALL_OPEN else FUNCTION_CLOSE
        body = last.body
        last.parts, last.close_tag = [body[:cut]], closer
        base = last.offset + len(last.open_tag) + cut + len(closer)


def _unclosed_value_cut(segment: _Segment) -> int | None:
    """Where an unclosed call with an unclosed block or parameter value ends, if it has a closing tag."""
    if segment.kind != "call" or segment.close_tag:
        return None
    body = segment.body
    if segment.open_tag == FUNCTION_OPEN or body.lstrip().startswith(FUNCTION_OPEN):
        value_start = _unclosed_param_value_start(body)
    else:
        start = _first_json_start(body)
        value_start = _unclosed_block_value_start(
            body, _json_extent(body, start) if start >= 0 else 0
        )
    if value_start is None:
        return None
    closer = CALL_CLOSE if segment.open_tag == CALL_OPEN else FUNCTION_CLOSE
    cut = body.find(closer, value_start)
    return cut if cut >= 0 else None


def _reclassify_stray_think(segments: list[_Segment]) -> list[_Segment]:
    """A `</think>` with no opening tag, before anything else: the text before it was thinking.

    Some chat templates put `<think>` into the prompt, so the reply starts inside it.
    """
    for k, segment in enumerate(segments):
        if segment.kind == "stray":
            before = "".join(s.body for s in segments[:k])
            return [_Segment("think", 0, parts=[before])] + segments[k + 1 :]
        if segment.kind != "text":
            return segments
    return segments
