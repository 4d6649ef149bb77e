"""A write whose code is another file of its folder, line for line, says so in its result."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.core.toolspec import ToolContext
from tether.tools.copy_check import MAX_SIBLINGS, copied_from
from tether.tools.files import write_file
from tether.tools.params import WriteFileParams

SCRIPT = "import sys\n\nfor arg in sys.argv[1:]:\n    print(round(float(arg) * 0.621371, 2))\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


def test_a_new_script_that_copies_the_one_beside_it_is_written_and_says_so(ctx: ToolContext,
                                                                           tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "km_to_miles.py").write_text(SCRIPT)
    respaced = SCRIPT.replace("\n\n", "\n").replace("2))", "2))   ")  # blank lines, spacing aside
    out = write_file(WriteFileParams(filepath="scripts/c2f.py", content=respaced), ctx)
    assert (tmp_path / "scripts" / "c2f.py").read_text() == respaced, "a copy may be what was asked"
    assert out.text == ("Created scripts/c2f.py (3 lines). Its code is scripts/km_to_miles.py's, line for "
                        "line, so it does what scripts/km_to_miles.py does: unless the request asked for "
                        "a copy, change it to do what the request asks.")
    assert out.summary == "created scripts/c2f.py (a copy of scripts/km_to_miles.py)"
    assert out.changed_paths == (tmp_path / "scripts" / "c2f.py",)


def test_an_overwrite_with_the_tests_beside_it_says_whose_code_it_is(ctx: ToolContext, tmp_path: Path) -> None:
    tests = "from leap import leap_year\n\n\ndef test_2000():\n    assert leap_year(2000)\n"
    (tmp_path / "leap_test.py").write_text(tests)
    (tmp_path / "leap.py").write_text("def leap_year(year):\n    pass\n")
    out = write_file(WriteFileParams(filepath="leap.py", content=tests), ctx)
    assert out.text.startswith("Overwrote leap.py (5 lines). Its code is leap_test.py's, line for line")


@pytest.mark.parametrize(("other", "content", "why"), [
    ("km_to_miles.py", SCRIPT.replace("0.621371", "9 / 5 + 32"), "one line differs"),
    ("km_to_miles.sh", SCRIPT, "another kind of file"),
    ("km_to_miles.py", "print(1)\n", "a one-line file is alike by chance"),
])
def test_no_copy_is_claimed_for_a_file_that_differs(ctx: ToolContext, tmp_path: Path,
                                                     other: str, content: str, why: str) -> None:
    (tmp_path / other).write_text(content if "chance" in why else SCRIPT)
    out = write_file(WriteFileParams(filepath="c2f.py", content=content), ctx)
    assert out.text == f"Created c2f.py ({content.count(chr(10))} lines).", why
    assert out.summary == "created c2f.py"


def test_a_symlink_or_a_folder_beside_it_is_not_compared(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(SCRIPT)
    project = tmp_path / "project"
    project.mkdir()
    os.symlink(outside / "secret.py", project / "linked.py")
    (project / "folder.py").mkdir()
    assert copied_from(project / "c2f.py", SCRIPT.encode()) is None


def test_only_so_many_files_of_a_folder_are_compared(tmp_path: Path) -> None:
    for n in range(MAX_SIBLINGS):
        (tmp_path / f"a{n:03}.py").write_text(f"x = {n}\ny = {n}\n")
    (tmp_path / "z.py").write_text(SCRIPT)  # after the first MAX_SIBLINGS in name order
    assert copied_from(tmp_path / "new.py", SCRIPT.encode()) is None
    assert copied_from(tmp_path / "new.py", b"x = 3\ny = 3\n") == tmp_path / "a003.py"


def test_a_folder_that_cannot_be_listed_is_no_copy(tmp_path: Path) -> None:
    assert copied_from(tmp_path / "missing" / "new.py", SCRIPT.encode()) is None


def test_a_copy_with_a_comment_naming_its_new_file_is_still_a_copy(ctx: ToolContext, tmp_path: Path) -> None:
    """Told its script copied the one beside it, a 1.5B model wrote it again with
    `# scripts/c2f.py` on top and the same formula."""
    (tmp_path / "km_to_miles.py").write_text(SCRIPT)
    out = write_file(WriteFileParams(filepath="c2f.py", content="# c2f.py\n" + SCRIPT), ctx)
    assert "Its code is km_to_miles.py's, line for line" in out.text
