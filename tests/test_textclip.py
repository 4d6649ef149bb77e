"""The clipping helpers: each caller keeps its own shares and marker, built from textclip."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.core.textclip import keep_ends, keep_head
from tether.engine.answer_checks import _shown
from tether.engine.commands_ran import RanCommand
from tether.engine.context import clip_middle
from tether.engine.dispatch import window_text
from tether.mcp.tools import describe
from tether.store.memory import _preview
from tether.store.session import cap_text
from tether.tools.web_search import first_words


def test_keep_ends_counts_what_it_leaves_out() -> None:
    assert keep_ends("abcdefghij", 2, 3) == "ab\n[... 5 characters omitted ...]\nhij"
    assert keep_ends("abcdefghij", 4, 0) == "abcd\n[... 6 characters omitted ...]\n"


def test_keep_head_names_what_followed() -> None:
    assert keep_head("abcdefghij", 4, "characters cut") == "abcd\n[... 6 characters cut ...]"
    assert keep_head("abcd", 4, "characters cut") == "abcd"


def test_each_caller_keeps_its_own_shares() -> None:
    text = "".join(str(i % 10) for i in range(1000))
    # dispatch: 60 characters of room for the marker, then two thirds head, one third tail
    assert window_text(text, 360) == keep_ends(text, 200, 100)
    # context: a quarter head, the rest tail (the latest part of a history matters most)
    assert clip_middle(text, 400) == keep_ends(text, 100, 300)
    # session: the head only
    assert cap_text(text, 10) == text[:10] + "\n[... 990 more characters not kept ...]"


@given(st.text(max_size=300), st.integers(min_value=1, max_value=320))
def test_short_enough_text_is_never_touched_and_long_text_is_counted(text: str, limit: int) -> None:
    for clipped in (window_text(text, limit), clip_middle(text, limit), cap_text(text, limit)):
        if len(text) <= limit:
            assert clipped == text
        else:
            assert clipped != text and "characters" in clipped


def test_short_previews_end_at_a_word() -> None:
    # A preview cut as "This ca…" reads as a different word.
    words = " ".join(["calculate"] * 400)
    previews = [
        _preview(words),
        first_words(words),
        describe("srv", {"description": words}, []),
    ]
    for preview in previews:
        assert preview.endswith("calculate…")
    command = RanCommand(words, "exited", 1)
    assert "calculate…` exited 1" in _shown(command)
