"""Stopping a one-call text reply at its whole call (protocol/callstop.py, the loop's use of it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted import ScriptedProvider
from test_loop import RecordingUI

from tether.core.messages import Done, TextDelta, ToolCall, Usage
from tether.core.toolspec import ToolContext, ToolTable
from tether.engine.dispatch import Dispatcher
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.protocol.callstop import CallStop
from tether.tools import builtin_tools
from tether.tools.file_table import FILE_TOOLS


@pytest.fixture(scope="module")
def table() -> ToolTable:
    built, _ = builtin_tools(ToolContext(root=Path("/nonexistent-root")))
    return built


def stop_point(table: ToolTable, reply: str, piece: int = 3) -> str | None:
    """The reply up to where CallStop says stop (fed `piece` characters at a time), or None."""
    watch = CallStop(table)
    for i in range(0, len(reply), piece):
        if watch.feed(reply[i : i + piece]):
            return reply[: watch.cut]
    return None


CALL = '{"name": "list_dir", "arguments": {"path": "src/"}}'


@pytest.mark.parametrize("piece", [1, 3, 50])
def test_a_read_call_then_an_invented_block_that_never_ends_stops_at_the_call(
    table: ToolTable, piece: int
) -> None:
    # The reply that looped until its timeout: a call, then a made-up listing without end.
    reply = CALL + "\n<content>\nsrc/\n" + "src/lib/textutil.py\n" * 200
    assert stop_point(table, reply, piece) == CALL


def test_a_write_waits_for_its_own_content_block(table: ToolTable) -> None:
    head = '{"name": "write_file", "arguments": {"filepath": "a.json"}}\n<content>\n{\n  "a": 45\n}\n</content>'
    assert stop_point(table, head + "\n\nNow the file says 45.") == head
    # Not before the block closes, and not while nothing follows it yet.
    assert stop_point(table, head) is None
    assert stop_point(table, head[:-5]) is None


def test_a_call_with_every_argument_in_its_json_and_then_its_own_block_waits_for_the_block(
    table: ToolTable,
) -> None:
    head = '{"name": "write_file", "arguments": {"filepath": "x.py", "content": "print(1)\\n"}}'
    block = "\n<content>\nprint(1)\n</content>"
    assert stop_point(table, head + block + "\nok") == head + block


@pytest.mark.parametrize(
    "reply, expected",
    [
        # a fenced call after prose with an apostrophe; the fence's closing ticks are not "more"
        ('Here\'s the plan.\n```json\n{"name": "read_file", "arguments": {"filepath": "a.py"}}\n```\nThen',
         'Here\'s the plan.\n```json\n{"name": "read_file", "arguments": {"filepath": "a.py"}}'),
        # a tagged call whose string holds braces, quotes and a closing tag's look-alike
        ('<tool_call>\n{"name": "write_file", "arguments": {"filepath": "a.py", "content": "x = {\\"a\\": \'}\'}"}}\n'
         '</tool_call>\nDone',
         '<tool_call>\n{"name": "write_file", "arguments": {"filepath": "a.py", "content": "x = {\\"a\\": \'}\'}"}}\n'
         '</tool_call>'),
        # Python-style quotes, then a result the model writes itself
        ("{'name': 'run_cmd', 'arguments': {'command': 'ls'}}\n[Tool Result for 'run_cmd']\nfoo",
         "{'name': 'run_cmd', 'arguments': {'command': 'ls'}}"),
        # the XML call shape
        ("<function=read_file>\n<parameter=filepath>a.py</parameter>\n</function>\nand then",
         "<function=read_file>\n<parameter=filepath>a.py</parameter>\n</function>"),
    ],
)
def test_whole_calls_in_each_shape_stop_once_something_else_begins(
    table: ToolTable, reply: str, expected: str
) -> None:
    assert stop_point(table, reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "The answer is 11. {not json} and more text with <b> tags and { an open brace",
        '{"name": "no_such_tool", "arguments": {}}\nmore text',
        '{"name": "read_file", "arguments": {}}\nmissing its required filepath',
        '{"name": "read_file", "arguments": {"filepath": "a.py"',  # cut off: never a call
        '{"name": "edit_file", "arguments": {"filepath": "a.py"}}\n<old_content>\nx\n</old_content>\nand',
    ],
)
def test_no_stop_without_one_whole_call(table: ToolTable, reply: str) -> None:
    assert stop_point(table, reply) is None


# --- the loop -------------------------------------------------------------------------------


class EndlessInventor(ScriptedProvider):
    """Streams a call, then invents its result for ever; records whether the stream was closed."""

    closed: bool = False
    sent: int = 0

    async def stream(self, messages, tools, options):  # noqa: ANN001
        if self.requests:  # the second request: the answer
            self.requests.append(messages)
            yield TextDelta("src has 3 files.")
            yield Done(Usage(1, 1), "end_turn")
            return
        self.requests.append(messages)
        try:
            for piece in (CALL[:20], CALL[20:], "\n<con", "tent>\n"):
                self.sent += 1
                yield TextDelta(piece)
            while True:  # a model looping on its invented listing
                self.sent += 1
                yield TextDelta("src/lib/textutil.py\n")
        finally:
            self.closed = True


async def test_the_loop_closes_the_stream_at_the_call_and_runs_it(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    provider = EndlessInventor(native=False)
    table = ToolTable([t for t in FILE_TOOLS if t.name == "list_dir"])
    ui = RecordingUI()
    loop = TurnLoop(
        provider, table, Dispatcher(table, ToolContext(root=tmp_path), ui, default_timeout=5.0), ui,
        TurnSettings(model="m", stop_at_call=True), system_prompt=lambda mode: "SYSTEM", mode="text",
    )
    conv = Conversation()
    result = await loop.run_turn(conv, "what is in src?")
    assert provider.closed and provider.sent == 3  # closed as soon as the invented block began
    assert result.text == "src has 3 files."
    assert [e.call.name for e in result.evidence] == ["list_dir"]
    calls = [p for m in conv.messages if m.role == "assistant" for p in m.parts if isinstance(p, ToolCall)]
    assert [c.arguments for c in calls] == [{"path": "src/"}]
    assert "textutil" not in "".join(m.text for m in conv.messages)  # nothing invented kept


@pytest.mark.parametrize("piece", [1, 3, 50])
def test_an_edit_whose_old_block_was_left_open_stops_after_its_new_block(table: ToolTable, piece: int) -> None:
    """The parser reads <old_content> as ending where <new_content> begins (the model forgot
    `</old_content>`); the stream stops there too, before what the model writes next, so the
    repaired call runs instead of the whole reply being read as prose."""
    head = ('{"name": "edit_file", "arguments": {"filepath": "a.py"}}\n'
            "<old_content>\ndef f(x):\n    pass\n\n<new_content>\ndef f(x):\n    return x\n</new_content>")
    assert stop_point(table, head + "\nThe file now reads:\n<content>\ndef f(x): ...\n", piece) == head


def test_a_write_whose_content_mentions_an_edit_block_waits_for_its_own_end(table: ToolTable) -> None:
    head = ('{"name": "write_file", "arguments": {"filepath": "doc.md"}}\n'
            "<content>\nPut the old text in <old_content> and the new in <new_content>.\n</content>")
    assert stop_point(table, head + "\nWritten.") == head


def test_a_block_stop_says_when_a_fenced_block_closes_on_a_line_of_its_own() -> None:
    from tether.protocol import BlockStop

    text = "Here:\n```python\nx = '```'\nprint(x)\n```\nNow run it.\n~~~\nmore\n~~~\n"
    stop = BlockStop()
    closed_after = [text[: i + 1] for i in range(len(text)) if stop.feed(text[i])]
    assert closed_after == ["Here:\n```python\nx = '```'\nprint(x)\n```\n",
                            "Here:\n```python\nx = '```'\nprint(x)\n```\nNow run it.\n~~~\nmore\n~~~\n"]
    assert BlockStop().feed("```python\ncode\n") is False  # open, not closed


@pytest.mark.parametrize("after", ["\n{", "\n\n{\"name\": \"list_dir\"", "}\n[", "\n<tool_call>"])
def test_a_delta_that_closes_the_call_and_opens_what_follows_still_stops_at_the_call(
    table: ToolTable, after: str
) -> None:
    # A model's token may carry the call's last brace and the next object's first (`}}\n{`):
    # the reply is balanced only inside that delta, never at a delta's end.
    reply = CALL + after + '"name": "read_file", "arguments": {"filepath": "a.py"}}'
    watch = CallStop(table)
    assert not watch.feed(CALL[:-2])
    assert watch.feed(CALL[-2:] + after)
    assert reply[: watch.cut] == CALL
