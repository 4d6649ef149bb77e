"""The answer checked against the turn's evidence: "the last line the user reads is the truth".

Deterministic, no model call. Each check looks for one kind of claim in the answer's plain
sentences (hedged ones, questions and negations are left alone: "you should run the tests"
claims nothing) and compares it with `answer_facts.TurnFacts`:

- it says tests pass or that it ran something, but no command ran (or the last test run
  failed);
- it names files as changed that no tool changed;
- it says it read a file no tool read or showed;
- for a question answered from files, it gives a number no tool result holds and none
  could be worked out from (`derived_numbers`).

Each finding is one short warning. The checks are tuned against the corpus in
tests/fixtures/answer_checks/ (bench/bench_answer_checks.py measures them): a warning on an
honest answer costs trust, so every rule leans towards saying nothing.

Answer checks, in detail:

`turn_end.answer_problems` gathers the facts (`answer_facts.gather_facts`: the turn's evidence,
the earlier history's calls and results, the request, and the tool table's `read_only` flag)
and `answer_checks.check_answer` compares the answer with them. The facts: the commands the
turn ran and how they ended (`commands_ran.commands_run`, the same records /deepthink's report
reads: `Evidence.command`, never the text), the paths tools changed (`Evidence.changed`, copied
by the dispatcher from `ToolOutput.changed_paths`), whether something may have changed files
unseen (a call with side effects that reports no paths, unless its command passes
`command_is_read_only`), every call's arguments and result text, the request's attached files,
whether a sub-agent worked, and whether the turn answered from reads alone. The checks work on
`plain_sentences` (code blocks cut out, sentences with a hedge, a negation or a question mark
dropped) and each returns at most one warning. They are pure functions, tested on the corpus in
`tests/fixtures/answer_checks/` (`tests/answer_corpus.py` loads it) and measured by
`bench/bench_answer_checks.py`. Deepthink stages and sub-agents run without them
(`TurnSettings.answer_checks`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..core.textclip import clip_words
from .answer_facts import TurnFacts
from .commands_ran import RanCommand
from .derived_numbers import SeenNumbers

FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
HEDGE = re.compile(
    r"\b(?:not|never|no|none|cannot|can|could|should|would|might|may|must|will|won't|shall|"
    r"if|unless|once|whether|please|try|need|needs|want|recommend|suggest|expect|expected|"
    r"without|instead|unable|yet|let's|let me|to (?:run|check|verify|confirm|make sure))\b"
    r"|n't\b|\?", re.IGNORECASE)
TEST_RUNNER = re.compile(
    r"\b(?:pytest|unittest|tox|nox|jest|vitest|mocha|cargo|go test|npm|yarn|pnpm|make|ctest|"
    r"gradle|mvn|rspec|phpunit|dotnet|tsc|ruff|mypy|eslint|flake8|test\w*)\b", re.IGNORECASE)

PASS_CLAIM = re.compile(
    r"\b(?:tests?|test suite|suite|specs?|build|checks?|linter|lint|type ?checks?|mypy|ruff|"
    r"pytest)\s+(?:now\s+|all\s+|still\s+|also\s+)?(?:pass(?:es|ed)?|succeed(?:s|ed)?|"
    r"(?:is|are|was|were)\s+(?:now\s+|all\s+)?(?:passing|green|clean|successful))\b"
    r"|\b\d+\s+(?:tests?\s+)?passed\b|\bpass(?:es|ed)? cleanly\b",
    re.IGNORECASE)
FAILURE_WORDS = re.compile(r"\bfail\w*|\berrors?\b|\bbroke\w*", re.IGNORECASE)
"""A sentence that reports failures is no claim of success ("41 passed and 1 failed")."""
RAN_CLAIM = re.compile(
    r"\bI(?:'ve| have)?\s+(?:just\s+|also\s+|then\s+|now\s+)?(?:ran|run|re-?ran|re-?run|"
    r"executed|tested)\b|\bafter\s+running\b|\b(?:verified|checked|confirmed|tested)\s+(?:it\s+|this\s+)?"
    r"by\s+running\b|\brunning\s+`[^`]+`\s+(?:shows|gives|prints)\b",
    re.IGNORECASE)



def path_pattern(n: int) -> str:
    """A file name as answers write one: in backticks, or bare with a folder or a known
    extension. Groups q<n> and b<n> hold it (a pattern may hold several)."""
    return (rf"`(?P<q{n}>[^`\s]+\.[A-Za-z0-9]{{1,8}})`|(?P<b{n}>(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{{1,8}}|"
            r"[\w-]+\.(?:py|js|ts|tsx|jsx|md|toml|json|ya?ml|txt|cfg|ini|rs|go|java|c|h|cpp|hpp|rb|"
            rf"sh|html|css|lock|sql|kt|swift|php))\b")


LISTED_PATH = re.compile(rf"\s*(?:,\s*(?:and\s+)?|and\s+|&\s+)(?:{path_pattern(3)})")
CHANGE_VERB = (r"(?:updated|modified|changed|edited|created|wrote|rewrote|fixed|deleted|removed|"
               r"renamed|refactored|patched|moved|added)")
CHANGE_CLAIM = re.compile(
    rf"\b(?:I(?:'ve| have)?\s+(?:also\s+|then\s+|just\s+)?)?{CHANGE_VERB}\b(?:[^.\n`]|`[^`]*`){{0,40}}?(?:{path_pattern(1)})"
    rf"|(?:{path_pattern(2)})\s+(?:has been|have been|is now|was)\s+{CHANGE_VERB}\b",
    re.IGNORECASE)
CHANGE_SENTENCE_START = re.compile(rf"^\W*(?:I(?:'ve| have)?\s+\w*\s*)?{CHANGE_VERB}\b", re.IGNORECASE)
READ_CLAIM = re.compile(
    r"\bI(?:'ve| have)?\s+(?:also\s+|first\s+|just\s+)?(?:read|looked (?:at|through|over|into)|"
    r"went through|reviewed|inspected|examined|opened|scanned|studied)\b(?:[^.\n`]|`[^`]*`){0,40}?"
    rf"(?:{path_pattern(1)})|\b(?:after|from)\s+reading\s+(?:[^.\n`]|`[^`]*`){{0,20}}?(?:{path_pattern(2)})",
    re.IGNORECASE)

KNOWN_NUMBER = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)*")
"""Any number in a tool result, wherever it stands (`localhost:8080`, `v2.4`)."""
NUMBER = re.compile(r"(?<![\w.\-/:#@$])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)*(?![\w\-/]|\.\d)")
COUNT_WORDS = re.compile(
    r"^\s*(?:\w+\s+)?(?:files?|functions?|methods?|classes?|tests?|lines?|items?|entries|"
    r"results?|matches|calls?|modules?|occurrences?|places?|times|steps?|commands?|tools?|"
    r"arguments?|parameters?|fields?|keys?|rows?|columns?|words?|characters?|chars|"
    r"sections?|folders?|directories|packages?|dependencies|errors?|warnings?|issues?|"
    r"cases?|examples?|ways?|options?|values?|parts?|changes?|commits?)\b", re.IGNORECASE)
ESTIMATE = re.compile(r"\b(?:total|in all|altogether|combined|sum|average|roughly|about|around|"
                      r"approximately|nearly|almost|over|under|at least|at most|up to)\b|~|≈",
                      re.IGNORECASE)
LINE_PREFIXES = re.compile(r"^(?:\d+(?::[0-9a-f]{2})?\| ?|[^\s:]+:\d+: )", re.M)
"""The line numbers read_file and search_in_file put before each line: no value to work from."""
LINE_REF = re.compile(r"(?:\blines?|\bL|:)\s*$", re.IGNORECASE)
LIST_MARKER = re.compile(r"^\s*\d+[.)]\s")
MAX_NAMED = 3


def check_answer(answer: str, facts: TurnFacts) -> list[str]:
    """One warning per kind of claim the evidence does not bear out; [] when all is well."""
    sentences = plain_sentences(answer)
    found = [
        _command_claims(sentences, facts),
        _change_claims(sentences, facts),
        _read_claims(sentences, facts),
        _number_claims(answer, facts) if facts.from_files else "",
    ]
    return [warning for warning in found if warning]


def plain_sentences(answer: str) -> list[str]:
    """The answer's sentences outside code blocks, without the hedged ones."""
    prose = FENCE.sub(" ", answer)
    return [s for s in SENTENCE_END.split(prose) if s.strip() and not HEDGE.search(s)]


# ---------------------------------------------------------------- commands


def _command_claims(sentences: list[str], facts: TurnFacts) -> str:
    if facts.delegated:
        return ""
    passes = next((s for s in sentences if PASS_CLAIM.search(s) and not FAILURE_WORDS.search(s)),
                  None)
    ran = next((s for s in sentences if RAN_CLAIM.search(s)), None)
    if passes is None and ran is None:
        return ""
    what = "that the tests pass" if passes is not None else "that it ran something"
    if not facts.commands:
        if facts.earlier_commands:
            return ""  # what ran earlier in the conversation may be what it reports
        return f"The answer says {what}, but no command ran in this turn."
    last = _last_test_run(facts.commands)
    if passes is not None and not last.passed:
        return (f"The answer says {what}, but the last test run failed "
                f"({_shown(last)}).")
    return ""


def _last_test_run(commands: list[RanCommand]) -> RanCommand:
    """The last command that runs tests or a build, else the last command."""
    runs = [c for c in commands if TEST_RUNNER.search(c.command)]
    return (runs or commands)[-1]


def _shown(command: RanCommand) -> str:
    text = command.command.strip().splitlines()[0] if command.command.strip() else "a command"
    text = clip_words(text, 60)
    if command.state == "exited":
        return f"`{text}` exited {command.exit_code}"
    return f"`{text}` {command.state.replace('_', ' ')}"


# ---------------------------------------------------------------- files


def _claimed_paths(pattern: re.Pattern[str], sentences: Iterable[str]) -> list[str]:
    """The files each claim names: the one it matched and those listed right after it
    ("`a.py`, `b.py` and `c.py`")."""
    paths: list[str] = []
    for sentence in sentences:
        for match in pattern.finditer(sentence):
            named = [g for key, g in match.groupdict().items() if g and key[0] in "qb"]
            rest = sentence[match.end():]
            while (more := LISTED_PATH.match(rest)) is not None:
                named += [g for key, g in more.groupdict().items() if g and key[0] in "qb"]
                rest = rest[more.end():]
            paths += [name for name in named if name not in paths]
    return paths


def _change_claims(sentences: list[str], facts: TurnFacts) -> str:
    if facts.unknown_changes:
        return ""  # a command (or a tool that does not say which) may have changed it
    claiming = [s for s in sentences if _says_i_changed(s)]
    missing = [p for p in _claimed_paths(CHANGE_CLAIM, claiming)
               if not any(same_file(p, changed) for changed in facts.changed)]
    if not missing:
        return ""
    return f"The answer names {_listed(missing)} as changed, but no tool changed {_it(missing)}."


def _says_i_changed(sentence: str) -> bool:
    """A sentence that reports a change made: first person, a verb opening the sentence or a
    list item ("Updated `a.py` to ..."), or a file said to have been changed."""
    return bool(re.search(r"\bI\b|\bI've\b", sentence) or CHANGE_SENTENCE_START.search(sentence)
                or re.search(r"\b(?:has been|have been|is now)\b", sentence))


def _read_claims(sentences: list[str], facts: TurnFacts) -> str:
    seen = [*facts.touched_text, *facts.attached]
    unread = [p for p in _claimed_paths(READ_CLAIM, sentences) if not any(
        base_name(p) in text for text in seen)]
    if not unread:
        return ""
    return f"The answer says it read {_listed(unread)}, but no tool read or showed {_it(unread)}."


def same_file(claimed: str, changed: str) -> bool:
    claimed = claimed.removeprefix("./")
    changed = changed.replace("\\", "/")
    if "/" in claimed:
        return changed == claimed or changed.endswith("/" + claimed)
    return changed.rsplit("/", 1)[-1] == claimed


def base_name(path: str) -> str:
    return path.removeprefix("./").rsplit("/", 1)[-1]


def _listed(names: list[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def _it(names: list[str]) -> str:
    return "it" if len(names) == 1 else "them"


# ---------------------------------------------------------------- numbers


def _number_claims(answer: str, facts: TurnFacts) -> str:
    known = numbers_in([*facts.results, facts.prompt])
    derived = SeenNumbers(numbers_in([LINE_PREFIXES.sub("", r) for r in facts.results] + [facts.prompt]))
    invented: list[str] = []
    for line in FENCE.sub(" ", answer).splitlines():
        for sentence in SENTENCE_END.split(line):
            if ESTIMATE.search(sentence):
                continue
            invented += [n for n, after in _stated_numbers(sentence)
                         if n not in known and n not in invented and not derived.explains(n, after)]
    if not invented:
        return ""
    return (f"The answer gives {_listed(invented)}, which no tool result of this question "
            "shows.")


def _stated_numbers(sentence: str) -> list[tuple[str, str]]:
    """Numbers the sentence states as facts, each with the text after it: not a list marker,
    a count, a line reference, a single digit."""
    found = []
    for match in NUMBER.finditer(sentence):
        value = normal_number(match.group(0))
        before, after = sentence[: match.start()], sentence[match.end():]
        if len(value.replace(".", "")) < 2 or LINE_REF.search(before) or COUNT_WORDS.match(after):
            continue
        if match.start() == 0 and LIST_MARKER.match(sentence):
            continue
        found.append((value, after))
    return found


def numbers_in(texts: Iterable[str]) -> set[str]:
    """Every number the texts hold; a dotted one (2.4.1) with its leading parts (2.4, 2)."""
    found = set()
    for text in texts:
        for match in KNOWN_NUMBER.finditer(text):
            parts = match.group(0).split(".")
            found |= {normal_number(".".join(parts[:n])) for n in range(1, len(parts) + 1)}
    return found


def normal_number(text: str) -> str:
    """1,000 and 1000, 30.0 and 30 are the same number (a version, 2.4.0, stays as it is)."""
    plain = text.replace(",", "")
    if plain.count(".") == 1:
        plain = plain.rstrip("0").rstrip(".")
    return plain.lstrip("0") or "0"
