"""The small profile's edit_file against an edit that would break a Python file: a def line
given alone for a whole new function replaces the function; anything else that breaks a file
that parses is refused, and the file is left as it was (the real tools, real files)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tether.core.toolspec import ToolContext, ToolError
from tether.tools.file_table import FILE_TOOLS
from tether.tools.simple_edit import simple_edit_tool

CORE = (
    "def mean(values):\n    return sum(values) / len(values)\n\n\n"
    "def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return ordered[middle]\n\n\n"
    "def spread(values):\n    return max(values) - min(values)\n"
)


def edit(root: Path, old: str, new: str, path: str = "stats/core.py") -> str:
    tool = simple_edit_tool(next(t for t in FILE_TOOLS if t.name == "edit_file"))
    params = tool.params.model_validate({"filepath": path, "old_content": old, "new_content": new})
    return tool.handler(params, ToolContext(root=root)).text


@pytest.fixture
def stats(tmp_path: Path) -> Path:
    (tmp_path / "stats").mkdir()
    (tmp_path / "stats" / "__init__.py").write_text("")
    (tmp_path / "stats" / "core.py").write_text(CORE)
    return tmp_path


def median_of(root: Path, values: list[int]) -> str:
    code = f"from stats.core import median, spread; print(median({values}), spread([1, 5]))"
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True).stdout


def test_a_def_line_given_alone_for_a_new_function_replaces_the_whole_function(stats: Path) -> None:
    new = ("def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n"
           "    if len(ordered) % 2:\n        return ordered[middle]\n"
           "    return (ordered[middle - 1] + ordered[middle]) / 2")
    result = edit(stats, "def median(values):", new)
    assert result.startswith("old_content held only the first line of median(), and new_content is a new "
                             "version of all of it, so the whole function (lines 5-8) was replaced:")
    assert median_of(stats, [4, 1, 3, 2]) == "2.5 4\n"  # the new function runs, spread is kept


def test_a_method_written_unindented_is_put_at_its_indentation(stats: Path) -> None:
    (stats / "stats" / "box.py").write_text("class Box:\n    def size(self):\n        return 1\n\n    def kind(self):\n        return 'b'\n")
    edit(stats, "    def size(self):", "def size(self):\n    return 2", path="stats/box.py")
    run = subprocess.run([sys.executable, "-c", "from stats.box import Box; print(Box().size(), Box().kind())"],
                         cwd=stats, capture_output=True, text=True, check=True)
    assert run.stdout == "2 b\n"


def test_an_edit_that_breaks_a_valid_file_is_refused_and_the_file_kept(stats: Path) -> None:
    with pytest.raises(ToolError, match=r"would leave stats/core.py invalid Python \(unexpected indent, line 6\)"):
        edit(stats, "def median(values):", "def average(*values): return sorted(values)[len(values) // 2]")
    assert (stats / "stats" / "core.py").read_text() == CORE
    with pytest.raises(ToolError, match="invalid Python"):
        edit(stats, "    return max(values) - min(values)", "return max(values) - min(values)")
    assert (stats / "stats" / "core.py").read_text() == CORE


def test_a_file_that_did_not_parse_and_other_kinds_are_edited_as_sent(stats: Path) -> None:
    (stats / "broken.py").write_text("def f(:\n    pass\n")
    assert edit(stats, "    pass", "    return 1", path="broken.py").startswith("Edited broken.py")
    (stats / "notes.txt").write_text("def x:\n")
    assert edit(stats, "def x:", "  def y:", path="notes.txt").startswith("Edited notes.txt")


def test_a_def_line_with_new_first_lines_of_its_body_is_edited_as_sent(stats: Path) -> None:
    result = edit(stats, "def median(values):", "def median(values):\n    if not values:\n        return None")
    assert result.startswith("Edited stats/core.py (+2 -0 lines)")
    assert "    middle = len(ordered) // 2\n    return ordered[middle]" in (stats / "stats" / "core.py").read_text()


def test_old_content_copied_with_its_blank_lines_changed_is_found(stats: Path) -> None:
    """fix_median: the whole file copied with one blank line (holding a space) between the
    functions where the file has two; old_content was not found and the model gave up."""
    old = CORE.replace("\n\n\n", "\n \n")
    new = old.replace("    return ordered[middle]\n",
                      "    if len(ordered) % 2:\n        return ordered[middle]\n"
                      "    return (ordered[middle - 1] + ordered[middle]) / 2\n")
    result = edit(stats, old, new)
    assert result.startswith("old_content was not found as written, but its lines match lines 1-12 of the file "
                             "exactly apart from blank lines")
    assert median_of(stats, [4, 1, 3, 2]) == "2.5 4\n"


def test_blank_lines_are_no_licence_to_match_other_text(stats: Path) -> None:
    with pytest.raises(ToolError, match="old_content was not found"):
        edit(stats, "def median(values):\n\n    ordered = sorted(values )\n", "x = 1\n")
    assert (stats / "stats" / "core.py").read_text() == CORE


def test_old_content_at_another_indentation_is_found_and_new_content_takes_the_files(tmp_path: Path) -> None:
    """A 1.5B model copied a two-space JSON file at four spaces; old_content was not found."""
    (tmp_path / "settings.json").write_text('{\n  "base_url": "x",\n  "retries": 4,\n  "opts": {\n    "a": 1\n  }\n}\n')
    old = '{\n    "base_url": "x",\n    "retries": 4,\n    "opts": {\n        "a": 1\n    }\n}'
    new = old.replace('"retries"', '"max_retries"').replace('"a": 1', '"a": 1,\n        "b": 2')
    result = edit(tmp_path, old, new, "settings.json")
    assert result.startswith("old_content was not found as written, but its lines are lines 1-7 of the file "
                             "at another indentation")
    assert (tmp_path / "settings.json").read_text() == (
        '{\n  "base_url": "x",\n  "max_retries": 4,\n  "opts": {\n    "a": 1,\n    "b": 2\n  }\n}\n')


def test_a_method_copied_without_its_class_indentation_goes_back_in_at_it(stats: Path) -> None:
    (stats / "stats" / "shapes.py").write_text("class Box:\n    def area(self):\n        return 1\n")
    edit(stats, "def area(self):\n    return 1", "def area(self):\n    if self:\n        return 2\n    return 1",
         "stats/shapes.py")
    assert (stats / "stats" / "shapes.py").read_text() == (
        "class Box:\n    def area(self):\n        if self:\n            return 2\n        return 1\n")


def test_indentation_is_no_licence_to_match_twice_or_to_guess_a_rule(stats: Path) -> None:
    (stats / "stats" / "twice.py").write_text("if a:\n    x = 1\nif b:\n    x = 1\n")
    with pytest.raises(ToolError, match="old_content was not found"):
        edit(stats, "        x = 1", "        x = 2", "stats/twice.py")  # two places
    (stats / "stats" / "mixed.py").write_text("if a:\n    x = 1\n    if b:\n        y = 2\n")
    with pytest.raises(ToolError, match="old_content was not found"):  # 4 -> 4 and 4 -> 8: no one rule
        edit(stats, "    x = 1\n    if b:\n    y = 2", "    x = 5\n    if b:\n    y = 3", "stats/mixed.py")


def test_a_name_alone_for_a_name_renames_it_throughout_the_file(tmp_path: Path) -> None:
    """A 1.5B model told where a name was still used sent the name alone and the new name; the
    file had it three times and the edit failed."""
    (tmp_path / "cart.py").write_text("from shop import calc_total\n\n"
                                      "a = calc_total([1])\nb = calc_total_2(calc_total([2]))\n")
    result = edit(tmp_path, "calc_total", "compute_total", "cart.py")
    assert result.startswith("old_content is the name `calc_total` alone, which cart.py has 3 times "
                             "(lines 1, 3, 4), so each was changed to `compute_total`")
    assert (tmp_path / "cart.py").read_text() == ("from shop import compute_total\n\n"
                                                  "a = compute_total([1])\nb = calc_total_2(compute_total([2]))\n")


@pytest.mark.parametrize(("old", "new"), [
    ("x = 1", "x = 2"),  # a line, not a name
    ("id", "key"),  # too short to mean one thing
    ("total", "sum of it"),  # a name for other text
])
def test_only_a_name_for_a_name_is_renamed_throughout(tmp_path: Path, old: str, new: str) -> None:
    text = "x = 1\nid = total\nx = 1\nid = total\n"
    (tmp_path / "a.txt").write_text(text)
    with pytest.raises(ToolError, match="occurs 2 times"):
        edit(tmp_path, old, new, "a.txt")
    assert (tmp_path / "a.txt").read_text() == text
