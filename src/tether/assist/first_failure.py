"""The first failing test of a test run's output, said in two lines: the line that failed and
its error.

A small model that answers a failing check with its unchanged code again is at a fixed point:
it copies its last reply. What it lacks is one concrete case to think through, not the
whole output once more. pytest (any `--tb` style that shows code) and unittest name the
failing line and the error in their own shapes; both are read here, and anything else gives
nothing (the caller then asks without a case).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PYTEST_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$", re.M)
"""pytest's banner before each failure: `____ TestClass.test_name ____`."""
_UNITTEST_HEAD = re.compile(r"^(?:FAIL|ERROR): (\S+)", re.M)
_UNITTEST_FRAME = re.compile(r'^  File "[^"]*", line \d+, in \S+\n    (.+)$', re.M)
_ERROR_LINE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit)\b.*)$", re.M)
_MARKERS = re.compile(r"^\s*[\^~]+\s*$")
"""Python 3.11's `^^^^` under the part of a line that raised: no code."""
MAX_CHARS = 200
"""Each line at most this long (a list the test expects can be long)."""


@dataclass(frozen=True)
class FirstFailure:
    test: str
    """The failing test's name."""
    lines: tuple[str, ...]
    """The test's line that failed (its assertion, with the input), then, when the error came
    from the code it called, the line there that raised."""
    error: str
    """The error, first line only (`AssertionError: True is not False`)."""


def first_failure(output: str) -> FirstFailure | None:
    """The first failure in a pytest or unittest run's `output`; None when none is found."""
    return _pytest_failure(output) or _unittest_failure(output)


def _pytest_failure(output: str) -> FirstFailure | None:
    banners = list(_PYTEST_SECTION.finditer(output))
    for at, banner in enumerate(banners):
        end = banners[at + 1].start() if at + 1 < len(banners) else len(output)
        body = output[banner.end():end]
        error = next((line[1:].strip() for line in body.splitlines() if line.startswith("E ")), "")
        code = _failed_lines(body.splitlines())
        if error and code:
            return FirstFailure(_clip(banner.group(1)), _ends(code), _clip(error))
    return None


def _failed_lines(lines: list[str]) -> list[str]:
    """The source lines a failure's traceback marks: `>` in pytest's long style (the rest of
    each function is shown too), else the line under each frame (`--tb=short`)."""
    marked = [line[1:].strip() for line in lines if line.startswith(">")]
    return marked or [line.strip() for line in lines
                      if line.startswith("    ") and line.strip() and not _MARKERS.match(line)]


def _ends(code: list[str]) -> tuple[str, ...]:
    """The first line (the test's) and the last (where it raised), once when they are one."""
    first, last = _clip(code[0]), _clip(code[-1])
    return (first,) if first == last else (first, last)


def _unittest_failure(output: str) -> FirstFailure | None:
    head = _UNITTEST_HEAD.search(output)
    if head is None:
        return None
    following = _UNITTEST_HEAD.search(output, head.end())
    rest = output[head.end():following.start() if following else len(output)]
    frames = list(_UNITTEST_FRAME.finditer(rest))
    error = _ERROR_LINE.search(rest, frames[-1].end()) if frames else None
    if error is None:
        return None
    code = [frame.group(1).strip() for frame in frames]
    return FirstFailure(_clip(head.group(1)), _ends(code), _clip(error.group(1)))


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + " …"
