"""Harness overhead per tool round trip, over a 100-step scripted session.

The fake model server runs in a separate process with zero latency and always
asks for one read_file call, so the CPU time this process spends per step is
the harness's own: encoding the growing history, parsing the stream,
dispatching, windowing, recording evidence. Prints CPU ms per step early,
middle and late in the session, to show how it grows with history.
Run: python bench/bench_loop.py [steps]
"""

from __future__ import annotations

import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakeserver import FakeServer, Reply  # noqa: E402

from tether.core.loop import Conversation  # noqa: E402
from tether.runtime import RunOptions, build_runtime  # noqa: E402
from tether.store.config import Settings  # noqa: E402
from tether.ui.headless import HeadlessUI  # noqa: E402


def serve(port_queue: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    server = FakeServer(chunk_reply())
    server.default_reply = Reply(tool_calls=[("read_file", {"filepath": "data.txt"})], chunk_size=64)
    server.start()
    port_queue.put(server.url)
    stop.wait()
    server.stop()


def chunk_reply() -> list[Reply]:
    return []


class TimingUI(HeadlessUI):
    """Records process CPU time at the end of every tool call."""

    def __init__(self) -> None:
        super().__init__("json", out=open("/dev/null", "w"), err=open("/dev/null", "w"))  # noqa: SIM115
        self.marks: list[float] = []

    def tool_end(self, evidence) -> None:  # noqa: ANN001
        self.marks.append(time.process_time())


async def session(url: str, root: Path, home: Path, steps: int) -> list[float]:
    settings = Settings(provider="openai", openai_base_url=url + "/v1", model="bench",
                        max_steps=steps, soft_pressure_after=steps,
                        context_window=1_000_000)  # nothing trimmed: history grows in full
    ui = TimingUI()
    runtime = build_runtime(settings, RunOptions(root=root, home=home), ui, {"OPENAI_API_KEY": "x"})
    await runtime.start()  # the context guard is part of the harness, so it is measured too
    runtime.loop.mode = "native"
    runtime.git.enabled = False
    try:
        await runtime.loop.run_turn(Conversation(), "read data.txt again and again")
    finally:
        await runtime.aclose()
    return [(b - a) * 1000 for a, b in zip(ui.marks, ui.marks[1:], strict=False)]


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    urls: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(urls, stop), daemon=True)
    server.start()
    url = urls.get(timeout=10)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root, home = Path(tmp) / "p", Path(tmp) / "h"
            root.mkdir()
            (root / "data.txt").write_text("".join(f"line {i} of the data file\n" for i in range(40)))
            per_step = asyncio.run(session(url, root, home, steps))
    finally:
        stop.set()
        server.join(5)
    print(f"harness CPU per tool round trip, {len(per_step) + 1} steps (model latency zero)")
    for label, window in (("steps 2-11", per_step[:10]), ("middle 10", per_step[len(per_step) // 2 - 5:][:10]),
                          ("last 10", per_step[-10:])):
        print(f"  {label:<12} median {statistics.median(window):6.2f} ms   max {max(window):6.2f} ms")
    print(f"  growth last/first: {statistics.median(per_step[-10:]) / statistics.median(per_step[:10]):.2f}x")


if __name__ == "__main__":
    main()
