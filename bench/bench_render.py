"""How rendering cost grows with the length of a streamed markdown reply.

Streams 25, 50 and 100 KB replies (headings, paragraphs, lists, code blocks,
tables) in 4-character chunks into a terminal console writing to memory, and
prints the CPU time of each (median of 3 runs). Linear cost shows as a
100KB/25KB ratio near 4.

Two clocks: the real one with the default 0.05 s repaint interval (what a
user's terminal sees), and a fake one that advances a full second per call, so
the live region is redrawn after every chunk (the worst case).

Run: python bench/bench_render.py
"""

from __future__ import annotations

import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from rich.console import Console  # noqa: E402

from tether.ui.terminal.render import MarkdownStream  # noqa: E402

SIZES_KB = (25, 50, 100)
CHUNK = 4
RUNS = 3


def _section(number: int) -> str:
    """One realistic stretch of an assistant reply."""
    code = "\n".join(
        [
            f"def handle_{number}(request, *, retries: int = 3) -> dict:",
            '    """Fetch the record and retry on transient errors."""',
            "    for attempt in range(retries):",
            "        try:",
            f"            return client.get(f'/items/{{request.id}}/{number}')",
            "        except TimeoutError:",
            "            time.sleep(2 ** attempt)",
            "",
            "    raise RuntimeError('gave up')",
        ]
    )
    rows = "\n".join(f"| `opt_{number}_{i}` | {i * 10} | enables feature {i} |" for i in range(5))
    return (
        f"## Step {number}: update the handler\n\n"
        f"The handler in `service/handler_{number}.py` retries without a delay, so a slow "
        "backend gets hammered. The change below adds **exponential backoff** and keeps "
        "the signature the same, so callers do not change.\n"
        "It also documents the behaviour, which was only implied before.\n\n"
        "- read the current handler and its tests\n"
        "- add the backoff loop\n"
        "  - keep the retry count configurable\n"
        "- run the test suite\n\n"
        f"```python\n{code}\n```\n\n"
        "| option | default | meaning |\n|---|---:|---|\n"
        f"{rows}\n\n"
        "> Note: the sleep is real time; tests should patch `time.sleep`.\n\n"
        "1. Apply the change.\n2. Run `pytest -q`.\n3. Commit.\n\n"
    )


def make_reply(size_bytes: int) -> str:
    parts: list[str] = ["# Plan\n\nHere is what I will do, step by step.\n\n"]
    number = 0
    while sum(map(len, parts)) < size_bytes:
        number += 1
        parts.append(_section(number))
    return "".join(parts)[:size_bytes]


def _every_call_a_second_later() -> Callable[[], float]:
    now = 0.0

    def clock() -> float:
        nonlocal now
        now += 1.0
        return now

    return clock


def render_once(reply: str, clock: Callable[[], float] | None) -> tuple[float, int]:
    """CPU seconds to stream `reply`, and how many times the live region was drawn."""
    console = Console(file=io.StringIO(), force_terminal=True, width=100, height=40)
    stream = (
        MarkdownStream(console, min_interval=0.05)
        if clock is None
        else MarkdownStream(console, min_interval=0.05, clock=clock)
    )
    started = time.process_time()
    for index in range(0, len(reply), CHUNK):
        stream.feed(reply[index : index + CHUNK])
    stream.finish()
    return time.process_time() - started, stream.repaints


def median_run(reply: str, fake_clock: bool) -> tuple[float, int]:
    results = [
        render_once(reply, _every_call_a_second_later() if fake_clock else None)
        for _ in range(RUNS)
    ]
    return statistics.median(r[0] for r in results), results[0][1]


def main() -> None:
    print(f"streamed in {CHUNK}-character chunks, CPU seconds, median of {RUNS} runs\n")
    print(f"{'size':>6}  {'real clock':>10}  {'repaints':>8}  {'every chunk':>11}  {'repaints':>8}")
    timings: dict[int, tuple[float, float]] = {}
    for size in SIZES_KB:
        reply = make_reply(size * 1024)
        real, real_paints = median_run(reply, fake_clock=False)
        worst, worst_paints = median_run(reply, fake_clock=True)
        timings[size] = (real, worst)
        print(f"{size:>4}KB  {real:>10.3f}  {real_paints:>8}  {worst:>11.3f}  {worst_paints:>8}")
    first, last = SIZES_KB[0], SIZES_KB[-1]
    real_ratio = timings[last][0] / timings[first][0]
    worst_ratio = timings[last][1] / timings[first][1]
    print(f"\nratio {last}KB/{first}KB: real clock {real_ratio:.2f}, every chunk {worst_ratio:.2f}")
    print("(linear cost gives about 4)")


if __name__ == "__main__":
    main()
