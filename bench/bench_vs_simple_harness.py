"""tether beside simple-harness 0.6.0, in one run: time to the first prompt.

Both apps start in a pseudo-terminal (as a person would start them), each with a fresh
home folder and project, pointed at the same local fake OpenAI-compatible server; the runs
alternate, so both meet the same machine load. The figure is from spawning the process
until its input prompt is on screen (tether's `› `, simple-harness's `❯`), in wall time and
in the CPU time the app's process had used by then (user + system, from /proc: on a loaded
machine the wall time measures the queue for the core, the CPU time the app's own work).

simple-harness lives in a virtual environment of its own:
    python -m venv /tmp/sh-venv && /tmp/sh-venv/bin/pip install simple-harness==0.6.0
Both read compiled bytecode from one scratch cache (PYTHONPYCACHEPREFIX), filled by one
uncounted warm-up start each, as an installed package would have it: an environment with
PYTHONDONTWRITEBYTECODE set would otherwise recompile tether's source (an editable install)
on every start while simple-harness's wheel install reads its compiled files.
Prints the medians and their ratio (no assertions: machines are shared and noisy).
Run: python bench/bench_vs_simple_harness.py [runs] [simple-harness python]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakeserver import FakeServer  # noqa: E402
from ptyapp import PtyApp, app_env, openai_args  # noqa: E402

TIMEOUT = 60.0
Starter = Callable[[str, Path], PtyApp]
DEFAULT_OTHER = "/tmp/sh-venv/bin/python"


BYTECODE = Path(tempfile.gettempdir()) / "tether-bench-bytecode"
"""The compiled-bytecode cache both apps share for the run (see the module's docstring)."""


def with_bytecode(env: dict[str, str]) -> dict[str, str]:
    """The app's environment, reading and writing compiled bytecode under BYTECODE."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(BYTECODE)
    return env


def tether_app(url: str, scratch: Path, *extra: str) -> PtyApp:
    env = with_bytecode(app_env(scratch / "home"))
    return PtyApp(openai_args(url, *extra), cwd=scratch / "project", env=env)


def harness_app(python: str) -> Callable[[str, Path], PtyApp]:
    def start(url: str, scratch: Path) -> PtyApp:
        home = scratch / "home"
        home.mkdir()
        connection = {"active": "openai", "providers": {
            "openai": {"base_url": url + "/v1", "model": "fake", "api_key": "x"}}}
        (home / "providers.json").write_text(json.dumps(connection))
        env = with_bytecode(app_env(home, LOCALCHAT_HOME=str(home), SIMPLE_HARNESS_ACCEPT_TERMS="1"))
        return PtyApp([], cwd=scratch / "project", env=env, program=python,
                      python_args=("-m", "simple_harness"))
    return start


def prompt_on_screen(app: PtyApp, marker: str) -> bool:
    return any(line.strip().startswith(marker) for line in app.lines())


def cpu_ms(pid: int) -> float:
    """The CPU time a process has used so far (user + system), in milliseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def one_run(start: Starter, marker: str, url: str) -> tuple[float, float]:
    """Milliseconds from spawning the app until its prompt is visible: wall and CPU."""
    drawn, drawn_cpu, _, _ = to_drawn_and_ready(start, marker, lambda app: True, url)
    return drawn, drawn_cpu


def to_drawn_and_ready(start: Starter, marker: str, ready: Callable[[PtyApp], bool],
                       url: str) -> tuple[float, float, float, float]:
    """Wall ms and CPU ms at the first prompt drawn, then at ready."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        (scratch / "project").mkdir()
        began = time.perf_counter()
        with start(url, scratch) as app:
            app.wait_for(lambda _: prompt_on_screen(app, marker), TIMEOUT, "the first prompt")
            drawn, drawn_cpu = (time.perf_counter() - began) * 1000, cpu_ms(app.pid)
            app.wait_for(lambda _: ready(app), TIMEOUT, "ready")
            at_ready, ready_cpu = (time.perf_counter() - began) * 1000, cpu_ms(app.pid)
            app.ctrl_d()
            app.wait_exit()
    return drawn, drawn_cpu, at_ready, ready_cpu


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    other = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_OTHER
    if not Path(other).exists():
        sys.exit(f"no simple-harness interpreter at {other} (see this file's docstring)")
    apps = {"tether": (tether_app, "›"), "simple-harness 0.6.0": (harness_app(other), "❯")}
    wall: dict[str, list[float]] = {name: [] for name in apps}
    cpu: dict[str, list[float]] = {name: [] for name in apps}
    with FakeServer() as server:
        for start, marker in apps.values():  # the warm-up start that fills the bytecode cache
            one_run(start, marker, server.url)
        for _ in range(runs):
            for name, (start, marker) in apps.items():
                took, used = one_run(start, marker, server.url)
                wall[name].append(took)
                cpu[name].append(used)
    print(f"time to the first prompt, {runs} alternating runs each (medians)")
    for label, samples in (("wall", wall), ("CPU", cpu)):
        medians = {name: statistics.median(values) for name, values in samples.items()}
        for name, values in samples.items():
            print(f"  {label:<4} {name:<22} {medians[name]:7.1f} ms   "
                  f"(min {min(values):.1f}, max {max(values):.1f})")
        ours, theirs = medians["tether"], medians["simple-harness 0.6.0"]
        print(f"  {label:<4} ratio tether / simple-harness: {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
