"""repo_map figures on a big tree, before and after: the code of a reference checkout (main's,
by default /work/main/src) beside this checkout's, each run in a fresh subprocess so its
memory figures are its own.

The tree is real code: copies of the Python standard library and of the interpreter's
site-packages, replicated to about 18,000 files (roughly half of them source files a
grammar parses), in a temporary folder made a git repository (untracked files, as a fresh
clone's build would leave them). It is made once per run and removed after (pass --keep to
reuse it: the path is printed).

Per side and per state, the median of a few runs: wall and CPU seconds (on a loaded machine
the wall time is mostly waiting for the CPU), peak resident memory and
resident memory after repo_map returned (with the tags it keeps), and the result's summary.
States: "cold" (nothing cached anywhere), "disk-warm" (a new process, the on-disk tag cache
of an earlier run present; only where the code has one).
Then search_in_file over the whole tree: main's code, this code with rg, and with its Python
fallback.
No assertions: machines are shared and noisy.

Run: python bench/bench_repo_map.py [--runs 3] [--files 18000] [--tree DIR] [--keep]
     [--before /work/main/src]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "src"
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.so.*", "*.a")

CHILD = r"""
import gc, inspect, json, resource, sys, time
from pathlib import Path
from tether.core.toolspec import ToolContext
from tether.tools.ast_tools import AstTools
try:
    from tether.tools.params import RepoMapParams
except ImportError:  # code from before the parameter models moved to tools/params.py
    from tether.tools.ast_tools import RepoMapParams

root, cache = Path(sys.argv[1]), sys.argv[2]
takes_cache = "tag_store" in inspect.signature(AstTools).parameters
tools = AstTools(tag_store=Path(cache)) if takes_cache and cache else AstTools()
start, cpu = time.perf_counter(), time.process_time()
out = tools.repo_map(RepoMapParams(budget=1024), ToolContext(root=root))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
gc.collect()
with open("/proc/self/statm") as f:
    after = int(f.read().split()[1]) * resource.getpagesize() / 2**20
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
notes = [line for line in out.text.splitlines() if line.startswith("[")]
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak": peak, "after": after, "summary": out.summary,
                  "disk": takes_cache, "notes": notes}))
"""

SEARCH_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from tether.core.toolspec import ToolContext, ToolError
try:
    from tether.tools.file_search import search_in_file
    from tether.tools.params import SearchInFileParams
except ImportError:  # code from before the search and the parameter models had modules of their own
    from tether.tools.files import SearchInFileParams, search_in_file

root, pattern, engine = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
if engine == "python":
    try:
        from tether.tools import ripgrep
        ripgrep.ripgrep = lambda: None  # code of before the search asked `usable`
        ripgrep.usable = lambda pattern: None
    except ImportError:  # code from before rg was used: Python only
        pass
start, cpu = time.perf_counter(), time.process_time()
try:
    lines = search_in_file(SearchInFileParams(pattern=pattern), ToolContext(root=root)).text.splitlines()
except ToolError as err:
    lines = [str(err)]
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": time.perf_counter() - start,
                  "cpu": time.process_time() - cpu + children.ru_utime + children.ru_stime,
                  "end": [line for line in lines if line.startswith(("[", "No ", "the "))][-1:]}))
"""
SEARCHES = ("zz_nowhere_zz", "def [a-z_]+cache")
"""A search that reads every file, and one that fills the match cap."""


def make_tree(root: Path, files: int) -> None:
    """Copies of the standard library and of site-packages until `files` files."""
    sources = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    copy = 0
    while _count(root) < files:
        for source in sources:
            target = root / f"copy{copy}" / source.name
            shutil.copytree(source, target, ignore=_skipped_for(source), symlinks=True)
            if _count(root) >= files:
                break
        copy += 1
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def _skipped_for(source: Path):  # type: ignore[no-untyped-def]
    """The stdlib copy leaves out its own site-packages (copied on its own)."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(SKIPPED(folder, names))
        if Path(folder) == source:
            skipped.add("site-packages")
        return skipped
    return ignore


def _count(root: Path) -> int:
    return sum(len(names) for _, _, names in os.walk(root))


def _child(src: Path, script: str, *args: str) -> dict[str, object]:
    """One measuring child's JSON line; a child that fails ends the bench with its error."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"the measuring process for {src} failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_child(src: Path, tree: Path, cache: str) -> dict[str, object]:
    return _child(src, CHILD, str(tree), cache)


def search_row(src: Path, tree: Path, pattern: str, engine: str) -> str:
    row = _child(src, SEARCH_CHILD, str(tree), pattern, engine)
    end = row["end"][0][:90] if row["end"] else ""
    return f"{row['seconds']:7.2f} {row['cpu']:6.2f}  {end}"


def searches(before: Path, tree: Path) -> None:
    print("search_in_file over the whole tree, one run each (wall s, CPU s with rg's)")
    for pattern in SEARCHES:
        print(f"  {pattern!r}")
        for label, src, engine in (("before", before, "python"), ("after", HERE, "rg"),
                                   ("after", HERE, "python")):
            if engine == "rg" and shutil.which("rg") is None:
                print("    after, rg: (rg is not installed)")
                continue
            print(f"    {label:<6} {engine:<7} {search_row(src, tree, pattern, engine)}")


def measure(src: Path, tree: Path, runs: int, warm: bool) -> dict[str, object] | None:
    """Median figures of `runs` fresh processes, cold (an empty tag cache each time) or
    disk-warm (one cache filled by an untimed run first)."""
    samples = []
    with tempfile.TemporaryDirectory(prefix="tether-tags-") as cache:
        if warm:
            if not run_child(src, tree, cache)["disk"]:
                return None
        for _ in range(runs):
            place = cache if warm else tempfile.mkdtemp(prefix="tether-tags-", dir=cache)
            samples.append(run_child(src, tree, place))
    middle = {key: statistics.median(float(s[key]) for s in samples)  # type: ignore[arg-type]
              for key in ("seconds", "cpu", "peak", "after")}
    return {**middle, "summary": samples[-1]["summary"], "notes": samples[-1]["notes"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before-runs", type=int, help="runs of the reference code (default: --runs)")
    parser.add_argument("--files", type=int, default=18_000)
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--before", type=Path, default=Path("/work/main/src"))
    args = parser.parse_args()
    tree = args.tree or Path(tempfile.mkdtemp(prefix="tether-bigtree-"))
    try:
        if not (tree / ".git").exists():
            make_tree(tree, args.files)
        print(f"repo_map (budget 1,024) over {_count(tree) - _count(tree / '.git'):,} files in {tree}, "
              f"median of {args.runs} runs, each in a fresh process")
        print(f"  {'code':<8} {'state':<10} {'wall s':>7} {'CPU s':>6} {'peak MB':>8} {'after MB':>9}  summary")
        for label, src in (("before", args.before), ("after", HERE)):
            runs = args.before_runs or args.runs if label == "before" else args.runs
            for state in ("cold", "disk-warm"):
                row = measure(src, tree, runs, warm=state == "disk-warm")
                if row is None:
                    print(f"  {label:<8} {state:<10} {'(no on-disk tag cache)':>33}")
                    continue
                print(f"  {label:<8} {state:<10} {row['seconds']:7.2f} {row['cpu']:6.2f} {row['peak']:8.0f} "
                      f"{row['after']:9.0f}  {row['summary']}")
                for note in row["notes"]:  # type: ignore[attr-defined]
                    print(f"  {'':<19} {note[:160]}")
        searches(args.before, tree)
    finally:
        if args.keep or args.tree:
            print(f"tree kept: {tree}")
        else:
            shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
