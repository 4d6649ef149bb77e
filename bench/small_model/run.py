"""The small-model benchmark: real coding tasks, driven through `tether -p --auto`.

Each task is a folder under tasks/: `project/` (the files the model works on),
`task.toml` (the one-line request, a timeout, the reference answer for questions
and the near misses), `check.py` (run in the finished folder, exit 0 = solved)
and `solution/` (files laid over the project to make the reference solution).

    python bench/small_model/run.py --selftest
    python bench/small_model/run.py --provider openai --base-url http://127.0.0.1:8089/v1 \\
        --model qwen2.5-coder-1.5b --protocol text --repeat 2 --label baseline-text

A run copies each task's project into a fresh temporary git repository, runs
tether there with its own empty TETHER_HOME, checks the folder, and writes
results/<label>.json (kept) and results/<label>/ (transcripts, not committed).
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
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
TASKS_DIR = HERE / "tasks"
RESULTS_DIR = HERE / "results"
DEFAULT_SRC = HERE.parents[1] / "src"
DEFAULT_TIMEOUT = 300.0
CHECK_TIMEOUT = 180.0
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
}


# ---------------------------------------------------------------- tasks


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

    @property
    def project(self) -> Path:
        return self.folder / "project"

    @property
    def solution(self) -> Path:
        return self.folder / "solution"

    @property
    def check(self) -> Path:
        return self.folder / "check.py"


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
    )


def all_tasks(folder: Path = TASKS_DIR) -> list[Task]:
    return [load_task(p) for p in sorted(folder.iterdir()) if (p / "task.toml").is_file()]


def pick_tasks(names: str | None, folder: Path = TASKS_DIR) -> list[Task]:
    tasks = all_tasks(folder)
    if not names:
        return tasks
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {t.name: t for t in tasks}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise SystemExit(f"unknown task(s): {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in wanted]


# ---------------------------------------------------------------- folders and checks


def overlay(src: Path, dest: Path) -> None:
    """Copy every file of `src` over `dest`, keeping the folder layout."""
    shutil.copytree(src, dest, dirs_exist_ok=True)


def fresh_repo(task: Task, parent: Path) -> Path:
    """The task's project in a new git repository with one commit."""
    work = parent / "repo"
    shutil.copytree(task.project, work)
    env = {**os.environ, **GIT_IDENTITY}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "task"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
    return work


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


def run_check(task: Task, work: Path, result_file: Path) -> CheckOutcome:
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
    shutil.copytree(task.project, work)
    if files is not None:
        overlay(files, work)
    result_file = scratch / "result.json"
    result_file.write_text(json.dumps(fake_result(answer)), encoding="utf-8")
    return run_check(task, work, result_file)


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


def selftest(tasks: list[Task], verbose: bool = False) -> int:
    bad = 0
    for task in tasks:
        problems = selftest_task(task, verbose)
        print(f"{'ok  ' if not problems else 'BAD '} {task.name} "
              f"({1 + len(task.near_misses)} failing case(s), 1 reference)")
        for problem in problems:
            print(f"     {problem}")
        bad += bool(problems)
    print(f"selftest: {len(tasks) - bad}/{len(tasks)} tasks have strict checks and a passing reference")
    return 1 if bad else 0


# ---------------------------------------------------------------- driving tether


@dataclass
class Target:
    """Where and how tether runs: the model server, the source tree and the flags."""

    provider: str
    base_url: str
    model: str
    tether_src: Path
    protocol: str | None = None
    profile: str | None = None
    max_steps: int | None = None
    extra: list[str] = field(default_factory=list)
    output_format: str = "json"
    levers_off: str = ""
    """Small-profile levers to switch off (tether's TETHER_PROFILE_OFF), to measure each one."""

    def command(self, request: str) -> list[str]:
        cmd = [sys.executable, "-m", "tether", "-p", request, "--auto",
               "--output-format", self.output_format,
               "--provider", self.provider, "--base-url", self.base_url, "--model", self.model]
        if self.protocol:
            cmd += ["--protocol", self.protocol]
        if self.profile:
            cmd += ["--profile", self.profile]
        if self.max_steps:
            cmd += ["--max-steps", str(self.max_steps)]
        return cmd + self.extra

    def env(self, home: Path) -> dict[str, str]:
        """The caller's environment without tether settings, this source first, a fresh home."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
        env.update(GIT_IDENTITY)
        env["TETHER_HOME"] = str(home)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(self.tether_src)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        # The model's commands find this interpreter (and pytest) as `python`.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env.setdefault("OPENAI_API_KEY", "none")
        # This interpreter carries tether's own test plugins; pytest-asyncio's configuration
        # warning would open every test run of the tasks, whose tests use none of it.
        env["PYTEST_ADDOPTS"] = "-p no:asyncio"
        if self.levers_off:
            env["TETHER_PROFILE_OFF"] = self.levers_off
        return env


@dataclass
class Attempt:
    task: str
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
    error: str  # tether's error message when the run ended in one (e.g. the server did not answer)


def run_process(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float, out: Path,
                err: Path) -> tuple[int | None, bool]:
    """Run in its own process group, so a timeout ends tether and every command it started.
    Output goes straight to the transcript files, to be watched while it runs."""
    with out.open("w", encoding="utf-8") as stdout, err.open("w", encoding="utf-8") as stderr:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                                stderr=stderr, start_new_session=True)
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return None, True
        except BaseException:  # the runner itself is stopped: leave no tether behind
            stop_group(proc)
            raise


def stop_group(proc: subprocess.Popen[str]) -> None:
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


def result_object(stdout: str) -> dict[str, Any]:
    """The last `"type": "result"` object tether printed, or {} when there is none."""
    for line in reversed(stdout.splitlines()):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("type") == "result":
            return obj
    return {}


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


def attempt(task: Task, repeat: int, target: Target, transcripts: Path, scratch: Path,
            keep: bool) -> Attempt:
    """One run of one task. `scratch` is the same folder for every attempt of a benchmark run:
    the project root tether sees (and puts in its system prompt) names no task and stays the
    same, so a server's prompt cache serves every task."""
    for leftover in scratch.iterdir():
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    work = fresh_repo(task, scratch)
    home = scratch / "home"
    home.mkdir()
    # A busy model server may take minutes before its first token: the task's timeout is
    # the one time limit, not tether's per-response wait.
    (home / "config.toml").write_text(f"request_timeout = {task.timeout}\n", encoding="utf-8")
    stem = transcripts / f"{task.name}.r{repeat}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    out_file = Path(f"{stem}.out.{'jsonl' if target.output_format == 'stream-json' else 'json'}")
    started = time.monotonic()
    code, timed_out = run_process(target.command(task.request), work, target.env(home),
                                  task.timeout, out_file, Path(f"{stem}.stderr.txt"))
    wall = time.monotonic() - started
    result = result_object(out_file.read_text(encoding="utf-8", errors="replace"))
    result_file = scratch / "result.json"
    result_file.write_text(json.dumps(result), encoding="utf-8")
    Path(f"{stem}.diff").write_text(changes_patch(work), encoding="utf-8")  # before the check
    check = run_check(task, work, result_file)
    Path(f"{stem}.check.txt").write_text(check.output + "\n", encoding="utf-8")
    if keep:
        shutil.copytree(work, Path(f"{stem}.folder"), dirs_exist_ok=True)
    usage = result.get("usage") or {}
    return Attempt(
        task=task.name, repeat=repeat, solved=check.solved, exit_code=code, timed_out=timed_out,
        wall_s=round(wall, 1), requests=int(result.get("num_turns") or 0),
        prompt_tokens=int(usage.get("input_tokens") or 0),
        completion_tokens=int(usage.get("output_tokens") or 0),
        cached_tokens=int(usage.get("cached_tokens") or 0),
        stop_reason=str(result.get("stop_reason") or ("timeout" if timed_out else "no result")),
        tool_calls=[c.get("name", "?") for c in result.get("tool_calls") or []],
        check=first_line(check.output),
        error=str(result.get("result") or "") if result.get("stop_reason") == "error" else "",
    )


def first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]


# ---------------------------------------------------------------- reporting


def tether_revision(src: Path) -> str:
    """The last commit that changed the tether source folder, "+changes" when it has changed
    since (so a benchmark branch's own commits do not count as tether changes)."""
    commit = subprocess.run(["git", "log", "-1", "--format=%h", "--", "."], cwd=src,
                            capture_output=True, text=True).stdout.strip()
    if not commit:
        return "unknown"
    changes = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=src,
                             capture_output=True, text=True).stdout.strip()
    return commit + ("+changes" if changes else "")


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


def default_label(target: Target) -> str:
    stamp = datetime.now().strftime("%Y%m%d-%H%M")
    return f"{target.model}-{target.protocol or 'auto'}-{target.profile or 'default'}-{stamp}"


def tether_problem(target: Target) -> str | None:
    """Why tether cannot run from this source with this interpreter, or None when it can."""
    done = subprocess.run([sys.executable, "-m", "tether", "--help"], capture_output=True, text=True,
                          env=target.env(Path(tempfile.gettempdir())))
    if done.returncode != 0:
        return (f"{sys.executable} -m tether --help failed with PYTHONPATH={target.tether_src} "
                f"(is this the interpreter of tether's environment?):\n{done.stderr[-800:]}")
    if target.profile and "--profile" not in done.stdout:
        return f"the tether at {target.tether_src} has no --profile flag; run without --profile"
    return None


def benchmark(tasks: list[Task], target: Target, repeats: int, label: str, keep: bool,
              results_dir: Path = RESULTS_DIR, warmup: bool = True) -> int:
    problem = tether_problem(target)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, stopped_by_signal)
    # Started in the background, the runner may inherit an ignored SIGINT, and tether with it;
    # a handler of our own is reset to the default in tether, so a timeout's Ctrl-C reaches it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    out_file = results_dir / f"{label}.json"
    transcripts = results_dir / label
    meta = {
        "label": label,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "provider": target.provider, "base_url": target.base_url, "model": target.model,
        "protocol": target.protocol, "profile": target.profile, "max_steps": target.max_steps,
        "levers_off": target.levers_off,
        "output_format": target.output_format, "timeout_s": sorted({t.timeout for t in tasks}),
        "tether_src": str(target.tether_src), "tether_revision": tether_revision(target.tether_src),
        "repeat": repeats, "tasks": [t.name for t in tasks],
    }
    attempts: list[Attempt] = []
    scratch = Path(tempfile.mkdtemp(prefix="tether-bench-"))
    try:
        if warmup:
            warm_up(tasks[0], target, transcripts, scratch)
        for repeat, task in schedule(tasks, repeats):
            result = attempt(task, repeat, target, transcripts, scratch, keep)
            attempts.append(result)
            print(describe(result), flush=True)
            write_results(out_file, meta, attempts, repeats, len(tasks))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    per_run = summary(attempts, repeats, len(tasks))["solved_per_run"]
    print(f"solved {' + '.join(f'{n}/{len(tasks)}' for n in per_run)} -> {out_file}")
    return 0


WARMUP_REQUEST = "Reply with the single word: ready"


def warm_up(task: Task, target: Target, transcripts: Path, scratch: Path) -> None:
    """One untimed, unrecorded request first, so the server has tether's system prompt in its
    cache and the first task does not pay for it alone."""
    warm = Task("warmup", task.folder, WARMUP_REQUEST, max(task.timeout, 1800), "", ())
    started = time.monotonic()
    outcome = attempt(warm, 0, target, transcripts, scratch, keep=False)
    print(f"warm-up: {time.monotonic() - started:.0f} s, {outcome.prompt_tokens} prompt tokens",
          flush=True)


def stopped_by_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through run_process, which stops the running tether


def schedule(tasks: list[Task], repeats: int) -> Iterator[tuple[int, Task]]:
    """All tasks once, then all again: a stopped run still has whole repeats."""
    for repeat in range(1, repeats + 1):
        for task in tasks:
            yield repeat, task


def report(labels: list[str], results_dir: Path) -> str:
    """A Markdown table from results files: per task, solved runs and mean figures, per label."""
    runs = {label: json.loads((results_dir / f"{label}.json").read_text()) for label in labels}
    tasks = sorted({a["task"] for data in runs.values() for a in data["attempts"]})
    head = "| task | " + " | ".join(f"{label}: solved, req, prompt tok, s" for label in labels) + " |"
    rows = [head, "| --- |" + " --- |" * len(labels)]
    for task in tasks:
        cells = [task_cell([a for a in data["attempts"] if a["task"] == task])
                 for data in runs.values()]
        rows.append(f"| `{task}` | " + " | ".join(cells) + " |")
    totals = []
    for data in runs.values():
        per_run = data["summary"]["solved_per_run"]
        total = data["summary"]["total_per_run"]
        totals.append(" + ".join(f"{n}/{total}" for n in per_run))
    rows.append("| **solved per run** | " + " | ".join(f"**{t}**" for t in totals) + " |")
    return "\n".join(rows)


def task_cell(attempts: list[dict[str, Any]]) -> str:
    if not attempts:
        return "-"
    solved = sum(a["solved"] for a in attempts)
    requests, tokens, wall = (mean(attempts, key) for key in ("requests", "prompt_tokens", "wall_s"))
    return f"{solved}/{len(attempts)}, {requests:.1f}, {tokens:,.0f}, {wall:.0f}"


def mean(attempts: list[dict[str, Any]], key: str) -> float:
    return sum(a[key] for a in attempts) / len(attempts)


# ---------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Run tether on the small-model benchmark tasks.")
    p.add_argument("--selftest", action="store_true",
                   help="no model: each check must fail on the untouched folder and on every near "
                        "miss, and pass on the reference solution")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="selftest: show each case's verdict")
    p.add_argument("--provider", choices=("openai", "ollama"), default="openai")
    p.add_argument("--base-url", default="http://127.0.0.1:8089/v1")
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    p.add_argument("--protocol", choices=("auto", "native", "text"),
                   help="passed to tether as --protocol (default: not passed)")
    p.add_argument("--profile", help="passed to tether as --profile (default: not passed)")
    p.add_argument("--max-steps", type=int, help="passed to tether as --max-steps")
    p.add_argument("--tether-src", type=Path, default=DEFAULT_SRC,
                   help="the src folder of the tether to run (PYTHONPATH); default: this checkout")
    p.add_argument("--tasks", help="comma-separated task names (default: all)")
    p.add_argument("--repeat", type=int, default=1, help="runs of every task (default 1)")
    p.add_argument("--timeout", type=float,
                   help="seconds per task run, overriding each task's own (default 300)")
    p.add_argument("--label", help="results/<label>.json (default: model-protocol-profile-time)")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR,
                   help="where <label>.json and the transcripts go (default: results/ here)")
    p.add_argument("--tasks-dir", type=Path, default=TASKS_DIR,
                   help="a folder of task folders (default: tasks/ here)")
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip the first untimed request that fills the server's prompt cache")
    p.add_argument("--keep", action="store_true",
                   help="keep each finished folder as results/<label>/<task>.r<N>.folder")
    p.add_argument("--list", action="store_true", help="list the tasks and their requests")
    p.add_argument("--report", metavar="LABELS",
                   help="print a Markdown table from results/<label>.json files (comma-separated)")
    p.add_argument("--output-format", choices=("json", "stream-json"), default="json",
                   help="tether's output: json (the result object) or stream-json (every step as "
                        "it happens, then the same result object; a timed-out run keeps its steps)")
    p.add_argument("--levers-off", default="", metavar="A,B",
                   help="small-profile levers to switch off (TETHER_PROFILE_OFF), e.g. terse,stop")
    p.add_argument("--tether-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for tether (repeatable)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.report:
        print(report([x.strip() for x in args.report.split(",") if x.strip()], args.results_dir))
        return 0
    tasks = pick_tasks(args.tasks, args.tasks_dir)
    if args.timeout:
        tasks = [Task(t.name, t.folder, t.request, args.timeout, t.answer, t.near_misses)
                 for t in tasks]
    if args.list:
        for task in tasks:
            print(f"{task.name:<24} {task.request}")
        return 0
    if args.selftest:
        return selftest(tasks, args.verbose)
    src = args.tether_src.expanduser().resolve()
    if not (src / "tether" / "__init__.py").is_file():
        print(f"--tether-src: {src} has no tether package", file=sys.stderr)
        return 2
    target = Target(args.provider, args.base_url, args.model, src, args.protocol, args.profile,
                    args.max_steps, list(args.tether_arg), args.output_format, args.levers_off)
    return benchmark(tasks, target, max(1, args.repeat), args.label or default_label(target),
                     args.keep, args.results_dir, args.warmup)


if __name__ == "__main__":
    sys.exit(main())
