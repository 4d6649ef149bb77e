"""Exercism Python exercises as benchmark tasks: work nobody on this project wrote or chose.

An exercise folder holds `<module>.py` (the stub), `<module>_test.py` (the exercise's own
unittest tests), `.docs/instructions.md` and `.meta/example.py` (the track's reference
solution). A task run's folder gets the stub, the test file and `.docs/`, never `.meta/`.
It is solved when the test file is byte-identical and `python -m unittest <module>_test`
ran every test the file defines and passed.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tasks import DEFAULT_TIMEOUT, CheckOutcome, Task, first_line, make_writable

SUITE = "exercism"
HERE = Path(__file__).resolve().parent
DEFAULT_DIR = HERE.parents[1].parent / "shared" / "exercism-python"
"""../shared/exercism-python beside the repository."""
TEST_TIMEOUT = 120.0
REQUEST = ("Implement {module}.py so that the tests in {module}_test.py pass (the exercise is "
           "described in .docs/instructions.md). Don't change {module}_test.py.")
INSTRUCTIONS = ".docs/instructions.md"


def module_of(folder: Path) -> str:
    """The exercise's module: the one top-level .py file that is not a test."""
    stubs = [p.stem for p in folder.glob("*.py") if not p.stem.endswith("_test")]
    if len(stubs) != 1:
        raise SystemExit(f"{folder}: expected one stub .py beside the test, found {stubs or 'none'}")
    return stubs[0]


def load_exercise(folder: Path) -> Task:
    module = module_of(folder)
    for needed in (f"{module}_test.py", INSTRUCTIONS, ".meta/example.py"):
        if not (folder / needed).is_file():
            raise SystemExit(f"{folder}: {needed} is missing; not an exercism exercise folder")
    return Task(name=folder.name, folder=folder, request=REQUEST.format(module=module),
                timeout=DEFAULT_TIMEOUT, answer="", near_misses=(), suite=SUITE,
                read_only=(f"{module}_test.py", INSTRUCTIONS))


def missing_modules(folder: Path) -> list[str]:
    """Modules the exercise's test imports that neither Python nor the folder has (a helper
    the track keeps elsewhere): no solution can pass such a test."""
    module = module_of(folder)
    tree = ast.parse((folder / f"{module}_test.py").read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    return sorted(name for name in imported
                  if name != module and name not in sys.stdlib_module_names
                  and not (folder / f"{name}.py").is_file() and not (folder / name).is_dir())


def all_exercises(folder: Path = DEFAULT_DIR) -> list[Task]:
    """Every exercise in `folder`, but those whose test needs a module the folder lacks
    (each named on stderr)."""
    if not folder.is_dir():
        raise SystemExit(f"--exercism-dir: {folder} is not a folder (the exercises are in "
                         "../shared/exercism-python beside the repository)")
    exercises = []
    for path in sorted(folder.iterdir()):
        if not path.is_dir() or path.name.startswith(".") or not any(path.glob("*_test.py")):
            continue
        missing = missing_modules(path)
        if missing:
            print(f"left out {path.name}: its test imports {', '.join(missing)}, which the "
                  "exercise folder does not have", file=sys.stderr)
            continue
        exercises.append(load_exercise(path))
    return exercises


def stub_name(task: Task) -> str:
    return f"{module_of(task.folder)}.py"


def test_name(task: Task) -> str:
    return f"{module_of(task.folder)}_test.py"


def lay_out(task: Task, dest: Path) -> None:
    """The stub, the test file and .docs/ in `dest` (a new folder); never .meta/."""
    dest.mkdir(parents=True)
    for name in (stub_name(task), test_name(task)):
        shutil.copyfile(task.folder / name, dest / name)
    shutil.copytree(task.folder / ".docs", dest / ".docs")
    make_writable(dest)


# ---------------------------------------------------------------- the check


def defined_tests(test_file: Path) -> int:
    """How many test methods the test file defines (what a full run must report)."""
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    return sum(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and node.name.startswith("test") for cls in ast.walk(tree)
               if isinstance(cls, ast.ClassDef) for node in cls.body)


def unittest_failure(code: int, output: str, expected: int) -> str | None:
    """Why a `python -m unittest` run is no pass, or None when it is one: it exited 0, its
    "Ran N tests" line has N > 0 and at least the `expected` tests the file defines, and its
    last line is a plain OK (no skips). Exit 0 alone is no pass: a module that exits while the
    tests are imported, or a test file run without a runner, exits 0 having run nothing."""
    ran = re.findall(r"^Ran (\d+) tests? in ", output, re.M)
    if not ran:
        return "the tests did not run (unittest printed no 'Ran N tests' line)"
    count = int(ran[-1])
    if count == 0:
        return "unittest ran 0 tests"
    if count < expected:
        return f"only {count} of the {expected} tests the test file defines ran"
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    if code != 0 or lines[-1] != "OK":
        tail = "\n".join(lines[-12:])
        return f"the tests failed (exit {code}):\n{tail}"
    return None


def check(task: Task, work: Path, result_file: Path | None = None) -> CheckOutcome:
    """Solved (exit 0, "OK: ...") or a clean FAIL (exit 1, "FAIL: why"), as checklib's checks."""
    test = test_name(task)
    kept = work / test
    if not kept.is_file() or kept.read_bytes() != (task.folder / test).read_bytes():
        return CheckOutcome(1, f"FAIL: {test} was changed or removed; it must stay as it was")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_") and k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        done = subprocess.run([sys.executable, "-m", "unittest", test[:-3]], cwd=work, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=TEST_TIMEOUT)
    except subprocess.TimeoutExpired:
        return CheckOutcome(1, f"FAIL: the tests did not finish within {TEST_TIMEOUT:.0f} s")
    why = unittest_failure(done.returncode, done.stdout + done.stderr,
                           defined_tests(task.folder / test))
    if why:
        return CheckOutcome(1, f"FAIL: {why}")
    return CheckOutcome(0, f"OK: {test} unchanged and its tests pass")


# ---------------------------------------------------------------- selftest

NO_RUN_STUB = "raise SystemExit(0)  # exits while the tests are imported: nothing runs\n"


def selftest_task(task: Task, verbose: bool = False) -> list[str]:
    """The untouched stub, a module that ends the run before any test, and the reference with
    a changed test file must fail cleanly; the reference solution must pass."""
    problems = []
    stub, test = stub_name(task), test_name(task)
    with tempfile.TemporaryDirectory(prefix=f"bench-selftest-{task.name}-") as tmp:

        def case(name: str, files: dict[str, bytes], want_pass: bool) -> None:
            work = Path(tmp) / "work"
            shutil.rmtree(work, ignore_errors=True)
            lay_out(task, work)
            for rel, data in files.items():
                (work / rel).write_bytes(data)
            outcome = check(task, work)
            if verbose:
                print(f"     {name}: {first_line(outcome.output)}")
            if want_pass and not outcome.solved:
                problems.append(f"{name}: expected a pass, got {outcome.output[-500:]}")
            if not want_pass and not outcome.failed_cleanly:
                problems.append(f"{name}: expected a clean FAIL, got exit {outcome.code}: "
                                f"{outcome.output[-300:]}")

        reference = (task.folder / ".meta" / "example.py").read_bytes()
        case("untouched", {}, want_pass=False)
        case("tests never run", {stub: NO_RUN_STUB.encode()}, want_pass=False)
        case("test file changed", {stub: reference,
                                   test: (task.folder / test).read_bytes() + b"\n"},
             want_pass=False)
        case("reference", {stub: reference}, want_pass=True)
    return problems


def selftest_cases(task: Task) -> int:
    return 4
