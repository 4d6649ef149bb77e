"""The approval diff for edit_file/write_file: hunk headers carry the file's real line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.core.messages import ToolCall
from tether.tools.file_text import line_hash
from tether.ui.terminal.preview import change_preview

LINES = [f"line {n}" for n in range(1, 31)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("\n".join(LINES) + "\n")
    return tmp_path


def edit(**arguments: str) -> ToolCall:
    return ToolCall(id="c1", name="edit_file", arguments={"filepath": "notes.txt", **arguments})


def anchor(number: int) -> str:
    return f"{number}:{line_hash(LINES[number - 1])}"


def test_old_content_edit_is_numbered_as_in_the_file(project: Path) -> None:
    call = edit(old_content="line 20\nline 21\n", new_content="twenty\n")
    assert change_preview(call, project) == [
        "@@ -18,6 +18,5 @@",
        " line 18",
        " line 19",
        "-line 20",
        "-line 21",
        "+twenty",
        " line 22",
        " line 23",
    ]


def test_old_content_in_a_crlf_file_is_found_and_numbered(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(("\r\n".join(LINES) + "\r\n").encode())
    diff = change_preview(edit(old_content="line 10", new_content="ten"), tmp_path)
    assert diff is not None and diff[0] == "@@ -8,5 +8,5 @@"
    assert "-line 10" in diff and "+ten" in diff


@pytest.mark.parametrize(
    ("old", "why"),
    [("line 2", "occurs in line 2 and lines 20-29"), ("no such text", "not in the file")],
)
def test_old_content_not_found_exactly_once_falls_back_to_the_snippet(
    project: Path, old: str, why: str
) -> None:
    assert change_preview(edit(old_content=old, new_content="new"), project) == [
        "@@ -1 +1 @@",
        f"-{old}",
        "+new",
    ], why


def test_unreadable_file_falls_back_to_the_snippet(tmp_path: Path) -> None:
    call = edit(old_content="a\nb", new_content="a\nc")
    assert change_preview(call, tmp_path) == ["@@ -1,2 +1,2 @@", " a", "-b", "+c"]


def test_anchor_edit_shows_the_anchored_lines_with_real_numbers(project: Path) -> None:
    call = edit(start_anchor=anchor(12), end_anchor=anchor(14), new_content="a\nb")
    assert change_preview(call, project) == [
        "@@ -10,7 +10,6 @@",
        " line 10",
        " line 11",
        "-line 12",
        "-line 13",
        "-line 14",
        "+a",
        "+b",
        " line 15",
        " line 16",
    ]


def test_a_single_anchor_replaces_one_line_and_empty_content_deletes_it(project: Path) -> None:
    call = edit(start_anchor=anchor(5), end_anchor="", new_content="")
    assert change_preview(call, project) == [
        "@@ -3,5 +3,4 @@",
        " line 3",
        " line 4",
        "-line 5",
        " line 6",
        " line 7",
    ]


@pytest.mark.parametrize(
    "start",
    ["5:zz", "99:00", f"5:{line_hash('something else')}", "not an anchor"],
)
def test_stale_or_bad_anchors_show_no_preview(project: Path, start: str) -> None:
    assert change_preview(edit(start_anchor=start, new_content="x"), project) is None


def test_anchors_out_of_order_show_no_preview(project: Path) -> None:
    call = edit(start_anchor=anchor(9), end_anchor=anchor(3), new_content="x")
    assert change_preview(call, project) is None


def test_write_file_still_diffs_against_the_current_file(project: Path) -> None:
    content = "\n".join(LINES[:29] + ["the end"]) + "\n"
    arguments = {"filepath": "notes.txt", "content": content}
    call = ToolCall(id="c2", name="write_file", arguments=arguments)
    assert change_preview(call, project) == [
        "@@ -28,3 +28,3 @@",
        " line 28",
        " line 29",
        "-line 30",
        "+the end",
    ]
