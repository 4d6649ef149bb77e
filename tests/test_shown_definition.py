"""Which blocks are a new version of one definition, and where (assist/shown_definition.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.assist.shown_definition import shown_definition

SHAPES = ("import math\n\n\ndef area(r):\n    return r * r\n\n\n"
          "class Circle:\n    def __init__(self, r):\n        self.r = r\n\n    def size(self):\n        return self.r\n")


def fence(code: str) -> str:
    return f"The fix:\n```python\n{code}```\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[Path, str]:
    (tmp_path / "shapes.py").write_text(SHAPES)
    (tmp_path / "other.py").write_text("def helper():\n    return 1\n")
    return {tmp_path / "shapes.py": "shapes.py", tmp_path / "other.py": "other.py"}


def test_a_function_is_its_old_text_and_the_blocks_text(files: dict[Path, str]) -> None:
    found = shown_definition(fence("import math\n\ndef area(r):\n    return math.pi * r ** 2\n"), files)
    assert found is not None and (found.path, found.name) == ("shapes.py", "area")
    assert found.old == "def area(r):\n    return r * r\n"
    assert found.new == "def area(r):\n    return math.pi * r ** 2\n"


@pytest.mark.parametrize(("code", "why"), [
    ("def slugify(t):\n    return t\n", "a new name: where it goes would be a guess"),
    ("def area(r):\n    return r * r\n", "the same text: nothing to change"),
    ("import numpy\n\ndef area(r):\n    return numpy.pi * r * r\n", "an import the file lacks would be lost"),
    ("class Circle:\n    def size(self):\n        return 2 * self.r\n", "a class without __init__ drops it"),
    ("def area(r):\n    return r\n\ndef helper():\n    return 2\n", "two definitions"),
    ("area = lambda r: r\n", "no definition"),
    ("def area(r:\n    return r\n", "does not parse"),
    ("class area:\n    pass\n", "a class for a function"),
])
def test_what_is_not_taken(files: dict[Path, str], code: str, why: str) -> None:
    assert shown_definition(fence(code), files) is None, why


def test_a_name_two_files_define_is_not_taken(files: dict[Path, str], tmp_path: Path) -> None:
    (tmp_path / "more.py").write_text("def area(r):\n    return 0\n")
    files[tmp_path / "more.py"] = "more.py"
    assert shown_definition(fence("def area(r):\n    return 3 * r\n"), files) is None


def test_two_blocks_that_each_fit_are_not_taken(files: dict[Path, str]) -> None:
    text = fence("def area(r):\n    return 3 * r\n") + fence("def helper():\n    return 5\n")
    assert shown_definition(text, files) is None


def test_a_file_that_is_not_python_or_cannot_be_read_is_skipped(files: dict[Path, str], tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("def area(r):\n    return 0\n")
    files[tmp_path / "notes.txt"] = "notes.txt"
    files[tmp_path / "gone.py"] = "gone.py"
    found = shown_definition(fence("def area(r):\n    return 3 * r\n"), files)
    assert found is not None and found.path == "shapes.py"
