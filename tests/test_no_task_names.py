"""The source names no benchmark task: a mechanism written for one task of our own benchmark
wins there and loses on work nobody here chose, so none may be shaped to, or argued from, one."""

from __future__ import annotations

import re
from pathlib import Path

import tether

SRC = Path(tether.__file__).parent
TASKS = Path(__file__).parent.parent / "bench" / "small_model" / "tasks"


def test_the_source_names_no_benchmark_task() -> None:
    names = sorted(p.name for p in TASKS.iterdir() if p.is_dir())
    assert len(names) >= 20, "the benchmark's tasks were not found"
    named = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    found = [f"{path.relative_to(SRC)}:{n}: {m.group()}"
             for path in sorted(SRC.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if (m := named.search(line))]
    assert not found, "the source names benchmark tasks:\n" + "\n".join(found)
