"""Large pastes become one placeholder in the input line and the whole text when sent."""

from __future__ import annotations

from tether.ui.terminal.paste import PASTE_MAX_CHARS, PASTE_MAX_LINES, Pastes


def test_a_short_paste_goes_in_as_it_is() -> None:
    pastes = Pastes()
    short = "\n".join(["x"] * PASTE_MAX_LINES)
    assert pastes.insertion(short) == short
    assert pastes.insertion("a\r\nb") == "a\nb"  # a terminal's line ends, made plain


def test_a_long_paste_is_a_placeholder_that_expands_to_the_whole_text() -> None:
    pastes = Pastes()
    many = "\r\n".join(f"line {i}" for i in range(12))
    wide = "y" * (PASTE_MAX_CHARS + 1)
    first, second = pastes.insertion(many), pastes.insertion(wide)
    assert first == f"[pasted text #1: 12 lines, {len(many) - 11} characters]"  # \r\n counts one
    assert second == f"[pasted text #2: 1 line, {PASTE_MAX_CHARS + 1} characters]"
    line = f"compare {first} with {second}"
    assert pastes.expand(line) == f"compare {many.replace(chr(13), '')} with {wide}"


def test_text_that_only_looks_like_a_placeholder_stays_as_typed() -> None:
    pastes = Pastes()
    typed = "[pasted text #1: 3 lines, 10 characters]"
    assert pastes.expand(typed) == typed  # no paste yet
    pastes.insertion("z\n" * 20)
    other = "[pasted text #7: 3 lines, 10 characters]"
    assert pastes.expand(other) == other
