"""The small-model benchmark: real coding tasks, driven through an agent against a model server.

Two suites: our own tasks (tasks/, see tasks.py) and Exercism Python exercises (exercism.py,
from ../shared/exercism-python). Every task is in a fixed part, tuning or held-out (split.py).
Two agents: tether (`tether -p ... --auto`) and aider (`aider --message ... --yes-always`),
see agents.py.

    python bench/small_model/run.py --selftest [--suite exercism]
    python bench/small_model/run.py --list --suite exercism
    python bench/small_model/run.py --provider openai --base-url http://127.0.0.1:8089/v1 \\
        --model qwen2.5-coder-1.5b --suite exercism --part held-out --label ex-held-tether
    python bench/small_model/run.py --provider local --model ~/models/x.gguf --suite exercism ...
    python bench/small_model/run.py --agent aider --suite exercism --part held-out ...
    python bench/small_model/run.py --report ex-held-tether,ex-held-aider

A run copies each task's starting files into a fresh temporary git repository, runs the agent
there with its own empty home, checks the folder, and writes results/<label>.json (kept) and
results/<label>/ (transcripts, not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import exercism
import split
import tasks
from agents import DEFAULT_AIDER, GIT_IDENTITY, Agent, AiderAgent, TetherAgent
from tasks import CheckOutcome, Task, first_line

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
DEFAULT_SRC = HERE.parents[1] / "src"
SUITES = ("own", "exercism")


def suite_of(task: Task) -> ModuleType:
    """The module that lays out, checks and selftests this task's kind."""
    return exercism if task.suite == exercism.SUITE else tasks


def load_suite(suite: str, tasks_dir: Path, exercism_dir: Path) -> list[Task]:
    return exercism.all_exercises(exercism_dir) if suite == "exercism" else tasks.all_tasks(tasks_dir)


# ---------------------------------------------------------------- folders


def fresh_repo(task: Task, parent: Path) -> Path:
    """The task's starting files in a new git repository with one commit."""
    work = parent / "repo"
    suite_of(task).lay_out(task, work)
    env = {**os.environ, **GIT_IDENTITY}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "task"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
    return work


def run_check(task: Task, work: Path, result_file: Path) -> CheckOutcome:
    outcome: CheckOutcome = suite_of(task).check(task, work, result_file)
    return outcome


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# ---------------------------------------------------------------- selftest


def selftest(chosen: list[Task], verbose: bool = False) -> int:
    bad = 0
    for task in chosen:
        suite = suite_of(task)
        problems = suite.selftest_task(task, verbose)
        print(f"{'ok  ' if not problems else 'BAD '} {task.name} "
              f"({suite.selftest_cases(task) - 1} failing case(s), 1 reference)")
        for problem in problems:
            print(f"     {problem}")
        bad += bool(problems)
    print(f"selftest: {len(chosen) - bad}/{len(chosen)} tasks have strict checks and a passing reference")
    return 1 if bad else 0


# ---------------------------------------------------------------- driving an agent


@dataclass
class Attempt:
    task: str
    part: str
    repeat: int
    solved: bool
    exit_code: int | None
    timed_out: bool
    wall_s: float
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    stop_reason: str
    tool_calls: list[str]
    check: str
    error: str  # the agent's error message when the run ended in one (e.g. the server did not answer)
    request_s: list[float] = field(default_factory=list)
    """Seconds each finished model request took (tether with stream-json output)."""


def run_process(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float, out: Path,
                err: Path) -> tuple[int | None, bool]:
    """Run in its own process group, so a timeout ends the agent and every command it started.
    Output goes straight to the transcript files, to be watched while it runs."""
    with out.open("w", encoding="utf-8") as stdout, err.open("w", encoding="utf-8") as stderr:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                                stderr=stderr, start_new_session=True)
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return None, True
        except BaseException:  # the runner itself is stopped: leave no agent behind
            stop_group(proc)
            raise


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C first: tether then still writes its result (usage, calls so far); then harder."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def changes_patch(work: Path) -> str:
    """Everything that differs from the task's commit, untracked files included."""
    subprocess.run(["git", "add", "-A"], cwd=work, capture_output=True)
    base = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=work,
                          capture_output=True, text=True).stdout.split()
    if not base:
        return ""
    done = subprocess.run(["git", "diff", "--cached", base[-1]], cwd=work, capture_output=True,
                          text=True, errors="replace")
    return done.stdout


def attempt(task: Task, repeat: int, agent: Agent, transcripts: Path, scratch: Path,
            keep: bool) -> Attempt:
    """One run of one task. `scratch` is the same folder for every attempt of a benchmark run:
    the project root the agent sees (and tether puts in its system prompt) names no task and
    stays the same, so a server's prompt cache serves every task."""
    for leftover in scratch.iterdir():
        remove(leftover)
    work = fresh_repo(task, scratch)
    home = scratch / "home"
    home.mkdir()
    agent.prepare_home(home, task)
    stem = transcripts / f"{task.name}.r{repeat}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    out_file = agent.stdout_file(stem)
    started = time.monotonic()
    code, timed_out = run_process(agent.command(task, work, stem), work, agent.env(home),
                                  task.timeout, out_file, Path(f"{stem}.stderr.txt"))
    wall = time.monotonic() - started
    figures = agent.figures(out_file.read_text(encoding="utf-8", errors="replace"), stem,
                            timed_out)
    for leftover in agent.leftovers(work):
        remove(leftover)
    result_file = scratch / "result.json"
    result_file.write_text(json.dumps(figures.result), encoding="utf-8")
    Path(f"{stem}.diff").write_text(changes_patch(work), encoding="utf-8")  # before the check
    check = run_check(task, work, result_file)
    Path(f"{stem}.check.txt").write_text(check.output + "\n", encoding="utf-8")
    if keep:
        shutil.copytree(work, Path(f"{stem}.folder"), dirs_exist_ok=True)
    return Attempt(
        task=task.name, part=task.part, repeat=repeat, solved=check.solved, exit_code=code,
        timed_out=timed_out, wall_s=round(wall, 1), requests=figures.requests,
        prompt_tokens=figures.prompt_tokens, completion_tokens=figures.completion_tokens,
        cached_tokens=figures.cached_tokens, stop_reason=figures.stop_reason,
        tool_calls=figures.tool_calls, check=first_line(check.output), error=figures.error,
        request_s=figures.request_s,
    )


# ---------------------------------------------------------------- a benchmark run


def summary(attempts: list[Attempt], repeats: int, total: int) -> dict[str, Any]:
    per_run = [sum(a.solved for a in attempts if a.repeat == r) for r in range(1, repeats + 1)]
    return {
        "solved_per_run": per_run,
        "total_per_run": total,
        "solved": sum(per_run),
        "attempts": len(attempts),
        "mean_wall_s": round(sum(a.wall_s for a in attempts) / len(attempts), 1) if attempts else 0,
        "prompt_tokens": sum(a.prompt_tokens for a in attempts),
        "completion_tokens": sum(a.completion_tokens for a in attempts),
        "errors": sum(bool(a.error) for a in attempts),
        "timeouts": sum(a.timed_out for a in attempts),
    }


def write_results(path: Path, meta: dict[str, Any], attempts: list[Attempt], repeats: int,
                  total: int) -> None:
    data = {**meta, "summary": summary(attempts, repeats, total),
            "attempts": [asdict(a) for a in attempts]}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def describe(a: Attempt) -> str:
    mark = "solved" if a.solved else ("timeout" if a.timed_out else "failed")
    return (f"[r{a.repeat}] {a.task:<24} {mark:<7} req={a.requests:<2} in={a.prompt_tokens:<6} "
            f"out={a.completion_tokens:<5} {a.wall_s:>6.1f}s exit={a.exit_code} "
            f"calls={','.join(a.tool_calls) or '-'}")


@dataclass
class Plan:
    """What a benchmark run covers, recorded beside its results."""

    suite: str
    part: str
    repeats: int
    label: str
    keep: bool = False
    warmup: bool = True


def benchmark(chosen: list[Task], agent: Agent, plan: Plan, results_dir: Path = RESULTS_DIR) -> int:
    problem = agent.problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, stopped_by_signal)
    # Started in the background, the runner may inherit an ignored SIGINT, and the agent with
    # it; a handler of our own is reset to the default in the agent, so a timeout's Ctrl-C
    # reaches it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    out_file = results_dir / f"{plan.label}.json"
    transcripts = results_dir / plan.label
    meta = {
        "label": plan.label,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **agent.settings(),
        "suite": plan.suite, "part": plan.part, "split_salt": split.SALT,
        "timeout_s": sorted({t.timeout for t in chosen}),
        "repeat": plan.repeats, "tasks": [t.name for t in chosen],
    }
    attempts: list[Attempt] = []
    scratch = Path(tempfile.mkdtemp(prefix="tether-bench-"))
    try:
        if plan.warmup:
            warm_up(chosen[0], agent, transcripts, scratch)
        for repeat, task in schedule(chosen, plan.repeats):
            result = attempt(task, repeat, agent, transcripts, scratch, plan.keep)
            attempts.append(result)
            print(describe(result), flush=True)
            write_results(out_file, meta, attempts, plan.repeats, len(chosen))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    per_run = summary(attempts, plan.repeats, len(chosen))["solved_per_run"]
    print(f"solved {' + '.join(f'{n}/{len(chosen)}' for n in per_run)} -> {out_file}")
    return 0


WARMUP_REQUEST = "Reply with the single word: ready"


def warm_up(task: Task, agent: Agent, transcripts: Path, scratch: Path) -> None:
    """One untimed, unrecorded request first, so the server has the agent's system prompt in
    its cache and the first task does not pay for it alone."""
    warm = replace(task, name="warmup", request=WARMUP_REQUEST, timeout=max(task.timeout, 1800))
    started = time.monotonic()
    outcome = attempt(warm, 0, agent, transcripts, scratch, keep=False)
    print(f"warm-up: {time.monotonic() - started:.0f} s, {outcome.prompt_tokens} prompt tokens",
          flush=True)


def stopped_by_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through run_process, which stops the running agent


def schedule(chosen: list[Task], repeats: int) -> Iterator[tuple[int, Task]]:
    """All tasks once, then all again: a stopped run still has whole repeats."""
    for repeat in range(1, repeats + 1):
        for task in chosen:
            yield repeat, task


# ---------------------------------------------------------------- reporting


def load_runs(labels: list[str], results_dir: Path) -> dict[str, dict[str, Any]]:
    runs = {}
    for label in labels:
        path = results_dir / f"{label}.json"
        try:
            runs[label] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SystemExit(f"--report: cannot read {path}: {exc}") from None
    return runs


def part_of_attempt(a: dict[str, Any]) -> str:
    """The attempt's part; results written before the split have none, and it follows from the
    task's name alone."""
    return str(a.get("part") or split.part_of(a["task"]))


def column(label: str, data: dict[str, Any]) -> str:
    return f"{label} ({data.get('agent', 'tether')})"


def part_report(runs: dict[str, dict[str, Any]]) -> str:
    """Side by side, per part: solved per run, and the mean requests, tokens and time of a
    task run."""
    rows = ["| part | measure | " + " | ".join(column(k, v) for k, v in runs.items()) + " |",
            "| --- | --- |" + " --- |" * len(runs)]
    for part in split.PARTS:
        cells: dict[str, list[str]] = {"solved per run": [], "requests a task run": [],
                                       "prompt / completion tokens a task run": [],
                                       "seconds a task run": []}
        for data in runs.values():
            names = [t for t in data.get("tasks", []) if split.part_of(t) == part]
            done = [a for a in data["attempts"] if part_of_attempt(a) == part]
            if not done:
                for cell in cells.values():
                    cell.append("-")
                continue
            repeats = sorted({a["repeat"] for a in done})
            cells["solved per run"].append(" + ".join(
                f"{sum(a['solved'] for a in done if a['repeat'] == r)}/{len(names)}"
                for r in repeats))
            cells["requests a task run"].append(f"{mean(done, 'requests'):.1f}")
            cells["prompt / completion tokens a task run"].append(
                f"{mean(done, 'prompt_tokens'):,.0f} / {mean(done, 'completion_tokens'):,.0f}")
            cells["seconds a task run"].append(f"{mean(done, 'wall_s'):.0f}")
        if all(c == "-" for c in cells["solved per run"]):
            continue
        for measure, values in cells.items():
            rows.append(f"| {part} | {measure} | " + " | ".join(values) + " |")
    return "\n".join(rows)


def task_report(runs: dict[str, dict[str, Any]]) -> str:
    """Per task (held-out first): solved runs and mean requests, prompt tokens and seconds."""
    keys = {(part_of_attempt(a), a["task"]) for data in runs.values() for a in data["attempts"]}
    ordered = sorted(keys, key=lambda k: (split.PARTS.index(k[0]) * -1, k[1]))
    head = ("| part | task | "
            + " | ".join(f"{column(k, v)}: solved, req, prompt tok, s" for k, v in runs.items())
            + " |")
    rows = [head, "| --- | --- |" + " --- |" * len(runs)]
    for part, task in ordered:
        cells = [task_cell([a for a in data["attempts"] if a["task"] == task])
                 for data in runs.values()]
        rows.append(f"| {part} | `{task}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def report(labels: list[str], results_dir: Path) -> str:
    runs = load_runs(labels, results_dir)
    return part_report(runs) + "\n\n" + task_report(runs)


def task_cell(attempts: list[dict[str, Any]]) -> str:
    if not attempts:
        return "-"
    solved = sum(a["solved"] for a in attempts)
    requests, tokens, wall = (mean(attempts, key) for key in ("requests", "prompt_tokens", "wall_s"))
    return f"{solved}/{len(attempts)}, {requests:.1f}, {tokens:,.0f}, {wall:.0f}"


def mean(attempts: list[dict[str, Any]], key: str) -> float:
    return sum(a[key] for a in attempts) / len(attempts)


def listing(chosen: list[Task]) -> str:
    lines = [f"{t.name:<24} {t.part:<9} {t.request}" for t in chosen]
    sizes = ", ".join(f"{part} {sum(t.part == part for t in chosen)}" for part in split.PARTS)
    return "\n".join([*lines, f"{len(chosen)} tasks: {sizes}"])


# ---------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Run tether or aider on the small-model benchmark.")
    p.add_argument("--selftest", action="store_true",
                   help="no model: each check must fail on the untouched folder and on every near "
                        "miss, and pass on the reference solution")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="selftest: show each case's verdict")
    p.add_argument("--suite", choices=SUITES, default="own",
                   help="own: our tasks (tasks/); exercism: the exercises in --exercism-dir")
    p.add_argument("--exercism-dir", type=Path, default=exercism.DEFAULT_DIR,
                   help="the exercism exercises (default: ../shared/exercism-python beside the repo)")
    p.add_argument("--part", choices=(*split.PARTS, "all"), default="all",
                   help="the fixed part of the tasks to run: tune, held-out or all (default)")
    p.add_argument("--agent", choices=("tether", "aider"), default="tether")
    p.add_argument("--provider", choices=("openai", "ollama", "local"), default="openai",
                   help="local: tether runs the GGUF named by --model in its own process "
                        "(run this script with a Python that has tether's local extra; no "
                        "server, so no warm-up)")
    p.add_argument("--base-url", default="http://127.0.0.1:8089/v1")
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    p.add_argument("--protocol", choices=("auto", "native", "text"),
                   help="passed to tether as --protocol (default: not passed)")
    p.add_argument("--profile", help="passed to tether as --profile (default: not passed)")
    p.add_argument("--max-steps", type=int, help="passed to tether as --max-steps")
    p.add_argument("--tether-src", type=Path, default=DEFAULT_SRC,
                   help="the src folder of the tether to run (PYTHONPATH); default: this checkout")
    p.add_argument("--aider-bin", type=Path, default=DEFAULT_AIDER,
                   help=f"the aider executable (default: {DEFAULT_AIDER}, from setup_aider.sh)")
    p.add_argument("--aider-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for aider (repeatable), e.g. --aider-arg=--auto-test")
    p.add_argument("--tasks", help="comma-separated task names (default: all of the part)")
    p.add_argument("--repeat", type=int, default=1, help="runs of every task (default 1)")
    p.add_argument("--timeout", type=float,
                   help="seconds per task run, overriding each task's own (default 300)")
    p.add_argument("--label", help="results/<label>.json (default: agent-suite-part-model-time)")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR,
                   help="where <label>.json and the transcripts go (default: results/ here)")
    p.add_argument("--tasks-dir", type=Path, default=tasks.TASKS_DIR,
                   help="a folder of task folders (default: tasks/ here)")
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip the first untimed request that fills the server's prompt cache")
    p.add_argument("--keep", action="store_true",
                   help="keep each finished folder as results/<label>/<task>.r<N>.folder")
    p.add_argument("--list", action="store_true",
                   help="list the tasks with their part and request, and the part sizes")
    p.add_argument("--report", metavar="LABELS",
                   help="print Markdown tables from results/<label>.json files (comma-separated): "
                        "per part side by side, then per task")
    p.add_argument("--output-format", choices=("json", "stream-json"), default="json",
                   help="tether's output: json (the result object) or stream-json (every step as "
                        "it happens, then the same result object; a timed-out run keeps its steps)")
    p.add_argument("--levers-off", default="", metavar="A,B",
                   help="small-profile levers to switch off (TETHER_PROFILE_OFF), e.g. terse,stop")
    p.add_argument("--levers-on", default="", metavar="A,B",
                   help="levers off by default to switch on (TETHER_PROFILE_ON), e.g. grammar")
    p.add_argument("--tether-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for tether (repeatable)")
    return p


def make_agent(args: argparse.Namespace) -> Agent:
    if args.agent == "aider":
        return AiderAgent(args.aider_bin.expanduser(), args.provider, args.base_url, args.model,
                          list(args.aider_arg))
    return TetherAgent(args.provider, args.base_url, args.model,
                       args.tether_src.expanduser().resolve(), args.protocol, args.profile,
                       args.max_steps, list(args.tether_arg), args.output_format, args.levers_off,
                       levers_on=args.levers_on)


def default_label(args: argparse.Namespace) -> str:
    stamp = datetime.now().strftime("%Y%m%d-%H%M")
    return f"{args.agent}-{args.suite}-{args.part}-{args.model}-{stamp}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    results_dir = args.results_dir.expanduser().resolve()
    if args.report:
        print(report([x.strip() for x in args.report.split(",") if x.strip()], results_dir))
        return 0
    chosen = tasks.pick(load_suite(args.suite, args.tasks_dir, args.exercism_dir.expanduser()),
                        args.tasks, args.part)
    if args.timeout:
        chosen = [replace(t, timeout=args.timeout) for t in chosen]
    if args.list:
        print(listing(chosen))
        return 0
    if args.selftest:
        return selftest(chosen, args.verbose)
    if not chosen:
        print("no tasks to run", file=sys.stderr)
        return 2
    if args.agent == "aider" and args.provider == "local":
        print("aider needs a model server: --provider local is for tether", file=sys.stderr)
        return 2
    # Each tether process loads the model afresh: nothing a warm-up fills outlives it.
    warmup = args.warmup and args.provider != "local"
    plan = Plan(args.suite, args.part, max(1, args.repeat), args.label or default_label(args),
                args.keep, warmup)
    return benchmark(chosen, make_agent(args), plan, results_dir)


if __name__ == "__main__":
    sys.exit(main())
