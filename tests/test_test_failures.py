"""A failing pytest run told in short (assist/test_failures.py), read from real pytest runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tether.assist.test_failures import FULL_FAILURES, digest, restated

CODE = "def score(x):\n    return 10 if x > 5 else 1\n\n\ndef divide(x):\n    return 1 / x\n"


def pytest_output(root: Path, test: str, name: str = "test_code.py") -> str:
    """pytest's output as the check runs it, framed as run_cmd shows a command's result."""
    (root / "code.py").write_text(CODE)
    (root / name).write_text(test)
    command = [sys.executable, "-m", "pytest", "-q", "--tb=short", "--disable-warnings", "-p", "no:cacheprovider", name]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    return f"$ python3 -m pytest {name}\n{done.stdout}[exit code {done.returncode} · 1.0s]"


def unittest_file(*bodies: str) -> str:
    tests = "".join(f"    def test_{n}(self):\n        {body}\n\n" for n, body in enumerate(bodies))
    return f"import unittest\n\nfrom code import divide, score\n\n\nclass ScoreTest(unittest.TestCase):\n{tests}"


def test_a_comparison_of_a_call_is_said_as_what_it_returned_and_the_summary_is_left_out(tmp_path: Path) -> None:
    told = digest(pytest_output(tmp_path, unittest_file("self.assertEqual(score(0), 10)",
                                                        "self.assertIs(score(9) == 10, False)",
                                                        "self.assertEqual(score(9), 10)")))
    assert told is not None
    lines = told.splitlines()
    assert lines[0] == "$ python3 -m pytest test_code.py" and lines[-1].startswith("[exit code 1")
    assert "FAILED test_0 (test_code.py:8)" in lines
    assert "    self.assertEqual(score(0), 10)" in lines
    assert "    score(0) returned 1; the test expects 10" in lines
    assert "    AssertionError: True is not False" in lines  # a comparison, not a call: as pytest said it
    assert "test_2" not in told and "short test summary" not in told and "FAILED test_code.py::" not in told
    assert "2 failed, 1 passed" in told


def test_an_error_inside_the_code_keeps_the_code_line_it_came_from(tmp_path: Path) -> None:
    told = digest(pytest_output(tmp_path, unittest_file("self.assertEqual(divide(0), 1)")))
    assert told is not None
    assert "  in code.py:6:" in told and "    return 1 / x" in told
    assert "    ZeroDivisionError: division by zero" in told
    assert "^^^" not in told and "returned" not in told


def test_plain_asserts_parameters_and_printed_output(tmp_path: Path) -> None:
    test = ("import pytest\nfrom code import score\n\n\n@pytest.mark.parametrize('x,want', [(0, 10), (1.5, 10)])\n"
            "def test_score(x, want):\n    print('looking at', x)\n    assert score(x) == want\n")
    told = digest(pytest_output(tmp_path, test))
    assert told is not None
    assert "FAILED test_score[0-10] (test_code.py:8)" in told and "FAILED test_score[1.5-10]" in told
    assert "    assert 1 == 10" in told and "where 1 = score(0)" in told
    assert "looking at" not in told  # what a test printed is not its failure


def test_a_long_test_name_whose_banner_pytest_shortens_is_read(tmp_path: Path) -> None:
    long_name = "test_" + "a_score_far_from_the_centre_" * 3  # pytest's banner keeps one "_" a side
    test = f"from code import score\n\n\ndef {long_name}():\n    assert score(0) == 10\n"
    output = pytest_output(tmp_path, test)
    assert f"_ {long_name} _" in output
    told = digest(output)
    assert told is not None and f"FAILED {long_name} (test_code.py:5)" in told


def test_beyond_the_first_failures_the_rest_are_named(tmp_path: Path) -> None:
    told = digest(pytest_output(tmp_path, unittest_file(*["self.assertEqual(score(0), 10)"] * (FULL_FAILURES + 3))))
    assert told is not None
    assert told.count("returned 1; the test expects 10") == FULL_FAILURES
    assert f"(3 more failing: test_{FULL_FAILURES}, test_{FULL_FAILURES + 1}, test_{FULL_FAILURES + 2})" in told


@pytest.mark.parametrize("test", [
    "from code import missing\n\n\ndef test_x():\n    assert missing()\n",  # a collection error
    "from code import score\n\n\ndef test_x():\n    assert score(9) == 10\n",  # it passes
])
def test_output_it_cannot_read_whole_is_left_to_the_caller(tmp_path: Path, test: str) -> None:
    assert digest(pytest_output(tmp_path, test)) is None


def test_other_output_is_left_to_the_caller() -> None:
    for output in ("", "$ python3 x.py\nTraceback (most recent call last):\n  File ...\nValueError: no\n",
                   "=== FAILURES ===\nsomething else entirely\n"):
        assert digest(output) is None


@pytest.mark.parametrize(("source", "error", "said"), [
    ("self.assertEqual(score(0), 10)", "AssertionError: 1 != 10", "score(0) returned 1; the test expects 10"),
    ("self.assertAlmostEqual(area(2), 12.56)", "AssertionError: 12.0 != 12.56 within 7 places (0.56 difference)",
     "area(2) returned 12.0; the test expects 12.56"),
    ("self.assertTrue(is_valid('x'))", "AssertionError: False is not true",
     "is_valid('x') returned False; the test expects a true value"),
    ("self.assertIsNone(find([]))", "AssertionError: 3 is not None", "find([]) returned 3; the test expects None"),
    ("self.assertEqual(score(0), 10, 'the centre')", "AssertionError: 1 != 10 : the centre", None),  # its own message
    ("self.assertEqual(10, score(0))", "AssertionError: 10 != 1", None),  # the call is not first
    ("self.assertEqual(pair(), 'a != b')", "AssertionError: 'x != y' != 'a != b'", None),  # splits more than one way
    ("self.assertEqual(score(0),", "AssertionError: 1 != 10", None),  # not a whole line
    ("assert score(0) == 10", "assert 1 == 10", None),
])
def test_restated_only_when_it_is_sure_which_side_is_which(source: str, error: str, said: str | None) -> None:
    assert restated(source, error) == said
