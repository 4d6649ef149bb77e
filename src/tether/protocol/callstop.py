"""Stop a streamed text-protocol reply once it holds one whole tool call.

A small model that has written its call seldom stops there: it goes on to write
the result it expects (`<content>` with a made-up listing, "[Tool Result ..."),
a second call that depends on the first, or prose that claims success, and it
sometimes loops on that invented text until the request times out. The small
profile asks for one call per reply, so once a reply holds a call with every
required argument, closed brackets and closed blocks, and the model has gone on
to write something that is not one of that tool's raw blocks, the rest cannot
help: the loop closes the stream there and runs the call.

`CallStop.feed` sees each delta once; a cheap scan tracks the brackets, strings
and tags still open, and only a balanced reply is parsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.toolspec import ToolTable
from .history import cut_invented_results
from .parse import parse_reply
from .tags import CALL_CLOSE, CALL_OPEN, FUNCTION_CLOSE, FUNCTION_OPEN

_TRAILING_NOISE = " \t\r\n`"
"""What may follow a call before the model has shown what it does next: space, a fence."""


@dataclass
class _Scan:
    """Brackets, strings and tags still open in the reply so far."""

    depth: int = 0
    quote: str = ""
    escaped: bool = False
    closer: str = ""
    """The tag that ends the raw block or tagged call the reply is inside ('' if none)."""
    pending: str = ""
    """A '<' and what followed it, until it is known whether it opens a tag."""
    last_close: int = 0
    """Where the last bracket, block or tagged call closed (an index into the reply)."""
    tail: str = ""
    """The last characters inside a raw block, to see a sibling block begin (`_siblings`)."""


@dataclass
class CallStop:
    """Says when a streamed reply holds one whole call and has moved past it."""

    table: ToolTable
    _chunks: list[str] = field(default_factory=list)
    _length: int = 0
    _scan: _Scan = field(default_factory=_Scan)
    _openers: tuple[str, ...] = ()
    _parsed_at: int = -1
    _parsed_blocks: tuple[str, ...] | None = None
    _call_end: int | None = None
    """Where the first whole call ends (after any raw blocks of its own that follow it)."""
    _call_blocks: tuple[str, ...] = ()
    _siblings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """A raw block's closer -> the openers of the other blocks of its tools: one of them
    begun inside the block ends it there, as the parser reads a block left open
    (shapes.close_open_blocks)."""

    def __post_init__(self) -> None:
        blocks = sorted({name for tool in self.table for name in tool.block_params})
        self._openers = (CALL_OPEN, FUNCTION_OPEN, *(f"<{name}>" for name in blocks))
        for tool in self.table:
            for name in tool.block_params:
                others = [f"<{other}>" for other in tool.block_params if other != name]
                known = self._siblings.get(f"</{name}>", ())
                self._siblings[f"</{name}>"] = (*known, *(o for o in others if o not in known))

    @property
    def cut(self) -> int:
        """Where the reply is cut when `feed` says stop: just after the call."""
        return self._call_end or 0

    def feed(self, delta: str) -> bool:
        """Take the next piece of the reply; True when the reply should stop here."""
        start = self._length
        self._chunks.append(delta)
        self._length += len(delta)
        text: str | None = None
        for offset, ch in enumerate(delta):
            closed = self._scan.last_close
            self._step(ch, start + offset + 1)
            if self._call_end is None and self._scan.last_close != closed and self._balanced():
                # looked at where it closed, not at the delta's end: one delta may close the
                # call and open the next (`}}\n{`), and then the reply is never balanced again
                text = text or "".join(self._chunks)
                blocks = self._whole_call_blocks(text)
                if blocks is not None:
                    self._call_end, self._call_blocks = self._scan.last_close, blocks
        if self._call_end is None:
            return False  # nothing whole yet
        return self._past_the_call(text or "".join(self._chunks))

    def _balanced(self) -> bool:
        scan = self._scan
        return not (scan.depth or scan.quote or scan.closer or scan.pending)

    def _past_the_call(self, text: str) -> bool:
        """Whether the model has begun something that is not part of its call."""
        assert self._call_end is not None
        while True:
            after = text[self._call_end :].lstrip(_TRAILING_NOISE)
            if not after:
                return False  # the model has not shown yet what comes after the call
            if not any(f"<{name}>".startswith(after[: len(name) + 2]) for name in self._call_blocks):
                return True
            # One of its own raw blocks (write_file's <content>): part of the call, once closed.
            scan = self._scan
            if scan.closer or scan.pending or scan.last_close <= self._call_end:
                return False
            self._call_end = scan.last_close

    # -- the scan

    def _step(self, ch: str, end: int) -> None:
        scan = self._scan
        if scan.closer:
            scan.pending = (scan.pending + ch)[-len(scan.closer) :]
            if scan.pending == scan.closer:
                scan.closer = scan.pending = scan.tail = ""
                scan.last_close = end
            elif (sibling := self._sibling_begun(ch)) is not None:
                scan.closer, scan.pending, scan.tail = _closer_of(sibling), "", ""
        elif scan.pending:
            self._tag_char(ch, end)
        elif scan.quote:
            self._string_char(ch)
        elif ch == "<" and not scan.depth:
            scan.pending = "<"
        elif ch in "{[":
            scan.depth += 1
        elif ch in "}]" and scan.depth:
            scan.depth -= 1
            if not scan.depth:
                scan.last_close = end
        elif ch in "\"'" and scan.depth:  # prose apostrophes outside brackets are not strings
            scan.quote = ch

    def _sibling_begun(self, ch: str) -> str | None:
        """The opener of a sibling block that `ch` completes inside the current block."""
        scan = self._scan
        siblings = self._siblings.get(scan.closer, ())
        if not siblings:
            return None
        scan.tail = (scan.tail + ch)[-max(map(len, siblings)) :]
        return next((opener for opener in siblings if scan.tail.endswith(opener)), None)

    def _string_char(self, ch: str) -> None:
        scan = self._scan
        if scan.escaped:
            scan.escaped = False
        elif ch == "\\":
            scan.escaped = True
        elif ch == scan.quote:
            scan.quote = ""

    def _tag_char(self, ch: str, end: int) -> None:
        scan = self._scan
        scan.pending += ch
        if scan.pending in self._openers:
            scan.closer, scan.pending = _closer_of(scan.pending), ""
        elif scan.pending in _CLOSERS:  # a tagged call closing that opened before a bracket
            scan.last_close, scan.pending = end, ""
        elif not any(tag.startswith(scan.pending) for tag in (*self._openers, *_CLOSERS)):
            scan.pending = ""  # a '<' in the text, not a tag

    # -- the decision

    def _whole_call_blocks(self, text: str) -> tuple[str, ...] | None:
        """The raw-block names of the tool whose call ends where the last thing closed, when
        that call has every required argument; None when there is no such call."""
        end = self._scan.last_close
        if end != self._parsed_at:
            self._parsed_at, self._parsed_blocks = end, _call_blocks(text[:end], self.table)
        return self._parsed_blocks


_CLOSERS = (CALL_CLOSE, FUNCTION_CLOSE)


def _call_blocks(text: str, table: ToolTable) -> tuple[str, ...] | None:
    parsed = parse_reply(cut_invented_results(text), table)
    if not parsed.calls or parsed.errors:
        return None
    call = parsed.calls[-1]
    tool = table.get(call.name)
    if tool is None:
        return None
    required = tool.json_schema().get("required", [])
    if any(name not in call.arguments for name in required):
        return None  # a raw block with the rest may still come
    return tool.block_params


def _closer_of(opener: str) -> str:
    if opener == CALL_OPEN:
        return CALL_CLOSE
    if opener == FUNCTION_OPEN:
        return FUNCTION_CLOSE
    return "</" + opener[1:]


_FENCES = ("```", "~~~")


@dataclass
class BlockStop:
    """Says when a streamed reply has just closed a fenced code block (its fence lines, the
    opening and the closing one, each on a line of its own): where a reply that shows a whole
    new version of a file has shown its change (the rest is talk about it and "run the tests
    again"), for whoever decides whether the block is that change."""

    _line: list[str] = field(default_factory=list)
    _fences: int = 0

    def feed(self, delta: str) -> bool:
        """Take the next piece of the reply; True when a line of it closed a code block."""
        closed = False
        for ch in delta:
            if ch != "\n":
                self._line.append(ch)
                continue
            if "".join(self._line).strip().startswith(_FENCES):
                self._fences += 1
                closed = closed or self._fences % 2 == 0
            self._line.clear()
        return closed
