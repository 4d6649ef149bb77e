"""`@file` in the chat: a file too long to attach whole says what was cut, to the model and to
the user, and how the rest can be read; a file that fits is attached whole, as before."""

from __future__ import annotations

from pathlib import Path

from tether.ui.terminal.prompt import MAX_ATTACH_BYTES, MAX_ATTACH_CHARS, expand_mentions


def test_a_small_file_is_attached_whole_and_named_plainly(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    text, attached = expand_mentions("read @notes.txt", tmp_path)
    assert attached == ["notes.txt"]
    assert '<file path="notes.txt">\none\ntwo\n\n</file>' in text
    assert "cut" not in text


def test_a_long_log_says_how_much_of_it_was_attached_and_how_to_read_on(tmp_path: Path) -> None:
    lines = [f"line {n:06d} of the log" for n in range(1, 100_001)]  # 2.3 MB, 100,000 lines
    (tmp_path / "big.log").write_text("\n".join(lines) + "\n")
    text, [label] = expand_mentions("what failed in @big.log?", tmp_path)
    body = text.split('<file path="big.log">\n', 1)[1]
    kept = body.split("\n[... cut: ", 1)[0]
    shown_lines = kept.splitlines()
    assert shown_lines == lines[: len(shown_lines)]  # whole lines, from the start
    assert len(kept) <= MAX_ATTACH_CHARS
    count = len(shown_lines)
    size = (tmp_path / "big.log").stat().st_size
    expected = (f"the first {count:,} lines ({len(kept):,} characters) of 100,000 lines, "
                f"{size:,} bytes are attached; read the rest with read_file filepath=big.log "
                f"offset={count + 1}")
    assert f"[... cut: {expected} ...]" in text
    assert label == f"big.log (cut: {expected})"


def test_a_file_cut_by_its_bytes_is_said_to_be_cut_too(tmp_path: Path) -> None:
    # four-byte characters: the byte cap is reached exactly at the character cap
    (tmp_path / "wide.txt").write_text("🙂" * (MAX_ATTACH_BYTES // 4 + 1), encoding="utf-8")
    text, [label] = expand_mentions("@wide.txt", tmp_path)
    assert label.startswith("wide.txt (cut: the first ")
    assert "of its first line" in label and "offset=1" in label
    assert "[... cut: " in text
