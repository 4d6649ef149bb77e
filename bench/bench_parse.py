"""How the text protocol's cost grows with the size of a reply.

Times (median of 3 runs, CPU) the stream filter fed a reply holding one huge
write_file call and 100,000 words of answer in 200-character chunks, and
parse_reply on a write_file call whose body has 40,000 lines; each at 1/4, 1/2
and the full size, so linear cost shows as a full/quarter ratio near 4. The
tests check what these produce; the times live here, where a slow machine
cannot fail anything.

Run: python bench/bench_parse.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tether.core.messages import ToolCall  # noqa: E402
from tether.core.toolspec import (
    ToolTable,  # noqa: E402
)
from tether.protocol import StreamFilter, parse_reply, render_call_as_text  # noqa: E402
from tether.tools.file_table import FILE_TOOLS  # noqa: E402

RUNS = 3
FRACTIONS = (0.25, 0.5, 1.0)
TABLE = ToolTable(list(FILE_TOOLS))
CALL = '{"name": "write_file", "arguments": {"filepath": "game.py"}}'


def filter_reply(scale: float) -> str:
    body = ("x = '<content>' \" \\ {}\n" * int(50_000 * scale))
    return (
        f"Start <tool_call>\n{CALL}\n<content>\n{body}\n</content>\n</tool_call> end "
        + "word " * int(100_000 * scale)
    )


def feed(reply: str) -> None:
    stream = StreamFilter(TABLE)
    for pos in range(0, len(reply), 200):
        stream.feed(reply[pos : pos + 200])
    stream.flush()


def big_call(scale: float) -> str:
    body = 'line with "quotes" and } and \\ and <tags>\n' * int(40_000 * scale)
    call = ToolCall("c", "write_file", {"filepath": "big.txt", "content": body})
    return render_call_as_text(call, TABLE)


def cpu_seconds(work: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return statistics.median(times)


def figures(make: Callable[[float], str], run: Callable[[str], object]) -> str:
    times = {}
    for fraction in FRACTIONS:
        text = make(fraction)
        times[fraction] = cpu_seconds(lambda: run(text))  # noqa: B023 (called right here)
    shown = ", ".join(f"{f:g}: {s:.3f} s" for f, s in times.items())
    ratio = times[1.0] / times[0.25] if times[0.25] else float("nan")
    return f"{shown} (full/quarter = {ratio:.1f})"


def main() -> None:
    print("stream filter:", figures(filter_reply, feed))
    print("parse_reply:", figures(big_call, lambda text: parse_reply(text, TABLE)))


if __name__ == "__main__":
    main()
