"""What the model is shown of a failing test run: the output's last lines (what the check
after a change shows) beside the failures in short (lever `digest`, assist/test_failures.py).

Runs each tuning-part exercise's tests against its stub (every test fails: the stub returns
None or raises) as the check runs them, and prints, per exercise and as medians: the
characters shown each way, and how many of the failing tests are shown with their lines. The
held-out exercises are left out (their outputs are not looked at). No model is involved.

Run: python bench/bench_failure_digest.py [exercism folder]
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "small_model"))
sys.path.insert(0, str(HERE.parent / "src"))

from exercism import DEFAULT_DIR, all_exercises, module_of  # noqa: E402
from split import TUNE, in_part  # noqa: E402

from tether.assist.test_failures import digest  # noqa: E402
from tether.assist.verify import PYTEST, shown_output  # noqa: E402

SECTION = re.compile(r"^_+ .+ _+$")


def check_output(folder: Path) -> str:
    """The exercise's tests run against its stub in a scratch copy, framed as run_cmd shows it."""
    module = module_of(folder)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / folder.name
        shutil.copytree(folder, scratch, ignore=shutil.ignore_patterns(".meta"))
        command = f"{sys.executable} {PYTEST} -p no:cacheprovider {module}_test.py"
        done = subprocess.run(command.split(), cwd=scratch, capture_output=True, text=True)
    return f"$ {command}\n{done.stdout}[exit code {done.returncode} · 1.0s]"


def shown_with_lines(text: str) -> int:
    """How many failing tests a shown output gives with their lines: pytest's `____ name ____`
    banners (a failure whose banner the tail cut off is not counted), or the digest's
    `FAILED name (file:line)`."""
    return sum(1 for line in text.splitlines()
               if SECTION.match(line) or (line.startswith("FAILED ") and line.endswith(")")))


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    rows = []
    for task in all_exercises(folder):
        if not in_part(task.name, TUNE):
            continue
        output = check_output(task.folder)
        told = digest(output)
        tail = shown_output(output)
        failing = output.count("\nFAILED ")
        rows.append((task.name, failing, len(tail), shown_with_lines(tail),
                     len(told) if told else None, shown_with_lines(told) if told else None))
    print(f"{'exercise':<24}{'failing':>8}{'tail chars':>12}{'with lines':>11}{'digest chars':>14}{'with lines':>11}")
    for name, failing, tail_chars, tail_lines, told_chars, told_lines in rows:
        told = f"{told_chars:>14}{told_lines:>11}" if told_chars is not None else f"{'(not read)':>14}{'':>11}"
        print(f"{name:<24}{failing:>8}{tail_chars:>12}{tail_lines:>11}{told}")
    read = [row for row in rows if row[4] is not None]
    print(f"\n{len(read)} of {len(rows)} outputs read; medians over those: "
          f"tail {statistics.median(r[2] for r in read):.0f} chars showing "
          f"{statistics.median(r[3] for r in read):.0f} failing tests with their lines, "
          f"digest {statistics.median(r[4] for r in read):.0f} chars showing "
          f"{statistics.median(r[5] for r in read):.0f}")


if __name__ == "__main__":
    main()
