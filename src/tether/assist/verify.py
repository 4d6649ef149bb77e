"""Verify after a change: the harness runs the check the request names and gives a failure back.

When the request names a check (a test command, a test file, a script it asks to run), or
asks for a change in a project with an obvious test command, and the turn changed files,
a reply that would end the turn makes the harness run that check itself: as a `run_cmd` call
through the dispatcher, so approval, the deny rules, the sandbox, the hooks and the evidence
apply as to any call of the model's. A failure goes back to the model (the command, its exit
code, the end of its output) with a request to fix the code, at most `attempts` times; the
answer then ends with a line saying whether the check passed or still fails. A test run that
ran no test is a failure, not a pass.
"""

from __future__ import annotations

import ast
import asyncio
import re
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.messages import Evidence, ToolCall, ToolResult, new_call_id
from ..engine.commands_ran import RanCommand, commands_run
from ..engine.dispatch import first_line
from ..engine.turn_assist import GateVerdict
from ..host import NotARegularFile, TooLarge, host_program, is_within, read_small_file, resolve_path
from .first_failure import first_failure
from .reply_shapes import is_test_path
from .request import RequestReading, test_runner_named

OUTPUT_LINES = 40
"""Lines of a failed check's output sent back: the end, where the tests' assertions are."""
LINE_CHARS = 300
CHECK_ID = "check"
"""How the harness's own calls' ids begin, so the evidence tells them from the model's."""

CHECK_FAILED = (
    "The harness ran this request's check after your change, and it fails:\n"
    "$ {command}\n{how}\n{output}\n"
    "Fix the code (not the tests) so that the check passes, then answer."
)
CHECK_FAILS_AS_SHOWN = (
    "The check above still fails ({how}): `{command}`. Nothing changed since. Fix the code "
    "(not the tests) so that it passes, then answer."
)
"""Said instead of CHECK_FAILED when its output is in the history already (the check after
each change showed it): the same lines again are only more prefill."""
CHECK_STUCK = (
    "The check above still fails ({how}): `{command}`, and your reply left the code as it was: "
    "the same code again will not pass.\n{case}\nGo through your code step by step with that "
    "input: say what each line gives, and where the result first differs from what the test "
    "expects. Then send the call that fixes the code (not the tests)."
)
"""Said instead of CHECK_FAILS_AS_SHOWN with the `trace` lever: a model at a fixed point
copies its last reply; one concrete case to think through can move it."""
STUCK_CASE = "The first failing test, {test}:\n{lines}\ngives {error}"
STUCK_NO_CASE = "Take the first failing test in the output above."
CHECK_PASSED = "Verified: `{command}` passed (exit 0)."
EACH_FAILED = (
    "Warning: the harness ran this check after your change, and it fails ({how}). If your "
    "change is not finished, go on with it. Otherwise fix the code (not the tests) so that it "
    "passes."
)
EACH_PASSED = "(The harness ran this check after your change: it passed.)"
FIRST_FAILED = (
    "(The harness ran the request's tests before any change: they fail ({how}). Read the "
    "failures above, then change the code they test.)"
)
FIRST_PASSED = "(The harness ran the request's tests before any change: they pass.)"
EACH_MAX = 8
"""The most checks run after changes in one turn (each runs the project's tests)."""
CHECK_STILL_FAILS = "Not fixed: `{command}` still fails ({how})."
CHECK_NOT_RUN = "Not verified: the check `{command}` was not run ({reason})."
NO_TEST_RAN = (
    "Note: no test ran. `{command}` runs {file} as a script, which only defines its tests "
    "(nothing in it runs them), so its exit 0 says nothing about them. Run them with "
    "`python3 -m pytest {file}` or `python3 -m unittest {module}`."
)
RAN_NO_TESTS = "it ran no tests"

_NO_TESTS = re.compile(r"\bno tests ran\b|\bRan 0 tests\b|\bcollected 0 items\b", re.I)
_TESTS_COUNTED = re.compile(r"\bRan [1-9]\d* tests?\b|\b[1-9]\d* (?:passed|failed)\b", re.I)
_PYTHON_TEST_RUNNERS = re.compile(r"\b(?:pytest|py\.test|unittest)\b")
_IMPORTS_PYTEST = re.compile(r"^\s*(?:import|from)\s+pytest\b", re.M)
_UNITTEST_STYLE = re.compile(r"^\s*(?:import|from)\s+unittest\b", re.M)
_SCRIPT_RUNNERS = {"py": "python3", "js": "node", "sh": "bash"}
_PYTEST_FOUND = "import importlib.util, sys; sys.exit(importlib.util.find_spec('pytest') is None)"
TEST_FILE_LIMIT = 256 * 1024
PYTEST = "-m pytest -q --tb=short --disable-warnings -W ignore::DeprecationWarning"
"""How a check runs pytest. `--disable-warnings`: the warnings summary (a plugin's deprecation
notice) fills the end of the output the model reads with what its change did not cause; the
1.5B model set out to fix one. `-W ignore::DeprecationWarning`: an installed plugin's notice
at start (pytest-asyncio's unset loop scope, seven lines), which the summary option leaves,
went to the model with every check and was read as the problem. The failures and the counts
are kept."""

Dispatch = Callable[[ToolCall], Awaitable[tuple[ToolResult, Evidence]]]


@dataclass(frozen=True)
class Check:
    """A command that tells whether the change worked."""

    command: str
    counts_tests: bool = False
    """It runs tests: a run that ran none fails."""
    must_show_tests: bool = False
    """It runs a test file directly (`python x_test.py`): only output that counts tests
    shows any ran."""


@dataclass(frozen=True)
class Outcome:
    check: Check
    evidence: Evidence
    ran: RanCommand | None
    """How the command ended; None when it never ran (refused, or it could not start)."""
    output: str
    failure: str = ""
    """Why it failed ("" when it passed)."""
    own: bool = False
    """The model's own run of the check after the last change, not run again: its result is
    in the history already, and running it again would only add its output a second time."""

    @property
    def passed(self) -> bool:
        return self.ran is not None and not self.failure


@dataclass
class ProjectPython:
    """How to run a project's Python tests, found without running project code."""

    root: Path
    python: str = "python3"
    _has_pytest: bool | None = None

    async def has_pytest(self) -> bool:
        """pytest is importable by the host's python (asked in isolated mode: no project
        file on the path, nothing of the project runs)."""
        if self._has_pytest is None:
            self._has_pytest = await asyncio.to_thread(self._ask_pytest)
        return self._has_pytest

    def _ask_pytest(self) -> bool:
        program = host_program(self.python, self.root)
        if program is None:
            return False
        try:
            done = subprocess.run([program, "-I", "-c", _PYTEST_FOUND], capture_output=True,
                                  timeout=20, cwd="/", check=False)
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0

    async def test_file_check(self, name: str) -> Check | None:
        """How to run the tests of one Python test file: pytest when it is importable or the
        file imports it, else unittest for a unittest-style file; None otherwise."""
        source = _file_text(self.root / name)
        if source is None:
            return None
        if _IMPORTS_PYTEST.search(source) or await self.has_pytest():
            return Check(f"{self.python} {PYTEST} {name}", counts_tests=True)
        if _UNITTEST_STYLE.search(source):
            return Check(f"{self.python} -m unittest {unittest_target(name)}", counts_tests=True)
        return None

    async def project_check(self, files: Sequence[str]) -> Check | None:
        """The project's obvious test command: its Python tests, when it has test files."""
        if not any(name.endswith(".py") and is_test_path(name) for name in files):
            return None
        if await self.has_pytest():
            return Check(f"{self.python} {PYTEST}", counts_tests=True)
        return Check(f"{self.python} -m unittest", counts_tests=True)


def unittest_target(name: str) -> str:
    """The module unittest loads for a test file (`tests/test_x.py` -> `tests.test_x`); the
    path itself when a part is no Python name (unittest takes a path too)."""
    parts = name.removesuffix(".py").split("/")
    return ".".join(parts) if all(part.isidentifier() for part in parts) else name


def _file_text(path: Path) -> str | None:
    try:
        return read_small_file(path, TEST_FILE_LIMIT).decode("utf-8", errors="replace")
    except (OSError, NotARegularFile, TooLarge):
        return None


def script_check(command: str, root: Path) -> Check | None:
    """A command the request asks to run whose program is a script of the project
    (`summary.py --year 2020`, `python summary.py`), run with its interpreter when named bare."""
    words = command.split()
    runner_first = words[0] in _SCRIPT_RUNNERS.values() or words[0] == "python"
    script = words[1] if runner_first and len(words) > 1 else words[0]
    if script.rsplit(".", 1)[-1] not in _SCRIPT_RUNNERS or not _project_file(script, root):
        return None
    if script == words[0]:
        command = f"{_SCRIPT_RUNNERS[script.rsplit('.', 1)[-1]]} {command}"
    direct_test = is_test_path(script)
    return Check(command, counts_tests=direct_test, must_show_tests=direct_test)


def _project_file(name: str, root: Path) -> bool:
    """`name` is a regular file inside the project (a link out of it is not)."""
    resolved = resolve_path(name, str(root))
    return is_within(resolved, resolve_path(".", str(root))) and Path(resolved).is_file()


async def checks_for(reading: RequestReading, root: Path, python: ProjectPython,
                     project_files: Callable[[], Sequence[str]], changed: Sequence[str]) -> list[Check]:
    """The checks the request names (its test commands, its Python test files, the project
    scripts it asks to run), else, for a change request that changed Python code (`changed`:
    the paths changed), the project's obvious test command (a count written to a text file
    is no reason to run the project's tests)."""
    checks = [Check(command, counts_tests=True, must_show_tests=not test_runner_named(command))
              for command in reading.test_commands]
    for name in reading.test_files:
        if name.endswith(".py") and not any(name in check.command for check in checks):
            found = await python.test_file_check(name)
            checks += [found] if found is not None else []
    if reading.run:
        for command in reading.commands:
            found = script_check(command, root) if command not in reading.test_commands else None
            checks += [found] if found is not None else []
    if not checks and reading.change and any(path.endswith(".py") for path in changed):
        found = await python.project_check(project_files())
        checks += [found] if found is not None else []
    return list(dict.fromkeys(checks))


def stuck_message(last: Outcome) -> str:
    """CHECK_STUCK for a check that still fails, with its first failing test when the output
    shows one."""
    found = first_failure(last.output)
    if found is None:
        case = STUCK_NO_CASE
    else:
        shown = "\n".join(f"    {line}" for line in found.lines)
        case = STUCK_CASE.format(test=found.test, lines=shown, error=found.error)
    return CHECK_STUCK.format(how=last.failure, command=last.check.command, case=case)


def failure_of(check: Check, ran: RanCommand | None, output: str) -> str:
    """Why the check failed ("" when it passed)."""
    if ran is None:
        return "it did not run"
    if ran.state != "exited":
        return {"timed_out": "it timed out", "waiting_for_input": "it waited for input"}.get(
            ran.state, "it was stopped before it finished")
    if check.counts_tests and _ran_no_tests(check, ran, output):
        return RAN_NO_TESTS
    return "" if ran.exit_code == 0 else f"exit {ran.exit_code}"


def _ran_no_tests(check: Check, ran: RanCommand, output: str) -> bool:
    if ran.exit_code == 5 and _PYTHON_TEST_RUNNERS.search(check.command):
        return True  # pytest's "no tests ran", and unittest's since Python 3.12
    if _NO_TESTS.search(output):
        return True
    return check.must_show_tests and not _TESTS_COUNTED.search(output)


def output_tail(text: str) -> str:
    """The last OUTPUT_LINES lines of a command's result, each cut at LINE_CHARS."""
    lines = text.rstrip().splitlines()[-OUTPUT_LINES:]
    return "\n".join(line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …" for line in lines)


@dataclass
class VerifyGate:
    """One turn's verification: runs the checks after a change, at most `attempts` fixes asked."""

    reading: RequestReading
    root: Path
    dispatch: Dispatch
    python: ProjectPython
    project_files: Callable[[], Sequence[str]]
    attempts: int
    each_change: bool = False
    """Also run the checks right after each change, their outcome sent with its result (as
    aider runs the tests after each edit): a small model otherwise claims a pass, runs the
    test file as a script, or ends with the fix shown in prose, before any check ran."""
    first: bool = False
    """Also run the tests the request names before the model's first reply, so it starts
    from their failures (as aider's /test puts them in the chat)."""
    trace: bool = False
    """A check still failing with the code unchanged asks the model to go through the first
    failing test's input (CHECK_STUCK) instead of only to fix it, and leaves its unchanged
    reply out of a terse history."""
    asked: int = 0
    """Fixes asked for so far."""
    ran_after_changes: int = 0
    passed_unsaid: str = ""
    """The commands of a pass found after a change, for the answer's last line."""
    seen: int = 0
    """Evidence records already looked at: a change after them calls for a check."""
    last: Outcome | None = None
    done: bool = False

    async def before_answer(self, evidence: Sequence[Evidence]) -> GateVerdict:
        changed = [path for record in evidence[self.seen:] for path in record.changed_paths]
        self.seen = len(evidence)
        if self.done or not changed:
            return self._unchanged()
        outcomes = await self._check(changed, evidence)
        return self._verdict(outcomes) if outcomes else GateVerdict()

    async def _check(self, changed: Sequence[str], evidence: Sequence[Evidence]) -> list[Outcome]:
        """The checks for a turn that changed `changed`, run in order up to the first that
        fails (a check the model itself ran after its last change is not run again); none
        (and no more checking this turn) when the request names none."""
        checks = await checks_for(self.reading, self.root, self.python, self.project_files, changed)
        if not checks:
            self.done = True
            return []
        outcomes = await self._run(checks, own_runs_since_change(evidence))
        self.seen += len(_made(outcomes))
        return outcomes

    async def before_start(self) -> GateVerdict:
        """With `first`, for a change request: the tests it names (its test commands and test
        files; never a script it asks to run, whose output may be the answer), run before any
        change; the loop shows them as calls with their results, the note after them."""
        if not self.first or not self.reading.change or self.reading.asks_question:
            return GateVerdict()
        checks = [check for check in await checks_for(self.reading, self.root, self.python, self.project_files, ())
                  if check.counts_tests]
        if not checks:
            return GateVerdict()
        outcomes = await self._run(checks, {})
        last = outcomes[-1]
        note = FIRST_PASSED if last.passed else FIRST_FAILED.format(how=last.failure)
        return _shown_verdict(outcomes, note)

    def passed(self) -> bool:
        return bool(self.passed_unsaid)

    async def checks_change(self, path: str) -> bool:
        """With `each_change`, while checks after changes may still run: whether the request
        names a check for a change of `path` (or, naming none, whether a Python change calls
        for the project's tests: only the path's suffix counts)."""
        if not self.each_change or self.done or self.ran_after_changes >= EACH_MAX:
            return False
        return bool(await checks_for(self.reading, self.root, self.python, self.project_files, [path]))

    async def after_calls(self, evidence: Sequence[Evidence]) -> GateVerdict:
        """With `each_change`: the checks run right after calls that changed files; the loop
        shows them to the model as calls with their results, the note (what the outcome
        means) after the last (nothing asked, nothing counted as a fix)."""
        if not self.each_change or self.done or self.ran_after_changes >= EACH_MAX:
            return GateVerdict()
        changed = [path for record in evidence[self.seen:] for path in record.changed_paths]
        if not changed:
            return GateVerdict()
        self.seen = len(evidence)
        outcomes = await self._check(changed, evidence)
        if not outcomes:
            return GateVerdict()
        self.ran_after_changes += 1
        last = self.last = outcomes[-1]
        if last.ran is None:
            self.done = True
            return _shown_verdict(outcomes, _not_run(last))
        if last.passed:
            self.passed_unsaid = _commands(outcomes)
            return _shown_verdict(outcomes, EACH_PASSED)
        self.passed_unsaid = ""
        return _shown_verdict(outcomes, EACH_FAILED.format(how=last.failure))

    def _unchanged(self) -> GateVerdict:
        """No change since the last check: a failure stands. Found after a change (the
        model has not been asked to fix it yet), it goes back once more; otherwise it is
        said again at the end."""
        if self.passed_unsaid:
            shown, self.passed_unsaid = self.passed_unsaid, ""
            return GateVerdict(note=CHECK_PASSED.format(command=shown))
        if self.last is None or self.last.passed or self.done:
            return GateVerdict()
        if self.each_change and self.asked < self.attempts and self.last.ran is not None:
            self.asked += 1
            if self.trace:
                return GateVerdict(again=stuck_message(self.last), said_before=True, drop_reply=True)
            again = CHECK_FAILS_AS_SHOWN.format(how=self.last.failure, command=self.last.check.command)
            return GateVerdict(again=again, said_before=True)
        self.done = True
        return GateVerdict(note=self._still_fails(self.last))

    async def _run(self, checks: list[Check], own: dict[str, Evidence]) -> list[Outcome]:
        outcomes = []
        for check in checks:  # in order; the first that fails is the one sent back
            record = own.get(_same_command(check.command))
            outcome = _own_outcome(check, record) if record is not None else await self._run_one(check)
            outcomes.append(outcome)
            if not outcome.passed:
                break
        return outcomes

    async def _run_one(self, check: Check) -> Outcome:
        call = ToolCall(f"{CHECK_ID}_{new_call_id()}", "run_cmd", {"command": check.command})
        result, evidence = await self.dispatch(call)
        ran = next(iter(commands_run([evidence])), None)
        if ran is not None and ran.state == "waiting_for_input" and ran.session:
            await self.dispatch(ToolCall(f"{CHECK_ID}_{new_call_id()}", "end_process",
                                         {"session": ran.session}))
        output = result.content
        return Outcome(check, evidence, ran, output, failure_of(check, ran, output))

    def _verdict(self, outcomes: list[Outcome]) -> GateVerdict:
        self.passed_unsaid = ""
        evidence = _made(outcomes)
        last = self.last = outcomes[-1]
        if last.ran is None:  # refused (no approval, a deny rule) or could not start
            self.done = True
            return GateVerdict(note=_not_run(last), evidence=evidence)
        if last.passed:
            return GateVerdict(note=CHECK_PASSED.format(command=_commands(outcomes)), evidence=evidence)
        if self.asked >= self.attempts:
            self.done = True
            return GateVerdict(note=self._still_fails(last), evidence=evidence)
        self.asked += 1
        return GateVerdict(again=_failure_message(CHECK_FAILED, last), evidence=evidence)

    def _still_fails(self, outcome: Outcome) -> str:
        tries = f"after {self.asked} attempt{'s' if self.asked != 1 else ''} to fix it"
        return CHECK_STILL_FAILS.format(command=outcome.check.command, how=f"{outcome.failure}, {tries}")


def _not_run(outcome: Outcome) -> str:
    reason = first_line(outcome.output, 160) or "refused"
    return CHECK_NOT_RUN.format(command=outcome.check.command, reason=reason)


def _commands(outcomes: Sequence[Outcome]) -> str:
    return "`, `".join(outcome.check.command for outcome in outcomes)


def _shown_verdict(outcomes: Sequence[Outcome], note: str) -> GateVerdict:
    """The checks run, shown to the model as calls whose results are their outputs' ends (a
    whole failing test file's output, thousands of tokens, is prefill a small model waits
    for and reads past), and `note` after them (the model's own runs are shown already)."""
    made = [outcome for outcome in outcomes if not outcome.own]
    shown = tuple(shown_output(outcome.output) for outcome in made)
    return GateVerdict(note=note, evidence=_made(made), shown=shown)


def _made(outcomes: Sequence[Outcome]) -> tuple[Evidence, ...]:
    """The calls the gate made for these outcomes (not the model's own runs it reused)."""
    return tuple(outcome.evidence for outcome in outcomes if not outcome.own)


def _same_command(command: str) -> str:
    return " ".join(command.split())


def own_runs_since_change(evidence: Sequence[Evidence]) -> dict[str, Evidence]:
    """The commands the model ran to the end after the last call that changed a file (by
    their text, spaces evened out), each its latest run; none when no change came before."""
    last_change = max((i for i, record in enumerate(evidence) if record.changed_paths), default=None)
    if last_change is None:
        return {}
    return {_same_command(str(record.call.arguments.get("command", ""))): record
            for record in evidence[last_change + 1:]
            if record.call.name == "run_cmd" and not record.call.id.startswith(CHECK_ID)
            and record.command is not None and record.command.state == "exited"}


def _own_outcome(check: Check, record: Evidence) -> Outcome:
    ran = next(iter(commands_run([record])), None)
    return Outcome(check, record, ran, record.result, failure_of(check, ran, record.result), own=True)


def shown_output(text: str) -> str:
    """`output_tail`, saying how many lines it left out before it."""
    lines = text.rstrip().splitlines()
    left_out = len(lines) - OUTPUT_LINES
    tail = output_tail(text)
    return f"({left_out} earlier lines left out)\n{tail}" if left_out > 0 else tail


def _failure_message(template: str, outcome: Outcome) -> str:
    how = f"It failed: {outcome.failure}."
    output = output_tail(outcome.output)
    return template.format(command=outcome.check.command, how=how, output=output)


_RUNS_AT_TOP = (ast.Expr, ast.Assert, ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.Try)


def only_defines_tests(source: str) -> bool:
    """A Python test file that defines tests (`def test_...`, `class AddTest...`) and runs
    nothing when run as a script: no `if __name__ == "__main__":`, no top-level assert or
    call (a docstring aside)."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError):
        return False
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    defines = any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and "test" in node.name.lower() for node in body)
    return defines and not any(isinstance(node, _RUNS_AT_TOP) for node in body)


def no_tests_note(record: Evidence, root: Path) -> str:
    """NO_TEST_RAN when `record` is a run_cmd of a project test file run directly (`python
    x_test.py`) that ended well and showed no test run; "" otherwise. A small model reads the
    quiet exit 0 as its tests passing."""
    command = str(record.call.arguments.get("command") or "") if record.call.name == "run_cmd" else ""
    check = script_check(command, root) if command.strip() else None
    ran = next(iter(commands_run([record])), None)
    if check is None or not check.must_show_tests or ran is None or ran.exit_code != 0:
        return ""
    if failure_of(check, ran, record.result) != RAN_NO_TESTS:
        return ""
    script = next(word for word in command.split() if is_test_path(word))
    source = _file_text(root / script) if script.endswith(".py") else None
    if source is None or not only_defines_tests(source):
        return ""  # a shell or node test, or one that runs its own checks: what ran is its own
    return NO_TEST_RAN.format(command=command, file=script, module=unittest_target(script))
