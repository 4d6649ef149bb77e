"""Time to the first prompt: from starting `tether` until its input line `› ` is on screen.

The app runs in a pseudo-terminal (as a person would start it) against the
local fake model server, so the figure includes the interpreter, the imports,
building the runtime, asking the server whether the model has native tools and
drawing the prompt. Each run gets a fresh TETHER_HOME and project folder.

Prints the median and the spread (no assertions: machines are shared and noisy).
Run: python bench/bench_first_prompt.py [runs]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakeserver import FakeServer  # noqa: E402
from ptyapp import PtyApp, app_env, openai_args  # noqa: E402

PROMPT = "› "
TIMEOUT = 30.0


def prompt_visible(app: PtyApp) -> bool:
    """The input line is drawn: a screen line starting with the prompt marker."""
    return any(line.startswith(PROMPT) or line == PROMPT.rstrip() for line in app.lines())


def one_run(url: str, scratch: Path) -> float:
    """Seconds from spawning the app until its prompt is visible."""
    project, home = scratch / "project", scratch / "home"
    project.mkdir()
    started = time.perf_counter()
    with PtyApp(openai_args(url), cwd=project, env=app_env(home)) as app:
        app.wait_for(lambda _: prompt_visible(app), TIMEOUT, "the first prompt")
        elapsed = time.perf_counter() - started
        app.ctrl_d()
        app.wait_exit()
    return elapsed


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    samples = []
    with FakeServer() as server:
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as scratch:
                samples.append(one_run(server.url, Path(scratch)) * 1000)
    print(f"time to the first prompt, {runs} runs")
    print(f"  median {statistics.median(samples):7.1f} ms")
    print(f"  min    {min(samples):7.1f} ms")
    print(f"  max    {max(samples):7.1f} ms")


if __name__ == "__main__":
    main()
