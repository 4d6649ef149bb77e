"""A streamed reply that loops on one line, or on one block of lines, is stopped after the
first copy."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted import ScriptedProvider
from test_loop import RecordingUI

from tether.core.messages import Done, TextDelta, Usage
from tether.core.toolspec import ToolContext, ToolTable
from tether.engine.dispatch import Dispatcher
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.engine.repeatstop import CYCLE_COPIES, REPEAT_LIMIT, RepeatStop
from tether.tools.file_table import FILE_TOOLS

LOOPED = '    assert slugify("Hello, World! 12345") == "hello-world-12345"\n'


def feed_in_pieces(stop: RepeatStop, text: str, size: int = 7) -> bool:
    return any(stop.feed(text[i : i + size]) for i in range(0, len(text), size))


def test_one_line_repeated_stops_at_the_limit_and_cuts_after_its_first_copy() -> None:
    head = "def test_slugify():\n"
    stop = RepeatStop()
    assert feed_in_pieces(stop, head + LOOPED * REPEAT_LIMIT)
    assert stop.cut == len(head + LOOPED) and stop.line == LOOPED.strip()


def test_a_line_that_grows_by_a_piece_each_time_is_a_loop_too() -> None:
    """What the model wrote in add_slugify: each assert the last one with " 12345" added."""
    head = "def test_slugify():\n"
    grown = [f'    assert slugify("Hello, World!{" 12345" * n}") == "hello-world{"-12345" * n}"\n'
             for n in range(1, REPEAT_LIMIT + 1)]
    stop = RepeatStop()
    assert feed_in_pieces(stop, head + "".join(grown))
    assert stop.cut == len(head + grown[0])


DATES = "".join(f'    assert parse("2024-01-{d:02}") == date(2024, 1, {d})\n' for d in range(1, 20))
TABLE = "".join(f'    {{"name": "user{n}", "age": {20 + n}, "city": "Paris"}},\n' for n in range(1, 20))


@pytest.mark.parametrize("text", [
    DATES,  # alike lines of real code: the same length, not each one longer
    TABLE,
    "x = 1\n" + LOOPED * (REPEAT_LIMIT - 1),  # one copy short
    "    )\n" * 50,  # short lines repeat in real code
    (LOOPED + "    pass_a_line_that_differs()\n") * 10,  # not in a row
])
def test_no_stop_for_what_real_code_repeats(text: str) -> None:
    assert not feed_in_pieces(RepeatStop(), text)


ASSERTS = [f"    assert page_count({n}, 20) == {(n + 19) // 20}\n" for n in (40, 41, 5, 0)]


def test_a_block_of_lines_repeated_in_a_row_stops_after_its_first_copy() -> None:
    # The loop a 1.5B model wrote into a test's new_content until the token limit: the same
    # few asserts, over and over.
    head = '{"name": "edit_file", "arguments": {"filepath": "t.py"}}\n<new_content>\n'
    block = "".join(ASSERTS)
    stop = RepeatStop()
    assert feed_in_pieces(stop, head + block * CYCLE_COPIES)
    assert stop.cut == len(head + block) and stop.line.startswith("assert page_count(")


@pytest.mark.parametrize("text", [
    "".join(ASSERTS) * (CYCLE_COPIES - 1) + "x = 1\n",  # one copy short
    "".join(ASSERTS[:2]) * 10,  # two lines taking turns
    "    }\n  },\n  {\n" * 10,  # a block of short lines
    "".join(ASSERTS) + "".join(reversed(ASSERTS)) + "".join(ASSERTS),  # not the same block
])
def test_no_stop_for_blocks_real_code_repeats(text: str) -> None:
    assert not feed_in_pieces(RepeatStop(), text)


class LoopingWriter(ScriptedProvider):
    """Streams a write_file whose content loops for ever, then answers; records the stream's end."""

    closed: bool = False
    sent: int = 0

    async def stream(self, messages, tools, options):  # noqa: ANN001
        self.requests.append(messages)
        if len(self.requests) > 1:
            yield TextDelta("I will write it once.")
            yield Done(Usage(1, 1), "end_turn")
            return
        try:
            yield TextDelta('{"name": "write_file", "arguments": {"filepath": "t.py"}}\n<content>\ndef test():\n')
            while True:
                self.sent += 1
                yield TextDelta(LOOPED)
        finally:
            self.closed = True


def writing_loop(provider: ScriptedProvider, root: Path, **settings: object) -> TurnLoop:
    """A text-protocol loop with the stop lever on and write_file as its one tool."""
    table = ToolTable([t for t in FILE_TOOLS if t.name == "write_file"])
    ui = RecordingUI()
    return TurnLoop(
        provider, table, Dispatcher(table, ToolContext(root=root), ui, default_timeout=5.0), ui,
        TurnSettings(model="m", stop_at_call=True, **settings),  # type: ignore[arg-type]
        system_prompt=lambda mode: "SYSTEM", mode="text",
    )


async def test_the_loop_closes_a_looping_stream_runs_nothing_and_says_why(tmp_path: Path) -> None:
    provider = LoopingWriter([])
    loop = writing_loop(provider, tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "write a test for slugify in t.py")
    assert provider.closed and provider.sent == REPEAT_LIMIT
    assert not (tmp_path / "t.py").exists() and result.evidence == []
    told = [m.text for m in provider.requests[1] if m.role == "user"][-1]
    assert "repeated the same line over and over" in told
    kept = [m.text for m in conv.messages if m.role == "assistant"][0]
    assert kept.count("assert slugify") == 1  # the loop is not kept in the history


class RecordingOptions(LoopingWriter):
    temperatures: list = []

    async def stream(self, messages, tools, options):  # noqa: ANN001
        self.temperatures = [*self.temperatures, options.temperature]
        async for event in super().stream(messages, tools, options):
            yield event


async def test_the_request_after_a_loop_is_sampled_warmer_then_greedy_again(tmp_path: Path) -> None:
    from tether.engine.repeatstop import LOOP_TEMPERATURE

    provider = RecordingOptions([])
    loop = writing_loop(provider, tmp_path, temperature=0.0)
    await loop.run_turn(Conversation(), "write a test for slugify in t.py")
    await loop.run_turn(Conversation(), "again")
    assert provider.temperatures[:2] == [0.0, LOOP_TEMPERATURE]
    assert provider.temperatures[2] == 0.0  # a new turn starts greedy


def test_long_lines_count_only_word_for_word() -> None:
    """Past GROWN_MAX_CHARS a line is not compared piece by piece (that is quadratic, on
    every streamed line), so long growing lines stream on; the same long line still stops."""
    from tether.engine.repeatstop import GROWN_MAX_CHARS

    base = "x = [" + "1, " * (GROWN_MAX_CHARS // 3)
    grown = "".join(base + "2, " * n + "]\n" for n in range(1, REPEAT_LIMIT + 2))
    assert not feed_in_pieces(RepeatStop(), grown)
    assert feed_in_pieces(RepeatStop(), (base + "]\n") * REPEAT_LIMIT)


def counting_cases(start: int, copies: int) -> str:
    """One case per value, each list one item longer: the loop seen writing a function."""
    return "".join(f"    if target == {n}:\n        return [{', '.join(['1'] * n)}, 2]\n"
                   for n in range(start, start + copies))


def test_one_case_per_value_counting_up_is_stopped_at_its_first_copy() -> None:
    from tether.engine.repeatstop import COUNT_COPIES

    head = "def find(coins, target):\n    if target == 0:\n        return []\n"
    text = head + counting_cases(3, COUNT_COPIES + 5)
    stop = RepeatStop()
    assert feed_in_pieces(stop, text)
    assert stop.counting and text[: stop.cut] == head + counting_cases(3, 1)
    assert "counting up or down" in stop.note() and "general rule" in stop.note()
    # one copy fewer is not yet a loop
    assert not feed_in_pieces(RepeatStop(), head + counting_cases(3, COUNT_COPIES - 1))


def test_code_that_only_looks_alike_is_not_a_counting_loop() -> None:
    from tether.engine.repeatstop import COUNT_COPIES

    rows = COUNT_COPIES + 4
    same_number = "".join("    [1, 3, 3, 1],  # a row of the triangle\n" for _ in range(2)) + "".join(
        f"    assert triangle({n}) == [1, 3, 3, 1]\n" if n % 2 else f"    assert row({n}) is None\n"
        for n in range(rows))  # two shapes taking turns: no copy of one block
    table = "".join(f"    '{chr(97 + n)}': {n + 1},  # the letter's place\n" for n in range(rows))
    squares = "".join(f"    assert square({n}) == {n * n}\n" for n in (1, 2, 4, 8, 16, 3, 5, 7, 9, 10, 13, 15, 17, 19))
    pascal = "".join("    assert pascal_row_first(n) == 1\n" for _ in range(2))
    same_length = "".join(f"    if n == {n}:\n        return 'case {n % 10}'\n" for n in range(10, 10 + rows))
    for text in (same_number, table, squares, pascal, same_length, TABLE):
        assert not feed_in_pieces(RepeatStop(), text), text
    huge = "".join(f"    x = {'9' * 5000}{n}  # a number past int()'s digit limit\n" for n in range(12))
    assert not feed_in_pieces(RepeatStop(), huge)  # no ValueError from a hostile number


async def test_the_loop_tells_a_counting_model_to_write_the_rule_once(tmp_path: Path) -> None:
    from tether.engine.repeatstop import COUNT_COPIES

    class CountingWriter(ScriptedProvider):
        async def stream(self, messages, tools, options):  # noqa: ANN001
            self.requests.append(list(messages))
            if len(self.requests) > 1:
                yield TextDelta("I will write the rule once.")
                yield Done(Usage(1, 1), "end_turn")
                return
            head = '<tool_call>\n{"name": "write_file", "arguments": {"filepath": "c.py"}}\n<content>\n'
            for piece in (head, "def f(target):\n", counting_cases(1, COUNT_COPIES * 3)):
                yield TextDelta(piece)
            yield Done(Usage(), "max_tokens")

    provider = CountingWriter([])
    loop = writing_loop(provider, tmp_path, max_steps=2)
    await loop.run_turn(Conversation(), "write c.py")
    told = [m.text for m in provider.requests[1] if m.role == "user"][-1]
    assert "one case per value" in told and "return [1, 1" in told
    assert not (tmp_path / "c.py").exists()  # nothing in the stopped reply ran


WINS = [f"    if board[{r}][0] == board[{r}][1] == board[{r}][2] == '{p}':\n        return 'win'\n"
        for p in "XO" for r in range(3)]
"""Six `if` blocks of two lines: the twelve-line block the model wrote over and over."""


def test_a_long_block_is_a_loop_at_its_second_copy() -> None:
    head = "def gamestate(board):\n"
    block = "".join(WINS)
    stop = RepeatStop()
    assert feed_in_pieces(stop, head + block * 2)
    assert stop.cut == len(head + block) and "board[" in stop.line


@pytest.mark.parametrize("text", [
    "".join(WINS) + "    return 'draw'\n" + "".join(WINS),  # not in a row
    "".join(WINS) + "".join(WINS[:5]) + "    return 'draw'\n",  # one if short of the second copy
    "".join(WINS) + "".join(reversed(WINS)),  # not the same block
])
def test_no_stop_for_long_blocks_that_do_not_repeat_in_a_row(text: str) -> None:
    assert not feed_in_pieces(RepeatStop(), text)
