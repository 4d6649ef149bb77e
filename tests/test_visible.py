"""Model text made visible: no character that steers the terminal or hides survives."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from tether.core.messages import ToolCall
from tether.safety.visible import INVISIBLE, visible, visible_pieces
from tether.ui.headless import HeadlessUI, describe_arguments


@given(st.text())
def test_nothing_hidden_survives(text: str) -> None:
    out = visible(text)
    assert all(c in "\n\t" or (c.isprintable() and c not in INVISIBLE) for c in out)
    assert out.count("\n") == text.count("\n")  # every line is still its own line


@given(st.text(alphabet=st.characters(categories=["L", "N", "P", "S"]) | st.sampled_from(" \n\t")))
def test_ordinary_text_is_left_alone(text: str) -> None:
    if not any(c in INVISIBLE or 0xE0100 <= ord(c) <= 0xE01EF for c in text):
        assert visible(text) == text


def test_controls_bidi_and_zero_width_characters_become_escapes() -> None:
    text = "a\x1b[2Kb\rc\bd\x7fe\x85f\u202eg\u2067h\u200bi\ufeffj\u200ek\u061cl\xa0m\U000e0041n"
    assert visible(text) == (
        "a\\x1b[2Kb\\rc\\bd\\x7fe\\x85f\\u202eg\\u2067h\\u200bi\\ufeffj\\u200ek\\u061cl\\xa0m\\U000e0041n")
    assert [hidden for _, hidden in visible_pieces("a\x1bb")] == [False, True, False]


def test_a_byte_that_was_not_utf8_is_shown_as_safetext_shows_it() -> None:
    assert visible("a\udcffb") == "a\\xffb"


def test_a_tool_line_shows_the_escapes_and_how_many_lines_follow() -> None:
    line = describe_arguments({"command": "ls #\x1b[2K\x1b[1G ok\nrm -rf x\ntouch y"})
    assert line == "ls #\\x1b[2K\\x1b[1G ok (+2 more lines)"


def test_headless_progress_lines_are_visible() -> None:
    err = io.StringIO()
    HeadlessUI("text", out=io.StringIO(), err=err).tool_start(
        ToolCall("c", "run\x1b[2Kcmd", {"command": "echo \u202eok"}))
    assert err.getvalue() == "→ run\\x1b[2Kcmd echo \\u202eok\n"


def test_the_one_shot_text_answer_cannot_steer_the_terminal() -> None:
    # OSC 52 writes the clipboard, OSC 0 the window title: `tether -p` prints the answer
    # straight to a terminal, so its escapes must be drawn, not obeyed.
    answer = "done\x1b]52;c;cm0gLXJmIH4K\x07 \x1b]0;owned\x07\u202eok\ncolumn\tkept"
    for obj in ({"is_error": False, "result": answer}, {"is_error": True, "partial_result": answer}):
        out = io.StringIO()
        HeadlessUI("text", out=out, err=io.StringIO()).result(obj)
        assert out.getvalue() == (
            "done\\x1b]52;c;cm0gLXJmIH4K\\x07 \\x1b]0;owned\\x07\\u202eok\ncolumn\tkept\n")


def test_markdown_links_show_where_they_lead() -> None:
    # A terminal hyperlink (OSC 8) shows only its text: "docs.python.org" leading elsewhere.
    from rich.console import Console

    from tether.ui.terminal.render import MarkdownStream

    buffer = io.StringIO()
    stream = MarkdownStream(Console(file=buffer, force_terminal=True, width=100))
    stream.feed("see [https://docs.python.org](https://evil.example/x) now\n\n")
    stream.finish()
    drawn = buffer.getvalue()
    assert "\x1b]8;" not in drawn and "https://evil.example/x" in drawn
