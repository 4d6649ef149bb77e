"""Streaming markdown: block splitting, bounded live region, throttled repaints."""

from __future__ import annotations

import io
import re
from collections.abc import Callable

import pyte
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markdown import Markdown
from rich.style import Style

from tether.ui.terminal.markdown_blocks import (
    MAX_OPEN_LINES,
    BlockSplitter,
    head_cut,
    split_blocks,
)
from tether.ui.terminal.render import MarkdownStream
from tether.ui.terminal.theme import CODE_THEME, THEME

WIDTH = 80

REPLY = """# Plan for the fix

The parser drops the last line when the file has **no trailing newline**.
The fix is small.

- read `parser.py`
- patch `read_lines`
  - keep the old behaviour behind a flag
- run the tests

| file | change |
|------|--------|
| parser.py | strip fix |
| test_parser.py | new case |

```python
def read_lines(text):

    return text.splitlines()
```

---

> Note: run `pytest -q` before committing.

Done.
"""


@pytest.fixture(autouse=True)
def capable_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich reads these from the environment; pin them so a CI shell cannot change the tests."""
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in (
        "TTY_COMPATIBLE",
        "TTY_INTERACTIVE",
        "FORCE_COLOR",
        "NO_COLOR",
        "COLUMNS",
        "LINES",
    ):
        monkeypatch.delenv(name, raising=False)


def terminal_console(height: int = 25) -> Console:
    return Console(
        file=io.StringIO(), force_terminal=True, width=WIDTH, height=height, color_system=None
    )


def piped_console() -> Console:
    return Console(file=io.StringIO(), force_terminal=False, width=WIDTH, color_system=None)


def output(console: Console) -> str:
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def stream_in_chunks(console: Console, text: str, size: int) -> MarkdownStream:
    stream = MarkdownStream(console)
    for start in range(0, len(text), size):
        stream.feed(text[start : start + size])
    stream.finish()
    return stream


def rendered_whole(text: str) -> str:
    console = piped_console()
    console.print(Markdown(text, code_theme=CODE_THEME))
    return output(console)


def final_screen(raw: str, rows: int = 400) -> list[str]:
    """What a terminal shows once everything is written (the tty turns \\n into \\r\\n)."""
    screen = pyte.Screen(WIDTH, rows)
    pyte.Stream(screen).feed(raw.replace("\n", "\r\n"))
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def blocks_of(text: str) -> list[str]:
    splitter = BlockSplitter()
    return splitter.feed(text) + splitter.close()


# --- theme ----------------------------------------------------------------------


def test_theme_names_the_styles_the_app_uses() -> None:
    for name in ("tool", "tool.error", "notice", "thinking", "diff.add", "diff.del", "status"):
        assert name in THEME.styles
    assert THEME.styles["thinking"] == Style.parse("dim italic")
    assert CODE_THEME == "monokai"


# --- splitting ------------------------------------------------------------------


def test_blank_line_finishes_a_paragraph_and_the_last_block_stays_open() -> None:
    finished, still_open = split_blocks("First para\nsame para.\n\nSecond para")
    assert finished == ["First para\nsame para."]
    assert still_open == "Second para"


def test_heading_is_finished_at_its_newline_and_ends_the_paragraph_above() -> None:
    finished, still_open = split_blocks("Some text\n## Next\nmore")
    assert finished == ["Some text", "## Next"]
    assert still_open == "more"


def test_fenced_code_with_blank_lines_is_one_block_until_the_fence_closes() -> None:
    code = "```python\ndef f():\n\n\n    return 1\n"
    finished, still_open = split_blocks(code)
    assert finished == []
    assert still_open == code
    finished, still_open = split_blocks(code + "```\nafter")
    assert finished == ["```python\ndef f():\n\n\n    return 1\n```"]
    assert still_open == "after"


def test_fence_closes_only_with_its_own_kind_and_length() -> None:
    text = "~~~~\n```\n~~~\nstill code\n~~~~\n"
    assert blocks_of(text) == ["~~~~\n```\n~~~\nstill code\n~~~~"]


def test_list_spans_blank_lines_between_items_and_indented_continuations() -> None:
    text = "- one\n- two\n\n  more of two\n\n- three\n\nAfter the list.\n"
    assert blocks_of(text) == ["- one\n- two\n\n  more of two\n\n- three", "After the list."]


def test_list_stays_open_across_a_blank_line_until_the_next_line_decides() -> None:
    finished, still_open = split_blocks("- one\n- two\n\n")
    assert finished == []
    assert still_open == "- one\n- two\n\n"


def test_table_spans_its_lines_and_a_paragraph_above_it_is_split_off() -> None:
    text = "Results:\n| a | b |\n|---|---|\n| 1 | 2 |\n\nNext."
    assert blocks_of(text) == ["Results:", "| a | b |\n|---|---|\n| 1 | 2 |", "Next."]


def test_setext_heading_and_rules() -> None:
    assert blocks_of("Title\n=====\ntext\n\n***\n") == ["Title\n=====", "text", "***"]


def test_html_block_runs_to_its_end_marker_through_blank_lines() -> None:
    text = "<!-- note\n\n# not a heading\n-->\nafter\n"
    assert blocks_of(text) == ["<!-- note\n\n# not a heading\n-->", "after"]


def test_splitting_incrementally_gives_the_same_blocks_as_splitting_at_once() -> None:
    splitter = BlockSplitter()
    collected: list[str] = []
    for char in REPLY:
        finished, _ = split_blocks(char, splitter)
        collected += finished
    collected += splitter.close()
    assert collected == blocks_of(REPLY)
    assert "\n".join(collected).count("def read_lines") == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(REPLY)), max_size=12))
def test_any_chunking_gives_the_same_blocks(cuts: list[int]) -> None:
    splitter = BlockSplitter()
    collected: list[str] = []
    start = 0
    for cut in sorted(set(cuts)) + [len(REPLY)]:
        collected += splitter.feed(REPLY[start:cut])
        start = cut
    assert collected + splitter.close() == blocks_of(REPLY)


# --- rendering ------------------------------------------------------------------


@pytest.mark.parametrize("make_console", [terminal_console, piped_console])
def test_final_output_has_heading_list_table_and_code(make_console: Callable[[], Console]) -> None:
    console = make_console()
    stream_in_chunks(console, REPLY, 4)
    text = "\n".join(final_screen(output(console)))
    assert "Plan for the fix" in text
    assert "• read parser.py" in text
    assert "• keep the old behaviour behind a flag" in text
    assert re.search(r"parser\.py\s+strip fix", text)
    assert "def read_lines(text):" in text
    assert "return text.splitlines()" in text
    assert "Note: run pytest -q before committing." in text


def test_streamed_output_is_the_reply_rendered_at_once() -> None:
    console = piped_console()
    stream_in_chunks(console, REPLY, 4)
    assert output(console) == rendered_whole(REPLY)


def test_terminal_scrollback_matches_the_piped_output() -> None:
    console = terminal_console()
    stream_in_chunks(console, REPLY, 4)
    assert "\x1b[" in output(console)  # the live region was drawn
    assert final_screen(output(console)) == final_screen(rendered_whole(REPLY))


def test_code_block_with_blank_lines_renders_as_one_block() -> None:
    code = "```python\nx = 1\n\n\ny = 2\n```"
    console = piped_console()
    stream_in_chunks(console, "Intro.\n\n" + code + "\n\nOutro.", 3)
    lines = output(console).splitlines()
    first, last = (
        lines.index(f" x = 1{' ' * (WIDTH - 6)}"),
        lines.index(f" y = 2{' ' * (WIDTH - 6)}"),
    )
    assert lines[first + 1 : last] == [" " * WIDTH, " " * WIDTH]  # blank code lines, padded


SNIPPETS = [
    "Plain paragraph with *emphasis* and `code`.",
    "Two line\nparagraph.",
    "# Heading",
    "Setext\n======",
    "- alpha\n- beta\n  - nested",
    "1. first\n2. second",
    "- loose\n\n- list\n\n  continued",
    "```python\ndef f():\n\n    return 1\n```",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "> quoted\n> more",
    "---",
    "    indented code\n\n    more code",
    "Text then list:\n- x",
    "<!-- html\n\ncomment -->",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(SNIPPETS), st.sampled_from(["\n", "\n\n"])),
        min_size=1,
        max_size=6,
    ),
    st.integers(min_value=1, max_value=9),
)
def test_blocks_printed_one_by_one_equal_the_whole_document(
    parts: list[tuple[str, str]], chunk: int
) -> None:
    document = "".join(text + joint for text, joint in parts)
    console = piped_console()
    stream_in_chunks(console, document, chunk)
    whole = rendered_whole(document)
    # rich starts a document that opens with a list, quote or table with a blank line;
    # the stream does not put a blank line at the top of a reply
    assert output(console) in (whole, whole.removeprefix("\n"))


# --- bounded open block -----------------------------------------------------------


def long_code_block(lines: int) -> str:
    body = "\n".join(f"value_{n} = {n}" + ("\n" if n % 10 == 0 else "") for n in range(lines))
    return f"```python\n{body}\n```\n\nAfter the code.\n"


def test_huge_code_block_keeps_the_open_block_bounded() -> None:
    reply = "Intro.\n\n" + long_code_block(400)
    console = terminal_console()
    stream = MarkdownStream(console)
    biggest = 0
    for start in range(0, len(reply), 4):
        stream.feed(reply[start : start + 4])
        biggest = max(biggest, len(stream._splitter.open_lines))
    stream.finish()
    assert biggest <= MAX_OPEN_LINES + 2
    screen = final_screen(output(console), rows=600)
    values = [line.strip() for line in screen if line.strip().startswith("value_")]
    assert values == [f"value_{n} = {n}" for n in range(400)]
    assert screen[-1] == "After the code."


def test_huge_block_streamed_prints_the_same_as_the_same_block_seen_whole() -> None:
    reply = long_code_block(300) + "\n" + "\n".join(f"{n}. item {n}" for n in range(1, 200))
    chunked, whole = piped_console(), piped_console()
    stream_in_chunks(chunked, reply, 4)
    stream_in_chunks(whole, reply, len(reply))
    assert output(chunked) == output(whole)
    assert [line.strip() for line in output(whole).splitlines() if "item" in line] == [
        f"{n} item {n}" for n in range(1, 200)
    ]


def test_head_cut_splits_lists_only_between_items() -> None:
    lines = []
    for n in range(40):
        lines += [f"- item {n}", "  continued"]
    start, stop = head_cut(lines) or (0, 0)
    assert start == 0 and 0 < stop < len(lines)
    assert lines[stop].startswith("- item")


def test_head_cut_keeps_fence_opener_and_table_head_for_every_piece() -> None:
    fence = ["```sh"] + [f"echo {n}" for n in range(80)] + ["```"]
    assert head_cut(fence) == (1, 31)
    table = ["| a | b |", "|---|---|"] + [f"| {n} | x |" for n in range(80)]
    assert head_cut(table) == (2, 32)
    assert head_cut(fence[:40]) is None  # small enough


# --- live region and throttling ---------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_text_shows_before_its_line_is_complete_on_a_terminal() -> None:
    console = terminal_console()
    stream = MarkdownStream(console)
    stream.feed("Hello wor")
    assert "Hello wor" in output(console)
    stream.finish()
    assert final_screen(output(console)) == ["Hello wor"]


def test_a_thousand_feeds_within_the_interval_cause_at_most_a_couple_of_repaints() -> None:
    clock = FakeClock()
    console = terminal_console()
    stream = MarkdownStream(console, min_interval=0.05, clock=clock)
    for _ in range(1000):
        stream.feed("x")
        clock.now += 0.00001  # 1000 feeds in 0.01 s
    assert 1 <= stream.repaints <= 2
    clock.now += 0.05
    stream.feed("y")
    assert stream.repaints <= 3
    stream.finish()
    assert final_screen(output(console)) == ["x" * WIDTH] * 12 + ["x" * 40 + "y"]


def test_repaints_follow_the_clock() -> None:
    clock = FakeClock()
    stream = MarkdownStream(terminal_console(), min_interval=0.05, clock=clock)
    for _ in range(20):
        stream.feed("word ")
        clock.now += 0.06
    assert stream.repaints == 20
    stream.finish()


def test_refresh_draws_what_arrived_since_the_last_repaint() -> None:
    clock = FakeClock()
    console = terminal_console()
    stream = MarkdownStream(console, min_interval=0.05, clock=clock)
    stream.feed("first ")
    stream.feed("second")
    assert "second" not in output(console)
    stream.refresh()
    assert "first second" in output(console)
    stream.finish()


def test_piped_output_has_no_live_region_and_prints_blocks_as_they_finish() -> None:
    console = piped_console()
    stream = MarkdownStream(console)
    stream.feed("# Title\n\nA paragraph still being wri")
    assert "Title" in output(console)
    assert "paragraph" not in output(console)
    stream.feed("tten.\n\nNext")
    assert "A paragraph still being written." in output(console)
    stream.finish()
    assert stream.repaints == 0
    assert "\x1b" not in output(console)
    assert output(console).rstrip().endswith("Next")


def test_finish_leaves_the_stream_ready_for_the_next_reply() -> None:
    console = piped_console()
    with MarkdownStream(console) as stream:
        stream.feed("First reply.")
    stream.feed("Second reply.")
    stream.finish()
    assert output(console).splitlines() == [
        "First reply." + " " * (WIDTH - 12),
        "Second reply." + " " * (WIDTH - 13),
    ]


def test_live_region_shows_only_the_newest_lines_of_a_tall_block() -> None:
    console = terminal_console(height=10)
    stream = MarkdownStream(console, min_interval=0)
    stream.feed("```\n" + "\n".join(f"line {n}" for n in range(40)) + "\n")
    drawn = output(console)
    assert "line 39" in drawn
    assert re.search(r"\bline 0\b", drawn) is None  # scrolled out of the live region
    stream.finish()
    screen = final_screen(output(console))
    assert [line.strip() for line in screen if line.strip()] == [f"line {n}" for n in range(40)]
