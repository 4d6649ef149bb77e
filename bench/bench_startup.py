"""Start-up figures: `tether --version` and importing the turn loop; then the chat's start,
to its first prompt drawn and to ready (a request typed now is sent at once), for a
reference checkout's code (main's, /work/main/src) beside this one's, and simple-harness's
when it is installed (see bench_vs_simple_harness.py).

The chat runs in a pseudo-terminal against a local fake OpenAI-compatible server. Drawn: its
input prompt is on screen. Ready: its status line names the tool protocol, which it shows
once the runtime is built and the provider was asked what the model can do (until then a
request waits, under "starting…"). simple-harness sets everything up before it draws its
prompt, so for it drawn is ready. Wall milliseconds and the CPU the process had used by then.

Prints medians over repeated runs (no assertions: machines are shared and noisy).
Run: python bench/bench_startup.py [runs] [chat runs] [reference src] [simple-harness python]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench_vs_simple_harness import (
    DEFAULT_OTHER,
    Starter,
    harness_app,
    to_drawn_and_ready,
    with_bytecode,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakeserver import FakeServer  # noqa: E402
from ptyapp import PtyApp, app_env, openai_args  # noqa: E402

HERE = Path(__file__).resolve().parents[1] / "src"


def median_ms(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def tether_from(src: Path) -> Starter:
    """The chat, run from the tether source at `src`."""
    def start(url: str, scratch: Path) -> PtyApp:
        env = with_bytecode(app_env(scratch / "home", PYTHONPATH=str(src)))
        return PtyApp(openai_args(url), cwd=scratch / "project", env=env)
    return start


def tether_ready(app: PtyApp) -> bool:
    return "native tools" in app.screen_text()


def chat_start(runs: int, reference: Path, other: str) -> dict[str, tuple[float, ...]]:
    """Prints, and returns, each app's medians: drawn wall, drawn CPU, ready wall, ready CPU (ms)."""
    apps: dict[str, tuple[Starter, str, Callable[[PtyApp], bool]]] = {
        f"tether ({reference})": (tether_from(reference), "›", tether_ready),
        "tether (this checkout)": (tether_from(HERE), "›", tether_ready),
    }
    if Path(other).exists():
        apps["simple-harness 0.6.0"] = (harness_app(other), "❯", lambda app: True)
    samples: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in apps}
    with FakeServer() as server:
        for start, marker, ready in apps.values():  # fills the shared bytecode cache
            to_drawn_and_ready(start, marker, ready, server.url)
        for _ in range(runs):
            for name, (start, marker, ready) in apps.items():
                samples[name].append(to_drawn_and_ready(start, marker, ready, server.url))
    print(f"chat start, {runs} alternating runs each (medians; ms, CPU ms in brackets)")
    if not Path(other).exists():
        print(f"  (simple-harness is not installed at {other}: main's code only)")
    medians = {name: tuple(statistics.median(column) for column in zip(*rows, strict=True))
               for name, rows in samples.items()}
    for name, (drawn, drawn_cpu, ready, ready_cpu) in medians.items():
        print(f"  {name:<36} drawn {drawn:7.1f} ({drawn_cpu:5.0f})   ready {ready:7.1f} ({ready_cpu:5.0f})")
    return medians


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    chat_runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    reference = Path(sys.argv[3]) if len(sys.argv) > 3 else Path("/work/main/src")
    other = sys.argv[4] if len(sys.argv) > 4 else DEFAULT_OTHER
    python = sys.executable
    rows = [("python -c pass (interpreter floor)", [python, "-c", "pass"])]
    script = shutil.which("tether")
    if script:
        rows.append(("tether --version", [script, "--version"]))
    rows += [
        ("python -m tether --version", [python, "-m", "tether", "--version"]),
        ("import tether.engine.loop", [python, "-c", "import tether.engine.loop"]),
        ("import tether.runtime (everything -p needs)", [python, "-c", "import tether.runtime"]),
    ]
    print(f"start-up, median of {runs} runs")
    for label, command in rows:
        print(f"  {label:<46} {median_ms(command, runs):7.1f} ms")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("  (PYTHONDONTWRITEBYTECODE is set: the figures above include compiling)")
    chat_start(chat_runs, reference, other)


if __name__ == "__main__":
    main()
