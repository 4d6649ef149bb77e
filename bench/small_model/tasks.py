"""Our own benchmark tasks: loading them, laying out a task's folder, checking a finished one
and the selftest of a check.

Each task is a folder under tasks/: `project/` (the files the model works on),
`task.toml` (the one-line request, a timeout, the reference answer for questions
and the near misses), `check.py` (run in the finished folder, exit 0 = solved)
and `solution/` (files laid over the project to make the reference solution).
The exercism suite (exercism.py) offers the same four functions for its exercises:
lay_out, check, selftest_task, and a loader.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import split

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
TASKS_DIR = HERE / "tasks"
DEFAULT_TIMEOUT = 300.0
CHECK_TIMEOUT = 180.0
SUITE = "own"


@dataclass(frozen=True)
class NearMiss:
    name: str
    files: Path | None  # an overlay folder laid over the project, or none
    answer: str


@dataclass(frozen=True)
class Task:
    name: str
    folder: Path
    request: str
    timeout: float
    answer: str  # the reference final answer (questions); "" when the folder is what counts
    near_misses: tuple[NearMiss, ...]
    suite: str = SUITE
    read_only: tuple[str, ...] = ()
    """Files the request names that must stay as they are (an exercise's tests): an agent
    that can be told so (aider's --read) gets them read-only."""

    @property
    def project(self) -> Path:
        return self.folder / "project"

    @property
    def solution(self) -> Path:
        return self.folder / "solution"

    @property
    def check(self) -> Path:
        return self.folder / "check.py"

    @property
    def part(self) -> str:
        return split.part_of(self.name)


@dataclass
class CheckOutcome:
    code: int
    output: str

    @property
    def solved(self) -> bool:
        return self.code == 0

    @property
    def failed_cleanly(self) -> bool:
        """A deliberate failure through checklib.fail, not a crash of the check itself."""
        return self.code == 1 and "FAIL:" in self.output


# ---------------------------------------------------------------- loading


def load_task(folder: Path) -> Task:
    spec = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    misses = tuple(
        NearMiss(m["name"], folder / m["files"] if m.get("files") else None, m.get("answer", ""))
        for m in spec.get("near_miss", [])
    )
    return Task(
        name=folder.name,
        folder=folder,
        request=spec["request"].strip(),
        timeout=float(spec.get("timeout", DEFAULT_TIMEOUT)),
        answer=spec.get("reference", {}).get("answer", ""),
        near_misses=misses,
        read_only=tuple(spec.get("read_only", ())),
    )


def all_tasks(folder: Path = TASKS_DIR) -> list[Task]:
    return [load_task(p) for p in sorted(folder.iterdir()) if (p / "task.toml").is_file()]


def pick(tasks: list[Task], names: str | None, part: str) -> list[Task]:
    """The tasks of `part`, or those named (comma-separated), each of which must be in it."""
    in_part = [t for t in tasks if split.in_part(t.name, part)]
    if not names:
        return in_part
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {t.name: t for t in tasks}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SystemExit(f"unknown task(s): {', '.join(unknown)}; known: {', '.join(known)}")
    outside = [n for n in wanted if not split.in_part(n, part)]
    if outside:
        raise SystemExit(f"task(s) not in the {part} part: {', '.join(outside)} "
                         f"(pass --part all or --part {split.part_of(outside[0])})")
    return [known[n] for n in wanted]


# ---------------------------------------------------------------- folders and checks


def make_writable(root: Path) -> None:
    """Give the owner write access everywhere under `root`: a task copied from a read-only
    source must still be a folder the agent can change."""
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def overlay(src: Path, dest: Path) -> None:
    """Copy every file of `src` over `dest`, keeping the folder layout."""
    shutil.copytree(src, dest, dirs_exist_ok=True)


def lay_out(task: Task, dest: Path) -> None:
    """The task's starting files in `dest` (a new folder)."""
    shutil.copytree(task.project, dest)
    make_writable(dest)


def check(task: Task, work: Path, result_file: Path) -> CheckOutcome:
    env = {**os.environ, "BENCH_ORIGINAL": str(task.project), "BENCH_RESULT": str(result_file),
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(HERE)}  # checks import checklib
    try:
        done = subprocess.run([sys.executable, str(task.check)], cwd=work, env=env,
                              capture_output=True, text=True, timeout=CHECK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return CheckOutcome(124, f"the check did not finish within {CHECK_TIMEOUT:.0f} s")
    return CheckOutcome(done.returncode, (done.stdout + done.stderr).strip())


# ---------------------------------------------------------------- selftest


def fake_result(answer: str) -> dict[str, Any]:
    return {"type": "result", "is_error": False, "result": answer, "stop_reason": "end_turn"}


def selftest_case(task: Task, files: Path | None, answer: str, scratch: Path) -> CheckOutcome:
    work = scratch / "work"
    shutil.rmtree(work, ignore_errors=True)
    lay_out(task, work)
    if files is not None:
        overlay(files, work)
    result_file = scratch / "result.json"
    result_file.write_text(json.dumps(fake_result(answer)), encoding="utf-8")
    return check(task, work, result_file)


def selftest_task(task: Task, verbose: bool = False) -> list[str]:
    """Problems with one task's check: empty when the check is strict and the reference passes."""
    problems = []
    with tempfile.TemporaryDirectory(prefix=f"bench-selftest-{task.name}-") as tmp:
        scratch = Path(tmp)

        def case(name: str, files: Path | None, answer: str) -> CheckOutcome:
            outcome = selftest_case(task, files, answer, scratch)
            if verbose:
                print(f"     {name}: {first_line(outcome.output)}")
            return outcome

        untouched = case("untouched", None, "")
        if not untouched.failed_cleanly:
            problems.append(f"untouched folder: expected a clean FAIL, got exit {untouched.code}: "
                            f"{untouched.output[-300:]}")
        if not task.solution.is_dir() and not task.answer:
            problems.append("no reference solution (solution/ or reference.answer)")
        reference = case("reference", task.solution if task.solution.is_dir() else None,
                         task.answer)
        if not reference.solved:
            problems.append(f"reference solution: expected a pass, got exit {reference.code}: "
                            f"{reference.output[-500:]}")
        for miss in task.near_misses:
            outcome = case(f"near miss {miss.name!r}", miss.files, miss.answer)
            if not outcome.failed_cleanly:
                problems.append(f"near miss {miss.name!r}: expected a clean FAIL, got exit "
                                f"{outcome.code}: {outcome.output[-300:]}")
    return problems


def selftest_cases(task: Task) -> int:
    """How many cases the selftest runs for a task, for its summary line."""
    return 2 + len(task.near_misses)


def first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]
