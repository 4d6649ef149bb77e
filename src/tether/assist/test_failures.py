"""A failing pytest run told in short: each failing test's lines and what went wrong.

The check after a change shows the model its command's output. pytest's `--tb=short` output
of a run with many failures is mostly repetition: a banner per test, the same assertion
shape again and again, then the "short test summary info" naming every failure a second
time with its message cut off. Its last 40 lines (what the model was shown) held a few
failures and that summary; the first failures, where the tests begin, were left out.

`digest` keeps what a fix needs: per failing test (the first FULL_FAILURES in full, the rest
by name) the lines the traceback shows (the test's own line, and the code's lines when the
error came from inside it) and the error lines. A unittest comparison whose first argument is
a call (`self.assertEqual(score(0, 0), 10)` with `1 != 10`) is said as what the call returned
against what the test expects, since `1 != 10` does not say which side is which. Output it cannot read whole (a collection error, another runner) gets None: the caller
shows the output's end as before.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

FULL_FAILURES = 6
"""Failing tests shown with their lines; the rest are named."""
ERROR_LINES = 6
"""Error lines kept per failure (an assertion's diff can run to dozens)."""
NAMED_CHARS = 600
"""The most characters of names for the failures not shown in full."""
LINE_CHARS = 300

SUMMARY_TITLE = "short test summary info"
_BANNER = re.compile(r"^={3,} ?(.*?) ?={3,}$")
_SECTION = re.compile(r"^_+ (.+?) _+$")
_FRAME = re.compile(r"^(\S.*?:\d+): in (\S+)$")
_CAPTURED = re.compile(r"^-{3,} ?Captured .* ?-{3,}$")
_MARKERS = re.compile(r"^\s+[\^~]+\s*$")
_SUMMARY_ENTRY = re.compile(r"^(?:FAILED|ERROR) \S")
_COMPARED = {
    # unittest's messages: "first != second", "first is not second", "x is not true" ...
    "assertEqual": re.compile(r"AssertionError: (?P<got>.+?) != (?P<want>.+)"),
    "assertAlmostEqual": re.compile(r"AssertionError: (?P<got>.+?) != (?P<want>.+?) within .*"),
    "assertIs": re.compile(r"AssertionError: (?P<got>.+?) is not (?P<want>.+)"),
    "assertTrue": re.compile(r"AssertionError: (?P<got>.+?) is not true"),
    "assertFalse": re.compile(r"AssertionError: (?P<got>.+?) is not false"),
    "assertIsNone": re.compile(r"AssertionError: (?P<got>.+?) is not None"),
}
_WANTED = {"assertTrue": "a true value", "assertFalse": "a false value", "assertIsNone": "None"}
_ONE_SIDE = ("!=", " is not ")


@dataclass(frozen=True)
class Frame:
    where: str
    """"file.py:12"."""
    lines: tuple[str, ...]
    """The source lines the traceback shows there."""


@dataclass(frozen=True)
class Failure:
    test: str
    frames: tuple[Frame, ...]
    errors: tuple[str, ...]
    """The `E` lines, without their prefix."""


def digest(output: str) -> str | None:
    """`output` (a run of pytest with `--tb=short`, as run_cmd shows it) told in short; None
    when it is not that or not all of it could be read."""
    lines = output.rstrip().splitlines()
    banners = [(i, found.group(1)) for i, line in enumerate(lines) if (found := _BANNER.match(line))]
    titles = [title for _, title in banners]
    if "FAILURES" not in titles or "ERRORS" in titles:
        return None  # a collection error: its own lines say more than a digest would
    at = titles.index("FAILURES")
    begin, end = banners[at][0], banners[at + 1][0] if at + 1 < len(banners) else len(lines)
    failures = _failures(lines[begin + 1:end])
    if not failures:
        return None
    head = [lines[0]] if lines[0].startswith("$ ") else []
    return "\n".join([*head, *_told(failures), *_after_summary(lines[end:])])


def _failures(lines: list[str]) -> list[Failure] | None:
    sections: list[tuple[str, list[str]]] = []
    for line in lines:
        section = _SECTION.match(line)
        if section:
            sections.append((section.group(1), []))
        elif not sections:
            return None  # something before the first test's banner: not the shape read here
        else:
            sections[-1][1].append(line)
    found = [_failure(name, body) for name, body in sections]
    return None if any(f is None for f in found) else [f for f in found if f is not None]


def _failure(name: str, body: list[str]) -> Failure | None:
    frames: list[Frame] = []
    errors: list[str] = []
    for line in body:
        if _CAPTURED.match(line):
            break  # what the test printed: not the failure
        frame = _FRAME.match(line)
        if frame:
            frames.append(Frame(frame.group(1), ()))
        elif line.startswith("E ") or line == "E":
            if line[1:].strip():
                errors.append(line[1:].strip())
        elif _MARKERS.match(line):
            continue  # Python's ^^^ under the part of a line that failed: no use unaligned
        elif line.startswith("    ") and frames:
            last = frames[-1]
            frames[-1] = Frame(last.where, (*last.lines, line.strip()))
        elif line.strip():
            return None  # a traceback style this does not read (long, native): show it as it is
    if not frames or not errors:
        return None
    return Failure(_short_name(name), tuple(frames), tuple(errors))


def _short_name(name: str) -> str:
    """`DartsTest.test_center` -> `test_center`; a parametrized test keeps its parameters."""
    test, bracket, parameters = name.partition("[")
    return test.rsplit(".", 1)[-1] + bracket + parameters


def _told(failures: list[Failure]) -> list[str]:
    out = ["(the failing tests in short: each one's lines, then what went wrong)"]
    for failure in failures[:FULL_FAILURES]:
        out.append(_cut(f"FAILED {failure.test} ({failure.frames[0].where})"))
        for number, frame in enumerate(failure.frames):
            if number:
                out.append(_cut(f"  in {frame.where}:"))
            out.extend(_cut(f"    {line}") for line in frame.lines)
        out.extend(_cut(f"    {line}") for line in _what_went_wrong(failure))
    rest = failures[FULL_FAILURES:]
    if rest:
        names = ", ".join(failure.test for failure in rest)
        if len(names) > NAMED_CHARS:
            names = names[:NAMED_CHARS].rsplit(", ", 1)[0] + ", …"
        out.append(f"({len(rest)} more failing: {names})")
    return out


def _what_went_wrong(failure: Failure) -> tuple[str, ...]:
    if len(failure.frames) == 1 and len(failure.errors) == 1 and failure.frames[0].lines:
        said = restated(failure.frames[0].lines[-1], failure.errors[0])
        if said:
            return (said,)
    kept = failure.errors[:ERROR_LINES]
    if len(failure.errors) > ERROR_LINES:
        kept = (*kept, f"(… {len(failure.errors) - ERROR_LINES} more lines)")
    return kept


def restated(source: str, error: str) -> str | None:
    """`self.assertEqual(score(0, 0), 10)` failing with `AssertionError: 1 != 10` said as
    "score(0, 0) returned 1; the test expects 10"; None unless the line is one such unittest
    comparison (no message of its own) of a call's result and the error splits one way only."""
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _COMPARED and node.args and not node.keywords):
        return None
    method = node.func.attr
    wanted_args = 1 if method in _WANTED else 2
    if len(node.args) != wanted_args or not isinstance(node.args[0], ast.Call):
        return None  # "returned" is said of a call only
    found = _COMPARED[method].fullmatch(error)
    if found is None or sum(error.count(side) for side in _ONE_SIDE) != 1:
        return None
    want = _WANTED.get(method) or found.group("want")
    return f"{ast.unparse(node.args[0])} returned {found.group('got')}; the test expects {want}"


def _after_summary(lines: list[str]) -> list[str]:
    """What follows the failures (pytest's counts, the exit code line), less pytest's
    summary of them, which names every failure a second time."""
    kept = []
    for line in lines:
        banner = _BANNER.match(line)
        if (banner and banner.group(1) == SUMMARY_TITLE) or _SUMMARY_ENTRY.match(line) or not line.strip():
            continue
        kept.append(_cut(banner.group(1) if banner else line))
    return kept


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …"
