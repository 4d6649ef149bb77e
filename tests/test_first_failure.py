"""The first failing test of real pytest and unittest runs, said as its line and its error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tether.assist.first_failure import MAX_CHARS, first_failure

CODE = (
    "class Bag:\n"
    "    def __init__(self, score):\n"
    "        self.score = score\n\n"
    "    def has(self, item):\n"
    "        return (self.score & item) != 0\n\n\n"
    "def is_iso(word):\n"
    "    return len(set(word)) == len(word)\n"
)
TESTS = (
    "import unittest\n\nfrom bag import Bag, is_iso\n\n\n"
    "class BagTest(unittest.TestCase):\n"
    "    def test_a_mixed_case_word(self):\n"
    "        self.assertIs(is_iso(\"Alphabet\"), False)\n\n"
    "    def test_eggs(self):\n"
    "        self.assertIs(Bag(1).has(\"eggs\"), True)\n\n"
    "    def test_plain(self):\n"
    "        self.assertIs(is_iso(\"abc\"), True)\n"
)


def run(tmp_path: Path, *args: str) -> str:
    (tmp_path / "bag.py").write_text(CODE)
    (tmp_path / "bag_test.py").write_text(TESTS)
    done = subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    return done.stdout + done.stderr


@pytest.mark.parametrize("style", ["--tb=short", "--tb=long", "--tb=auto"])
def test_pytest_s_first_failure_is_its_assertion_and_error(tmp_path: Path, style: str) -> None:
    found = first_failure(run(tmp_path, "pytest", "-q", "-p", "no:cacheprovider", style, "bag_test.py"))
    assert found is not None and found.test.endswith("test_a_mixed_case_word")
    assert found.lines == ('self.assertIs(is_iso("Alphabet"), False)',)
    assert found.error == "AssertionError: True is not False"


def test_an_error_raised_in_the_code_names_the_test_line_and_the_code_line(tmp_path: Path) -> None:
    out = run(tmp_path, "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", "bag_test.py::BagTest::test_eggs")
    found = first_failure(out)
    assert found is not None
    assert found.lines == ('self.assertIs(Bag(1).has("eggs"), True)', "return (self.score & item) != 0")
    assert found.error.startswith("TypeError: unsupported operand type(s) for &")


def test_unittest_s_first_failure_is_read_too(tmp_path: Path) -> None:
    found = first_failure(run(tmp_path, "unittest", "bag_test"))
    assert found is not None and found.test in ("test_a_mixed_case_word", "test_eggs")
    assert found.lines[0].startswith("self.assertIs(") and found.error.split(":")[0] in ("AssertionError", "TypeError")


@pytest.mark.parametrize("output", [
    "", "5 passed in 0.1s", "Traceback (most recent call last):\nKeyError: 'x'",
    "____ x ____\nno code and no error here\n", "FAIL: test_x\nnothing after it",
])
def test_output_with_no_readable_failure_gives_none(output: str) -> None:
    assert first_failure(output) is None


def test_long_lines_are_clipped() -> None:
    long = "x" * (MAX_CHARS * 3)
    found = first_failure(f"____ T.test_long ____\nt.py:3: in test_long\n    assert f() == '{long}'\nE   AssertionError: '{long}'\n")
    assert found is not None and all(len(line) <= MAX_CHARS + 2 for line in (*found.lines, found.error))
