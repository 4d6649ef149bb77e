"""Start-up figures: `tether --version` and importing the turn loop.

Prints medians over repeated runs (no assertions: machines are shared and noisy).
Run: python bench/bench_startup.py [runs]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time


def median_ms(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    python = sys.executable
    rows = [("python -c pass (interpreter floor)", [python, "-c", "pass"])]
    script = shutil.which("tether")
    if script:
        rows.append(("tether --version", [script, "--version"]))
    rows += [
        ("python -m tether --version", [python, "-m", "tether", "--version"]),
        ("import tether.core.loop", [python, "-c", "import tether.core.loop"]),
        ("import tether.runtime (everything -p needs)", [python, "-c", "import tether.runtime"]),
    ]
    print(f"start-up, median of {runs} runs")
    for label, command in rows:
        print(f"  {label:<46} {median_ms(command, runs):7.1f} ms")


if __name__ == "__main__":
    main()
