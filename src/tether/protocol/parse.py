"""parse_reply: the calls, visible answer, thinking and refusals in one model reply."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from ..core.messages import ToolCall, new_call_id
from ..core.toolspec import Tool, ToolTable
from .jsonrepair import (
    _LITERAL_EVAL_LIMIT,
    _decode,
    _first_json_start,
    _Invalid,
    _json_extent,
    _json_sequence,
    _json_values,
    _Truncated,
)
from .refusals import (
    _bad_arguments_error,
    _cut_off_error,
    _invalid_json_error,
    _malformed_xml_error,
    _no_name_error,
    _search_lines_note,
    _unknown_tool_error,
)
from .segments import _reclassify_stray_think, _Segment, _split_reply
from .shapes import (
    _FUNCTION_TAG,
    EMPTY_BLOCK_NOTE,
    UNCLOSED_BLOCK,
    _accepts_block,
    _arguments,
    _call_objects,
    _clean_name,
    _coerce,
    _name_and_rest,
    _prefix_name,
    _properties,
    _python_arguments,
    _read_blocks,
    _sniff_name,
    _xml_params,
    close_open_blocks,
    repair_block_values,
    stray_block_tags,
)
from .tags import FUNCTION_OPEN, _block_names

_CALL_FENCE_LABELS = ("tool_call", "tool_code", "tool", "function_call")
_LOOSE_FENCE_LABELS = ("json", "")
_CALL_PREFIX_TOKENS = ("<|python_tag|>", "[TOOL_CALLS]")
"""Special tokens some chat templates leak in front of a bare JSON call."""
_CALL_LINE = re.compile(r'^[ \t]*\{(?=\s*"name"\s*:)', re.M)
"""A line that opens a call object (`{"name": ...`)."""


@dataclass
class ParseResult:
    calls: list[ToolCall]
    """The calls to run, in the order the reply made them."""
    text: str
    """The visible answer: the reply without call blocks and `<think>` blocks, stripped."""
    thinking: str
    """The content of the reply's `<think>` blocks, joined."""
    errors: list[str]
    """One message per refused call, written to the model."""
    repairs: dict[str, str] = field(default_factory=dict)
    """Call id -> what was repaired in that call before it runs, to go with its result."""


_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?P<label>[A-Za-z_][\w\-]*)?[^\n`]*\n(?P<body>.*?)"
    r"(?:(?P<close>^[ \t]*```[ \t]*$)|\Z)",
    re.M | re.S,
)
_Found = list[ToolCall | str]
"""Calls and refusal messages, in reply order."""


class _ReplyParser:
    """Reads one whole reply. `native` means only shapes naming a real tool count."""

    def __init__(self, table: ToolTable, native: bool) -> None:
        self.table, self.native = table, native
        self.found: _Found = []
        self.visible: list[str] = []
        self.thinking: list[str] = []
        self.tagged_calls = False
        self.block_notes: dict[str, str] = {}
        """Call id -> the note of the unclosed blocks closed for it (shapes.close_open_blocks)."""

    def parse(self, text: str) -> ParseResult:
        segments = _reclassify_stray_think(_split_reply(text, _block_names(self.table)))
        self.tagged_calls = any(s.kind == "call" for s in segments)
        for segment in segments:
            if segment.kind == "think":
                self.thinking.append(segment.body)
            elif segment.kind == "call":
                self._tagged_call(segment)
            elif segment.kind == "text":
                self._answer_text(segment.body)
        self._bare_object()
        calls: list[ToolCall] = []
        repairs: dict[str, str] = {}
        for found in self.found:
            if isinstance(found, ToolCall):
                call, notes = repair_block_values(found, self.table)
                notes = [self.block_notes[call.id], *notes] if call.id in self.block_notes else notes
                calls.append(call)
                if notes:
                    repairs[call.id] = "\n".join(notes)
        errors = [f for f in self.found if isinstance(f, str)]
        thinking = "\n\n".join(t.strip() for t in self.thinking if t.strip())
        return ParseResult(calls, "".join(self.visible).strip(), thinking, errors, repairs)

    def _refuse(self, name: str | None, message: str) -> _Found | None:
        """A refusal, unless in native mode the text names no real tool (then it is text)."""
        if self.native and (name is None or name not in self.table):
            return None
        return [message]

    # -- <tool_call> and <function=...> blocks

    def _tagged_call(self, segment: _Segment) -> None:
        closed = bool(segment.close_tag)
        body = segment.body
        if segment.open_tag == FUNCTION_OPEN:
            found = self._xml_call(FUNCTION_OPEN + body, closed)
        elif body.lstrip().startswith(FUNCTION_OPEN):
            found = self._xml_call(body.lstrip(), closed)
        else:
            found = self._json_call(body, closed)
        if found is None:
            self.visible.append(segment.raw)
        else:
            self.found.extend(found)

    def _json_call(self, body: str, closed: bool) -> _Found | None:
        start = _first_json_start(body)
        if start < 0:
            if not closed:
                return self._refuse(_sniff_name(body), _cut_off_error(None))
            return self._refuse(None, _invalid_json_error(body or "(empty)"))
        values, end = _json_sequence(body, start)
        rest, note = self._closed_blocks(body[end:], _sniff_name(values[-1]) if values else None)
        blocks, blocks_cut = _read_blocks(rest, closed)
        at_eof = not closed and not rest.strip()
        found: _Found = []
        for k, src in enumerate(values):
            last = k == len(values) - 1
            outcome = self._object_calls(
                src,
                at_eof and last,
                blocks if last else {},
                blocks_cut and last,
                _prefix_name(body[:start]),
            )
            found.extend(outcome or [])
        return self._noted(found, note) or None

    def _closed_blocks(self, rest: str, name: str | None) -> tuple[str, str]:
        """`rest` with the blocks the model left open before the next one closed (text
        protocol only), and the note that says so ("" when none was). Only the called tool's
        own blocks count: `<new_content>` in a write_file's content is text of the file."""
        tool = self.table.get(name) if name else None
        if self.native or tool is None:
            return rest, ""
        fixed, closed = close_open_blocks(rest, tool.block_params)
        return fixed, " ".join(UNCLOSED_BLOCK.format(name=block, next=after) for block, after in closed)

    def _noted(self, found: _Found, note: str) -> _Found:
        """`found`, its last call noted with `note` (the blocks closed for it)."""
        calls = [item for item in found if isinstance(item, ToolCall)]
        if note and calls:
            earlier = self.block_notes.get(calls[-1].id)
            self.block_notes[calls[-1].id] = f"{note} {earlier}" if earlier else note
        return found

    def _object_calls(
        self, src: str, at_eof: bool, blocks: dict[str, str], blocks_cut: bool, prefix: str | None
    ) -> _Found | None:
        try:
            value = _decode(src, at_eof)
        except _Truncated:
            return self._refuse(_sniff_name(src), _cut_off_error(_sniff_name(src)))
        except _Invalid:
            return self._refuse(_sniff_name(src), _invalid_json_error(src))
        found: _Found = []
        for obj in _call_objects(value):
            outcome = self._object_call(obj, blocks, blocks_cut, prefix)
            if outcome is not None:
                found.append(outcome)
        return found or None

    def _object_call(
        self, obj: Any, blocks: dict[str, str], blocks_cut: bool, prefix: str | None
    ) -> ToolCall | str | None:
        if not isinstance(obj, dict):
            return None if self.native else _invalid_json_error(repr(obj))
        name, rest = _name_and_rest(obj)
        if name is None and prefix in self.table:
            name = prefix
        if name is None:
            return None if self.native else _no_name_error(self.table)
        tool = self.table.get(name)
        if tool is None:
            return None if self.native else _unknown_tool_error(name, self.table)
        if blocks_cut:
            return _cut_off_error(name)
        tool = _block_owner(tool, list(blocks), self.table)
        resolved = _arguments(tool, rest)
        if resolved is None:
            return _bad_arguments_error(name)
        args = resolved[0]
        refused = self._stray_tags(tool, {k: v for k, v in args.items() if k not in blocks})
        if refused is not None:
            return refused
        # A block needs no escaping, so where the JSON and a block disagree the block is right;
        # but an empty block under a value written in the JSON (a Python triple-quoted string
        # the repair read) is a placeholder, and would write an empty file.
        taken = {k: v for k, v in blocks.items() if _accepts_block(tool, k)}
        empty = [k for k, v in taken.items() if not v.strip() and _written(args.get(k))]
        args.update({k: v for k, v in taken.items() if k not in empty})
        call = ToolCall(new_call_id(), tool.name, args)
        if empty:
            self.block_notes[call.id] = " ".join(EMPTY_BLOCK_NOTE.format(name=k) for k in empty)
        return call

    def _xml_call(self, body: str, closed: bool) -> _Found | None:
        m = _FUNCTION_TAG.match(body)
        if m is None:
            name = _sniff_name(body)
            if not closed:
                return self._refuse(name, _cut_off_error(name))
            return self._refuse(name, _malformed_xml_error(body))
        name = _clean_name(m.group(1))
        tool = self.table.get(name)
        if tool is None:
            return None if self.native else [_unknown_tool_error(name, self.table)]
        params, cut = _xml_params(body[m.end() :], closed)
        if cut:
            return [_cut_off_error(name)]
        props = _properties(tool)
        args = {k: _coerce(v, props.get(k, {})) for k, v in params.items()}
        return [ToolCall(new_call_id(), tool.name, args)]

    # -- answer text: fenced calls, then a reply that is only a JSON object

    def _answer_text(self, text: str) -> None:
        pos = 0
        for m in _FENCE.finditer(text):
            found = self._fenced_calls(m)
            if found is None:
                continue
            self.visible.append(text[pos : m.start()])
            self.found.extend(found)
            pos = m.end()
        self.visible.append(text[pos:])

    def _fenced_calls(self, m: re.Match[str]) -> _Found | None:
        label = (m.group("label") or "").lower()
        body, at_eof = m.group("body"), m.group("close") is None
        if label in _CALL_FENCE_LABELS:
            found = self._loose_calls(body, at_eof, report_invalid=True)
            if found is None and label == "tool_code":
                found = _python_calls(body, self.table)
            return found
        # A fence labelled as code (```python) that holds only a call object is still the call:
        # small models label the fence by the language of the task, not of what is in it.
        loose = label in _LOOSE_FENCE_LABELS or body.lstrip().startswith("{")
        if loose and not self.tagged_calls:
            found = self._loose_calls(body, at_eof, report_invalid=False)
            return found or (None if at_eof else self._untagged_call_with_blocks(body.strip()))
        return None

    def _bare_object(self) -> None:
        if self.found or self.tagged_calls:
            return
        text = "".join(self.visible).strip()
        for token in _CALL_PREFIX_TOKENS:
            text = text[len(token) :].lstrip() if text.startswith(token) else text
        if not text.startswith(("{", "[")):
            self._call_line_in_prose(text)
            return
        if text.count("```") == 1 and text.endswith("```"):
            # a fence closed that was never opened: small models end a call sent alone with one
            text = text[:-3].rstrip()
        found = self._untagged_call_with_blocks(text) or self._loose_calls(
            text, at_eof=True, report_invalid=not self.native  # a whole reply that is a broken call
        ) or self._block_left_open(text)
        if found:
            self.found.extend(found)
            self.visible = []

    def _call_line_in_prose(self, text: str) -> None:
        """A reply of prose with one whole call on a line of its own ("The correct command
        should be:\n{"name": "run_cmd", ...}\nThen use its output."): small models write the
        call they mean among words, the way a nudge shows a call to send. Only under the text
        protocol, outside fences, one object that is a valid call to a real tool and closes
        on its own line, or is followed by its own closed raw blocks and nothing else (a call
        that needs a raw block is not whole without it); the words before it stay the
        reply's text."""
        if self.native:
            return
        starts = [m.end() - 1 for m in _CALL_LINE.finditer(text)
                  if text.count("```", 0, m.start()) % 2 == 0]
        if len(starts) != 1:
            return
        start = starts[0]
        end = _json_extent(text, start)
        if text[end:].split("\n", 1)[0].strip():
            return  # more on the line: the call is quoted in a sentence
        found = self._loose_calls(text[start:end], at_eof=False, report_invalid=False)
        if not self._one_valid_call(found):
            # the call's own raw blocks after it, and nothing else, make it whole
            found = self._untagged_call_with_blocks(text[start:].rstrip())
        if self._one_valid_call(found):
            self.found.extend(found or [])
            self.visible = [text[:start].rstrip()]

    def _one_valid_call(self, found: _Found | None) -> bool:
        if not found or len(found) != 1:
            return False
        only = found[0]
        return isinstance(only, ToolCall) and _valid_call(only, self.table)

    def _block_left_open(self, text: str) -> _Found | None:
        """`{"name": "edit_file", ...}` then `<old_content>` and text, and the reply ends:
        the call was cut off inside its own raw block (text protocol only). Said so, rather
        than read as an answer that only describes the change."""
        if self.native:
            return None
        end = _json_extent(text, 0)
        name = _sniff_name(text[:end])
        tool = self.table.get(name) if name else None
        if tool is None or not tool.block_params:
            return None
        names = "|".join(re.escape(n) for n in tool.block_params)
        opened = re.match(rf"\s*(?:<(?:{names})>.*?</(?:{names})>\s*)*<({names})>", text[end:], re.S)
        if opened is None or f"</{opened.group(1)}>" in text[opened.end() :]:
            return None
        return [_cut_off_error(name) + _search_lines_note(opened.group(1), text[opened.end() :])]

    def _untagged_call_with_blocks(self, text: str) -> _Found | None:
        """`{"name": "write_file", ...}` then `<content>...</content>`: a whole call in the
        text protocol's form, only without the <tool_call> tags (small models drop them).
        Only when nothing but that tool's closed raw blocks follows the JSON."""
        if self.native or not text.startswith("{"):
            return None
        end = _json_extent(text, 0)
        rest, note = self._closed_blocks(text[end:], _sniff_name(text[:end]))
        text = text[:end] + rest
        name = _sniff_name(text[:end])
        tool = self.table.get(name) if name else None
        if tool is None:
            return None
        if _invented_result(tool, text[end:], self.table):
            return self._json_call(text[:end], closed=True)
        # A tool that only reads has no use for a block: one after it is an invented result.
        following = re.findall(r"<([A-Za-z_][\w\-]*)>", text[end:])
        tool = tool if tool.read_only else _block_owner(tool, following, self.table)
        names = (
            r"[A-Za-z_][\w\-]*"
            if tool.read_only
            else "|".join(re.escape(n) for n in tool.block_params)
        )
        if not names or not re.fullmatch(rf"(?:\s*<({names})>.*?</\1>)+\s*", text[end:], re.S):
            return None
        found = self._json_call(text[:end] if tool.read_only else text, closed=True)
        return self._noted(found, note) if found else found

    def _loose_calls(self, src: str, at_eof: bool, report_invalid: bool) -> _Found | None:
        """Calls from text that is only JSON; None unless every object is a call to a real tool."""
        values = _json_values(src)
        if values is None:
            return None
        found: _Found = []
        for k, value_src in enumerate(values):
            name = _sniff_name(value_src)
            try:
                value = _decode(value_src, at_eof and k == len(values) - 1)
            except _Truncated:
                if name in self.table:
                    return found + [_cut_off_error(name)]
                # the start of something after whole calls (`{`, the reply ended or was cut
                # there): what the stop at a call would have cut off
                return found or None
            except _Invalid:
                return (
                    found + [_invalid_json_error(value_src)]
                    if report_invalid and name in self.table
                    else None
                )
            for obj in _call_objects(value):
                call = _loose_object(obj, self.table)
                if call is None:
                    return None
                tool = self.table.get(call.name)
                refused = self._stray_tags(tool, call.arguments) if tool is not None else None
                found.append(call if refused is None else refused)
        return found or None

    def _stray_tags(self, tool: Tool, json_values: dict[str, Any]) -> str | None:
        """The refusal of a call whose JSON value of a raw-block parameter is block tags
        (text protocol only; a raw block's own text is the model's, whatever it begins with)."""
        return None if self.native else stray_block_tags(tool, json_values, self.table)


def _invented_result(tool: Tool, rest: str, table: ToolTable) -> bool:
    """What follows a whole call is the start of a result the model made up: a block no
    tool takes (`<output>`), closed or not, a tag the stop cut off (`<outp`), or a fence
    opened on the next line (the file it asked to read, as it imagines it), after a call
    that needs no block (run_cmd's stdin is optional). The model writes the output
    it expects after the call; the call stands without it. A call whose required block
    is missing (write_file's content) is no call, whatever follows."""
    match = re.match(r"\s*<([A-Za-z_][\w\-]*)(>|$)", rest)
    fields = tool.params.model_fields
    if any(fields[n].is_required() for n in tool.block_params if n in fields):
        return False
    if match is None:
        return re.match(r"\s*\n```", rest) is not None  # a fence opened after it: the file or output it expects
    takes = {name for other in table for name in other.block_params}
    return not any(name.startswith(match.group(1)) for name in takes)


def _written(value: object) -> bool:
    """A JSON argument value that holds text (not blank)."""
    return isinstance(value, str) and bool(value.strip())


def _block_owner(tool: Tool, blocks: list[str], table: ToolTable) -> Tool:
    """The tool a call's raw blocks belong to: `write_file` sent with <old_content> and
    <new_content> is an edit_file call under the wrong name (small models mix the two).
    Only when the named tool takes none of the blocks and exactly one other tool that
    changes files the same way takes them all; otherwise the named tool."""
    if not blocks or tool.read_only or any(_accepts_block(tool, b) for b in blocks):
        return tool
    owners = [
        other for other in table
        if other.block_params and set(blocks) <= set(other.block_params)
        and other.writes_files == tool.writes_files and other.main_arg == tool.main_arg
    ]
    return owners[0] if len(owners) == 1 else tool


def _valid_call(call: ToolCall, table: ToolTable) -> bool:
    """The call's arguments are all there and of the right types."""
    tool = table.get(call.name)
    if tool is None:
        return False
    from pydantic import ValidationError  # the models' own: loaded with the first of them

    try:
        tool.params.model_validate(call.arguments)
    except ValidationError:
        return False
    return True


def _loose_object(obj: Any, table: ToolTable) -> ToolCall | None:
    """A call only if it names a real tool and every argument is one of its parameters."""
    if not isinstance(obj, dict):
        return None
    name, rest = _name_and_rest(obj)
    tool = table.get(name) if name else None
    if tool is None:
        return None
    resolved = _arguments(tool, rest)
    if resolved is None:
        return None
    args, beside = resolved
    if beside and not set(args) <= set(_properties(tool)):
        return None
    return ToolCall(new_call_id(), tool.name, args)


def _python_calls(src: str, table: ToolTable) -> _Found | None:
    """`read_file(filepath="a.py")` in a tool_code fence, as some models write calls."""
    if len(src) > _LITERAL_EVAL_LIMIT:
        return None
    try:
        tree = ast.parse(src.strip())
    except Exception:  # SyntaxError, ValueError, RecursionError on junk
        return None
    found: _Found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        tool = table.get(name) if isinstance(name, str) else None
        if tool is None:
            continue
        args = _python_arguments(node, tool)
        if args is None:
            return None
        found.append(ToolCall(new_call_id(), tool.name, args))
    return found or None


def parse_reply(text: str, table: ToolTable, *, native: bool = False) -> ParseResult:
    """The calls, visible answer, thinking and refusals in one model reply.

    `native=True`: the reply came from a request with native tools but carried
    no native calls; text then counts as a call only in a recognised shape that
    names a tool in the table.
    """
    return _ReplyParser(table, native).parse(text)
