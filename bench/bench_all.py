"""Every speed figure of one run, beside the other harnesses where they apply.

1. The request prefix a local server's prompt cache can reuse: tokens shared by two projects'
   first requests and by a session's consecutive requests, per profile and protocol
   (bench_prefix.py; a llama.cpp server's template and tokenizer at --server, characters
   when none answers).
2. The chat's start: to its first prompt drawn and to ready (a request typed now is sent at
   once), wall and CPU, for a reference checkout's code, this one's and simple-harness 0.6.0's
   (bench_startup.py; drawn is ready for simple-harness, which sets everything up first).
3. Harness CPU per tool round trip at steps 10 and 100 (the medians of steps 2-11 and of the
   last 10), native tool calls and the text protocol (bench_loop.py), beside mini-swe-agent
   in the same two ways (bench_vs_mini_swe_agent.py) when its environment is there.
4. repo_map over a generated tree of about 18,000 files, cold and with the on-disk tag cache
   warm (bench_repo_map.py).

Medians and ratios; no assertions (machines are shared and noisy). Run it on one core:
    taskset -c 1 python bench/bench_all.py [--chat-runs 7] [--rounds 3] [--map-runs 2]
The other harnesses live in virtual environments of their own (see bench_vs_simple_harness.py
and bench_vs_mini_swe_agent.py); a missing one is said, not fatal.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

import bench_loop
import bench_prefix
import bench_repo_map
import bench_startup
import bench_vs_mini_swe_agent
import bench_vs_simple_harness

HERE = Path(__file__).resolve().parents[1] / "src"
STEP_WINDOWS = {"step 10": "steps 2-11", "step 100": "last 10"}
"""The figure at step N: the median over the ten steps that end near it."""


def prefix(server: str) -> None:
    counter = bench_prefix.Counter(server)
    print(f"1. Shared request prefix, in {counter.unit}")
    if not counter.real:
        print(f"   (no llama.cpp server answered at {server}: about 4 characters a token)")
    bench_prefix.show("   this checkout", bench_prefix.figures(bench_prefix.bodies_of(str(HERE)), counter))


def chat_start(runs: int, reference: Path, simple_harness: str) -> None:
    print("2. The chat's start")
    medians = bench_startup.chat_start(runs, reference, simple_harness)
    ours = medians["tether (this checkout)"]
    for name, theirs in medians.items():
        if name == "tether (this checkout)":
            continue
        ratios = ", ".join(f"{label} {mine / other:.2f}" for label, mine, other in zip(
            ("drawn", "drawn CPU", "ready", "ready CPU"), ours, theirs, strict=True))
        print(f"  this checkout / {name}: {ratios}")


def step_figures(runs: list[list[float]]) -> dict[str, float]:
    picked = dict(bench_loop.windows(len(runs[0])))
    return {label: bench_loop.median_of_rounds(runs, picked[window]) for label, window in STEP_WINDOWS.items()}


def round_trips(steps: int, rounds: int, mini_swe_agent: str) -> None:
    print(f"3. CPU per tool round trip, {steps} steps, median of {rounds} rounds (ms; model latency zero)")
    others = Path(mini_swe_agent).exists()
    if not others:
        print(f"   (mini-swe-agent is not installed at {mini_swe_agent}: "
              "python -m venv /tmp/msa-venv && /tmp/msa-venv/bin/pip install mini-swe-agent)")
    at_100: dict[str, str] = {}
    for protocol in ("native", "text"):
        tether_rounds = bench_loop.rounds_here(steps, rounds, protocol)
        ours = step_figures([r[0] for r in tether_rounds])
        floor = step_figures([r[1] for r in tether_rounds])
        print(f"   {'tether':<15} {protocol:<6} {shown_steps(ours)}   "
              f"(httpx alone: {floor['step 10']:.2f} and {floor['step 100']:.2f})")
        if others:
            theirs = step_figures([bench_vs_mini_swe_agent.steps_of(mini_swe_agent, steps, protocol)
                                   for _ in range(rounds)])
            print(f"   {'mini-swe-agent':<15} {protocol:<6} {shown_steps(theirs)}")
            at_100[protocol] = f"{ours['step 100'] / theirs['step 100']:.2f}"
    if at_100:
        print("   tether / mini-swe-agent at step 100: "
              + ", ".join(f"{protocol} {ratio}" for protocol, ratio in at_100.items()))


def shown_steps(figures: dict[str, float]) -> str:
    first, last = figures["step 10"], figures["step 100"]
    return f"step 10 {first:6.2f}   step 100 {last:6.2f}   growth {last / first:4.2f}x"


def repo_map(files: int, runs: int) -> None:
    tree = Path(tempfile.mkdtemp(prefix="tether-bigtree-"))
    try:
        bench_repo_map.make_tree(tree, files)
        count = bench_repo_map._count(tree) - bench_repo_map._count(tree / ".git")
        print(f"4. repo_map (budget 1,024) over a generated tree of {count:,} files, "
              f"median of {runs} fresh processes each")
        print(f"   {'state':<10} {'wall s':>7} {'CPU s':>6} {'peak MB':>8} {'after MB':>9}  summary")
        for state in ("cold", "disk-warm"):
            row = bench_repo_map.measure(HERE, tree, runs, warm=state == "disk-warm")
            if row is None:
                print(f"   {state:<10} (no on-disk tag cache)")
                continue
            print(f"   {state:<10} {row['seconds']:7.2f} {row['cpu']:6.2f} {row['peak']:8.0f} "
                  f"{row['after']:9.0f}  {row['summary']}")
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def machine() -> str:
    load = Path("/proc/loadavg").read_text().split()[:3]
    return f"{len(os.sched_getaffinity(0))} core(s) usable, load average {' '.join(load)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="http://127.0.0.1:8089", help="a llama.cpp server (prefix tokens)")
    parser.add_argument("--chat-runs", type=int, default=7)
    parser.add_argument("--reference", type=Path, default=Path("/work/main/src"))
    parser.add_argument("--simple-harness", default=bench_vs_simple_harness.DEFAULT_OTHER)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mini-swe-agent", default=bench_vs_mini_swe_agent.DEFAULT_PYTHON)
    parser.add_argument("--files", type=int, default=18_000)
    parser.add_argument("--map-runs", type=int, default=2)
    args = parser.parse_args()
    print(f"tether speed figures ({machine()})")
    prefix(args.server)
    chat_start(args.chat_runs, args.reference, args.simple_harness)
    round_trips(args.steps, args.rounds, args.mini_swe_agent)
    repo_map(args.files, args.map_runs)
    print(f"(done; load average now {Path('/proc/loadavg').read_text().split()[0]})")


if __name__ == "__main__":
    main()
