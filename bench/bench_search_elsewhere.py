"""search_in_file's look elsewhere: a one-file search in a generated project of N files
(3,000 by default) whose pattern matches nowhere, so the look elsewhere reads all it may.

Prints the files read per search and the wall time per search, with and without the look
elsewhere (no assertions: machines are shared and noisy).
Run: python bench/bench_search_elsewhere.py [files]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tether.core.toolspec import ToolContext
from tether.tools import file_search
from tether.tools.file_search import SearchInFileParams, search_in_file

MISS = SearchInFileParams(pattern="matches_nowhere", path="app/settings.py")


def generated(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"pkg{n // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{n}.py").write_text("import os\n" + "def f(x):\n    return x + 1\n" * 40)
    (root / "app").mkdir()
    (root / "app" / "settings.py").write_text("from defaults import PORT\nport = PORT\n")
    (root / "app" / "defaults.py").write_text("PORT = 7341\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def timed_searches(ctx: ToolContext, rounds: int = 5) -> tuple[int, list[float]]:
    reads: list[Path] = []
    real = file_search.read_small_file

    def counting(path: Path, limit: int) -> bytes:
        reads.append(path)
        return real(path, limit)

    file_search.read_small_file = counting  # type: ignore[assignment]
    times = []
    try:
        for _ in range(rounds):
            reads.clear()
            started = time.perf_counter()
            search_in_file(MISS, ctx)
            times.append(time.perf_counter() - started)
    finally:
        file_search.read_small_file = real  # type: ignore[assignment]
    return len(reads), times


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    root = Path(tempfile.mkdtemp())
    try:
        generated(root, files)
        read, times = timed_searches(ToolContext(root=root))
        print(f"{files} files: {read} read per search; wall {times[0]:.2f} s first, "
              f"median {sorted(times)[len(times) // 2]:.2f} s")
        elsewhere = file_search._elsewhere
        file_search._elsewhere = lambda *args: None  # type: ignore[assignment]
        try:
            _, alone = timed_searches(ToolContext(root=root))
        finally:
            file_search._elsewhere = elsewhere  # type: ignore[assignment]
        print(f"without the look elsewhere: median {sorted(alone)[len(alone) // 2]:.2f} s")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
