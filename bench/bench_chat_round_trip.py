"""tether beside simple-harness 0.6.0, in one run: CPU per tool round trip in the chat.

Both apps run in a pseudo-terminal, as a person would use them, against the same local
fake OpenAI-compatible server with zero latency. The server answers the first STEPS
requests with one native read_file call of a small file and then with "Done.", so one
request makes a turn of STEPS tool round trips. The figure is the CPU the app's process
used from sending the request until "Done." is on screen (user + system, from /proc),
divided by STEPS: streaming, parsing, running the tool, showing it, keeping the history.
simple-harness asks "Continue?" every 10 calls; each is answered "y" (its CPU counts).
The runs alternate, so both meet the same machine load.

simple-harness lives in a virtual environment of its own (see bench_vs_simple_harness.py).
Prints the medians and their ratio (no assertions: machines are shared and noisy).
Run: python bench/bench_chat_round_trip.py [runs] [steps] [simple-harness python]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench_vs_simple_harness import (
    DEFAULT_OTHER,
    TIMEOUT,
    cpu_ms,
    harness_app,
    prompt_on_screen,
    tether_app,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakeserver import FakeServer, Reply  # noqa: E402
from ptyapp import PtyApp  # noqa: E402

DATA = "".join(f"line {n} of the data file\n" for n in range(10))
ASKS_TO_GO_ON = "Continue?"


def turn_cpu_per_step(start: Callable[[str, Path], PtyApp], marker: str, steps: int,
                      answers_go_on: bool, ready: Callable[[PtyApp], bool]) -> float:
    """One app, one request of `steps` round trips: CPU ms per round trip."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        project = scratch / "project"
        project.mkdir()
        (project / "data.txt").write_text(DATA)
        call = Reply(tool_calls=[("read_file", {"filepath": str(project / "data.txt")})],
                     chunk_size=64)
        with FakeServer([call] * steps + [Reply(text="Done.")]) as server:
            server.default_reply = Reply(text="Done.")
            with start(server.url, scratch) as app:
                app.wait_for(lambda _: prompt_on_screen(app, marker) and ready(app), TIMEOUT,
                             "the first prompt, the app ready")
                before = cpu_ms(app.pid)
                app.line("read data.txt again and again")
                finish_turn(app, answers_go_on)
                used = cpu_ms(app.pid) - before
                app.wait_for(lambda _: app.cursor_line().strip().startswith(marker), TIMEOUT,
                             "the prompt after the turn")
                app.ctrl_d()
                app.wait_exit()
    return used / steps


def runtime_built(app: PtyApp) -> bool:
    """tether builds its runtime behind the first prompt; the status line names the tool
    protocol once it has, and that build is start-up, not a round trip."""
    return "native tools" in app.screen_text()


def finish_turn(app: PtyApp, answers_go_on: bool) -> None:
    """Wait for "Done.", answering simple-harness's question every 10 calls."""
    while True:
        app.wait_for(lambda _: "Done." in app.output_since_mark()
                     or (answers_go_on and ASKS_TO_GO_ON in app.output_since_mark()),
                     TIMEOUT * 5, "the end of the turn")
        if "Done." in app.output_since_mark():
            return
        app.mark()
        app.send("y\r")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    other = sys.argv[3] if len(sys.argv) > 3 else DEFAULT_OTHER
    if not Path(other).exists():
        sys.exit(f"no simple-harness interpreter at {other} (see bench_vs_simple_harness.py)")
    apps = {
        "tether": (lambda url, scratch: tether_app(url, scratch, "--max-steps", str(steps + 5)),
                   "›", False, runtime_built),
        "simple-harness 0.6.0": (harness_app(other), "❯", True, lambda app: True),
    }
    cpu: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(runs):
        for name, (start, marker, answers, ready) in apps.items():
            cpu[name].append(turn_cpu_per_step(start, marker, steps, answers, ready))
    print(f"CPU per tool round trip in the chat, a turn of {steps} calls, {runs} alternating runs")
    medians = {name: statistics.median(values) for name, values in cpu.items()}
    for name, values in cpu.items():
        print(f"  {name:<22} {medians[name]:6.2f} ms   (min {min(values):.2f}, max {max(values):.2f})")
    print(f"  ratio tether / simple-harness: {medians['tether'] / medians['simple-harness 0.6.0']:.2f}")


if __name__ == "__main__":
    main()
