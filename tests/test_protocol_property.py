"""Properties of the text protocol: no crash, no unsafe repair of a cut-off call, a faithful stream filter."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from protocol_tables import make_table

from tether.core.messages import ToolCall
from tether.protocol import StreamFilter, parse_reply, render_call_as_text

TABLE = make_table()

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- (1) never raises

TAG_SOUP = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<think>",
        "</think>",
        "<function=read_file>",
        "<function=",
        "</function>",
        "<parameter=filepath>",
        "<parameter=limit>",
        "</parameter>",
        "<content>",
        "</content>",
        "<old_content>",
        "<stdin>",
        "```",
        "```json\n",
        "```tool_call\n",
        "```tool_code\n",
        "`",
        "{",
        "}",
        "[",
        "]",
        '"',
        "'",
        "\\",
        ":",
        ",",
        "\n",
        " ",
        '"name"',
        '"arguments"',
        '"read_file"',
        '"write_file"',
        '"filepath"',
        '"a.py"',
        "True",
        "None",
        "tru",
        "12",
        "-",
        "1e",
        "\\u00",
        "read_file(",
        "print(",
        ")",
        "=",
        "{'name': 'read_file'",
    ]
)


@FAST
@given(st.text())
def test_parse_reply_never_raises_on_any_text(text: str) -> None:
    result = parse_reply(text, TABLE)
    assert isinstance(result.text, str) and isinstance(result.thinking, str)
    parse_reply(text, TABLE, native=True)


@FAST
@given(st.lists(st.one_of(TAG_SOUP, st.text(max_size=5)), max_size=40).map("".join))
def test_parse_reply_never_raises_on_tag_soup(text: str) -> None:
    for native in (False, True):
        result = parse_reply(text, TABLE, native=native)
        assert all(call.name in TABLE for call in result.calls)
        assert all(isinstance(call.arguments, dict) for call in result.calls)


def test_deep_nesting_is_refused_not_crashed() -> None:
    for reply in (
        "<tool_call>" + "[" * 50_000,
        "<tool_call>" + "[" * 50_000 + "]" * 50_000,
        "{" * 50_000,
    ):
        result = parse_reply(reply, TABLE)
        assert result.calls == []


# ---------------------------------------------------------------- (2) truncation is never repaired into a lie

values = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
paths = st.text("abc/._-é ", min_size=1, max_size=12)
ints = st.integers(min_value=-10_000, max_value=10_000_000)


@st.composite
def calls(draw: st.DrawFn) -> ToolCall:
    name = draw(st.sampled_from(TABLE.names()))
    if name == "read_file":
        args: dict[str, Any] = {"filepath": draw(paths)}
        for key in ("offset", "limit"):
            if draw(st.booleans()):
                args[key] = draw(ints)
    elif name == "write_file":
        args = {"filepath": draw(paths), "content": draw(values)}
    elif name == "edit_file":
        args = {"filepath": draw(paths), "old_content": draw(values), "new_content": draw(values)}
    else:
        args = {"command": draw(values)}
        if draw(st.booleans()):
            args["stdin"] = draw(values)
    # The one deliberate repair: a value wrapped whole in its own raw-block tags
    # ("content": "<content>x</content>") loses the tags, so it is not a faithful round trip.
    assume(not any(_wrapped_in_own_tags(k, v) for k, v in args.items() if isinstance(v, str)))
    return ToolCall("call_x", name, args)


def _wrapped_in_own_tags(name: str, value: str) -> bool:
    body = value.strip()
    return body.startswith(f"<{name}>") and body.endswith(f"</{name}>")


def _xml(call: ToolCall) -> str | None:
    """The XML call shape, when every value can be written raw."""
    parts = [f"<function={call.name}>"]
    for key, value in call.arguments.items():
        text = str(value)
        if any(
            tag in text for tag in ("</parameter>", "</function>", "</tool_call>", "<parameter=")
        ):
            return None
        parts.append(f"<parameter={key}>\n{text}\n</parameter>")
    parts.append("</function>")
    return "<tool_call>\n" + "\n".join(parts) + "\n</tool_call>"


def renderings(call: ToolCall) -> list[str]:
    plain = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    indented = json.dumps({"name": call.name, "arguments": call.arguments}, indent=2)
    found = [
        render_call_as_text(call, TABLE),
        f"Working on it.\n<tool_call>\n{plain}\n</tool_call>",
        f"<tool_call>{indented}</tool_call>",
        f"```tool_call\n{plain}\n```",
        plain,
        json.dumps({"name": call.name, **call.arguments}),
    ]
    xml = _xml(call)
    if xml is not None and all(isinstance(v, str) for v in call.arguments.values()):
        # Only text values: an XML value has no type of its own to check identity against.
        found.append(xml)
    return found


def assert_no_lie(call: ToolCall, prefix: str) -> None:
    result = parse_reply(prefix, TABLE)
    for got in result.calls:
        assert got.name == call.name, prefix
        for key, value in got.arguments.items():
            assert key in call.arguments, (prefix, key)
            assert value == call.arguments[key] and type(value) is type(call.arguments[key]), (
                prefix,
                key,
            )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls())
def test_any_truncation_yields_no_call_or_a_truthful_subset(call: ToolCall) -> None:
    for text in renderings(call):
        full = parse_reply(text, TABLE)
        assert [(c.name, c.arguments) for c in full.calls] == [(call.name, call.arguments)], text
        for cut in range(len(text)):
            assert_no_lie(call, text[:cut])


def test_truncated_write_never_writes_partial_content() -> None:
    call = ToolCall(
        "c", "write_file", {"filepath": "main.py", "content": 'print("one")\nprint("two")\n'}
    )
    for text in renderings(call):
        for cut in range(len(text)):
            for got in parse_reply(text[:cut], TABLE).calls:
                assert (
                    "content" not in got.arguments
                    or got.arguments["content"] == call.arguments["content"]
                )


# ---------------------------------------------------------------- (3) the stream filter hides exactly the blocks

plain_text = st.text(
    # No '"': a tag inside a JSON string value on the same line (`"content": "<think>`) is
    # that value, not a tag; this oracle knows nothing of strings, and the rule has tests of
    # its own (test_think_tags_inside_a_bare_json_value_are_the_value and those after it).
    st.characters(blacklist_characters='<>`=_"', blacklist_categories=("Cs",)), max_size=12
)
near_tags = st.sampled_from(
    ["<", "<tool", "<tool_cal", "<thin", "</think", "<function", "< tool_call>", "<b>", "<<"]
)
json_string = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10).map(json.dumps)


def _without(text: str, tag: str) -> str:
    while tag in text:
        text = text.replace(tag, "")
    return text


@st.composite
def pieces(draw: st.DrawFn) -> tuple[str, str, str]:
    """(raw, visible, thinking) for one piece of a reply."""
    kind = draw(st.sampled_from(["text", "text", "near", "think", "call", "block_call", "xml"]))
    if kind == "text":
        s = draw(plain_text)
        return s, s, ""
    if kind == "near":
        s = draw(near_tags) + draw(plain_text).lstrip(">") + " "
        return s, s, ""
    if kind == "think":
        inner = (
            draw(plain_text)
            + draw(st.sampled_from(["", "<tool_call>", "</tool_call>"]))
            + draw(plain_text)
        )
        return f"<think>{inner}</think>", "", inner
    if kind == "call":
        body = '{"name": "run_cmd", "arguments": {"command": ' + draw(json_string) + "}}"
        return f"<tool_call>\n{body}\n</tool_call>", "", ""
    if kind == "block_call":
        inner = _without(draw(st.text(max_size=20)), "</content>")
        return f'<tool_call>{{"name": "write_file"}}<content>{inner}</content></tool_call>', "", ""
    value = _without(draw(st.text(max_size=15)), "</parameter>")
    return f"<function=run_cmd><parameter=command>{value}</parameter></function>", "", ""


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=30)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


@FAST
@given(st.lists(pieces(), max_size=12), st.data())
def test_stream_filter_output_is_the_reply_without_blocks(
    parts: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    raw = "".join(p[0] for p in parts)
    chunks = data.draw(chunkings(raw))
    stream = StreamFilter(TABLE)
    shown: list[tuple[str, str]] = []
    for chunk in chunks:
        shown += stream.feed(chunk)
    shown += stream.flush()
    assert "".join(c for k, c in shown if k == "text") == "".join(p[1] for p in parts)
    assert "".join(c for k, c in shown if k == "thinking") == "".join(p[2] for p in parts)
    assert all(chunk for _, chunk in shown)


@FAST
@given(st.lists(pieces(), max_size=8), plain_text)
def test_unclosed_call_at_the_end_is_never_shown(
    parts: list[tuple[str, str, str]], secret: str
) -> None:
    raw = "".join(p[0] for p in parts) + '<tool_call>{"name": "write_file"}<content>' + secret
    stream = StreamFilter(TABLE)
    shown = [c for ch in raw for k, c in stream.feed(ch) if k == "text"]
    shown += [c for k, c in stream.flush() if k == "text"]
    assert "".join(shown) == "".join(p[1] for p in parts)


def test_think_tags_inside_a_bare_json_value_are_the_value() -> None:
    call = ToolCall("call_x", "write_file", {"filepath": "a", "content": "<think>"})
    for text in renderings(call):
        got = parse_reply(text, TABLE)
        assert [(c.name, c.arguments) for c in got.calls] == [(call.name, call.arguments)], text


def test_a_json_value_that_is_only_a_raw_block_tag_is_refused_a_raw_block_keeps_it() -> None:
    # `"content": "<content>"` is a placeholder for text that never came: written, the file
    # would hold the tag. In a raw block or an XML parameter the same text is the model's own.
    call = ToolCall("call_x", "write_file", {"filepath": "a", "content": "<content>"})
    raw, *json_forms, xml = renderings(call)
    for own_text in (raw, xml):
        got = parse_reply(own_text, TABLE)
        assert [(c.name, c.arguments) for c in got.calls] == [(call.name, call.arguments)], own_text
    for text in json_forms:
        got = parse_reply(text, TABLE)
        assert got.calls == [] and len(got.errors) == 1, text
        assert "content is only block tags" in got.errors[0] and "nothing was run" in got.errors[0]


CONTENT_PIECES = st.sampled_from(["<old_content>", "<new_content>", "</new_content>", "<stdin>", "<plan>",
                                  "x = 1", "\n", " ", "<div>", "# note", "\t"])


@FAST
@given(st.lists(CONTENT_PIECES, max_size=12).map("".join))
def test_a_write_whose_content_lost_its_end_keeps_what_other_tools_blocks_look_like(content: str) -> None:
    """Inside a closed <tool_call>, a write_file's <content> left open runs to the call's end:
    another tool's block opener in it is text of the file, never where the content stops (the
    newline before the call's end is the model's or the file's: it cannot tell)."""
    head = '<tool_call>{"name": "write_file", "arguments": {"filepath": "page.md"}}\n<content>\n'
    closed = parse_reply(f"{head}{content}</content>\n</tool_call>", TABLE)
    left_open = parse_reply(f"{head}{content}\n</tool_call>", TABLE)
    [written], [meant] = left_open.calls, closed.calls
    assert written.arguments["content"].rstrip("\n") == meant.arguments["content"].rstrip("\n")
