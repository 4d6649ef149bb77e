"""repo_map figures: a generated repository of 2,000 source files, mapped cold (every file
parsed) and warm (nothing changed; a new budget; one file edited).

Prints wall and CPU seconds for each (no assertions: machines are shared and noisy, and
on a loaded machine the wall time is mostly waiting for the CPU).
Run: python bench/bench_repo_map.py [files]
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.core.toolspec import ToolContext
from tether.tools.ast_tools import AstTools, RepoMapParams

LANGUAGES = (("py", 60), ("ts", 15), ("go", 10), ("js", 10), ("rs", 5))


def python_file(index: int, names: list[str]) -> str:
    calls = "\n".join(f"        value = {name}(value)" for name in names)
    return (
        f'"""Module {index}."""\n\n\nclass Service{index}:\n    """A service."""\n\n'
        f"    def __init__(self, size: int) -> None:\n        self.size = size\n\n"
        f"    def run_step_{index}(self, value: int) -> int:\n{calls}\n        return value\n\n\n"
        + "".join(
            f"def helper_{index}_{k}(value: int) -> int:\n    total = value\n"
            f"    for step in range({k + 1}):\n        total += step * {k}\n    return total\n\n\n"
            for k in range(4)
        )
    )


def typescript_file(index: int, names: list[str]) -> str:
    calls = "\n".join(f"    value = {name}(value);" for name in names)
    return (
        f"export interface Shape{index} {{ area(): number; }}\n\n"
        f"export class Widget{index} implements Shape{index} {{\n"
        f"  area(): number {{ return {index}; }}\n}}\n\n"
        + "".join(
            f"export function helper_{index}_{k}(value: number): number {{\n"
            f"  return value + {k};\n}}\n\n" for k in range(4)
        )
        + f"export function run{index}(value: number): number {{\n{calls}\n    return value;\n}}\n"
    )


def javascript_file(index: int, names: list[str]) -> str:
    calls = "\n".join(f"  value = {name}(value);" for name in names)
    return (
        f"class Store{index} {{\n  get(key) {{ return key; }}\n}}\n\n"
        + "".join(f"function helper_{index}_{k}(value) {{ return value + {k}; }}\n\n" for k in range(4))
        + f"function run{index}(value) {{\n{calls}\n  return value;\n}}\n"
    )


def go_file(index: int, names: list[str]) -> str:
    calls = "\n".join(f"\tvalue = {name}(value)" for name in names)
    return (
        f"package pkg\n\ntype Server{index} struct {{ port int }}\n\n"
        f"func (s *Server{index}) Start() int {{ return s.port }}\n\n"
        + "".join(f"func helper_{index}_{k}(value int) int {{ return value + {k} }}\n\n" for k in range(4))
        + f"func Run{index}(value int) int {{\n{calls}\n\treturn value\n}}\n"
    )


def rust_file(index: int, names: list[str]) -> str:
    calls = "\n".join(f"    let value = {name}(value);" for name in names)
    return (
        f"pub struct Point{index} {{ x: i32 }}\n\n"
        + "".join(f"pub fn helper_{index}_{k}(value: i32) -> i32 {{ value + {k} }}\n\n" for k in range(4))
        + f"pub fn run{index}(value: i32) -> i32 {{\n{calls}\n    value\n}}\n"
    )


WRITERS: dict[str, Callable[[int, list[str]], str]] = {
    "py": python_file, "ts": typescript_file, "js": javascript_file, "go": go_file, "rs": rust_file,
}


def make_repository(root: Path, count: int) -> None:
    """`count` files in 40 folders, each calling helpers of a few others (a skewed choice,
    so some files are used much more than others), plus an ignored folder."""
    chooser = random.Random(18)
    suffixes = [suffix for suffix, share in LANGUAGES for _ in range(share)]
    for index in range(count):
        suffix = chooser.choice(suffixes)
        used = [int(chooser.paretovariate(1.2)) % count for _ in range(5)]
        names = [f"helper_{target}_{target % 4}" for target in used]
        path = root / f"pkg{index % 40}" / f"module_{index}.{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(WRITERS[suffix](index, names))
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    for index in range(200):
        (root / "build" / f"generated_{index}.py").write_text(f"def generated_{index}():\n    pass\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def cpu_seconds() -> float:
    """This process's CPU time and its children's (git ls-files)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def timed(label: str, action: Callable[[], str]) -> str:
    wall, cpu = time.perf_counter(), cpu_seconds()
    summary = action()
    print(f"  {label:<34} {time.perf_counter() - wall:6.2f} s wall  "
          f"{cpu_seconds() - cpu:6.2f} s CPU   ({summary})")
    return summary


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    root = Path(tempfile.mkdtemp(prefix="tether-repomap-"))
    try:
        make_repository(root, count)
        ctx = ToolContext(root=root)
        tools = AstTools()
        grammar = "tree-sitter" if tools.grammars.available else "stdlib ast only (no extra)"
        print(f"repo_map over {count:,} files ({grammar})")

        def run(budget: int) -> str:
            return tools.repo_map(RepoMapParams(budget=budget), ctx).summary

        timed("cold (every file parsed)", lambda: run(1024))
        timed("warm (same files, same budget)", lambda: run(1024))
        timed("warm (new budget: re-fitted)", lambda: run(2048))
        edited = next(root.glob("pkg0/module_0.*"))
        edited.write_text(edited.read_text() + "\n")
        timed("one file edited (re-parsed)", lambda: run(1024))
        print(f"  files parsed in all: {tools.mapper.tag_cache.extracted:,}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
