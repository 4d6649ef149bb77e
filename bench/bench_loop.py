"""Harness overhead per tool round trip, over a 100-step scripted session.

The fake model server runs in a separate process with zero latency and always
asks for one read_file call, so the CPU time this process spends per step is
the harness's own: encoding the growing history, parsing the stream,
dispatching, windowing, recording evidence. Prints CPU ms per step early,
middle and late in the session, to show how it grows with history.
The same request bodies are then sent again by a bare httpx client that only reads
the answer's lines and decodes their JSON: the floor a round trip costs in this
process before the harness does anything. The difference is the harness's own part.

`--protocol text` has the model write its calls as text (the text protocol, the default for
local models) instead of native calls. `--against SRC` runs the same rounds on another
checkout's source folder as well (main's, say), alternating with this one so both meet the
same machine load, and prints the two side by side.
Run: python bench/bench_loop.py [steps] [rounds] [--protocol native|text] [--against SRC]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import httpx  # noqa: E402
from fakeserver import FakeServer, Reply  # noqa: E402

import tether.providers._http as http_module  # noqa: E402
from tether.engine.loop import Conversation  # noqa: E402
from tether.runtime import RunOptions, build_runtime  # noqa: E402
from tether.store.config import Settings  # noqa: E402
from tether.ui.headless import HeadlessUI  # noqa: E402

TEXT_CALL = '<tool_call>\n{"name": "read_file", "arguments": {"filepath": "data.txt"}}\n</tool_call>'


def serve(port_queue: multiprocessing.Queue, stop: multiprocessing.Event, protocol: str) -> None:
    server = FakeServer(chunk_reply())
    if protocol == "text":
        server.default_reply = Reply(text=TEXT_CALL, chunk_size=64)
    else:
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


class RecordedBodies:
    """Keeps every request body the provider encodes, to send them again bare."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self._encode = http_module.encode_body

    def __enter__(self) -> RecordedBodies:
        def encode(body: dict) -> bytes:
            data = self._encode(body)
            self.bodies.append(data)
            return data
        http_module.encode_body = encode
        return self

    def __exit__(self, *exc: object) -> None:
        http_module.encode_body = self._encode


async def bare_round_trips(url: str, bodies: list[bytes]) -> list[float]:
    """CPU ms of each body sent by httpx alone, the answer read line by line and decoded."""
    costs = []
    headers = {"Authorization": "Bearer x", "Content-Type": "application/json"}
    async with httpx.AsyncClient() as client:
        for body in bodies:
            start = time.process_time()
            async with client.stream("POST", url + "/v1/chat/completions", content=body,
                                     headers=headers) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip() != "[DONE]":
                        json.loads(line[5:])
            costs.append((time.process_time() - start) * 1000)
    return costs


async def session(url: str, root: Path, home: Path, steps: int, protocol: str) -> list[float]:
    settings = Settings(provider="openai", openai_base_url=url + "/v1", model="bench",
                        max_steps=steps, soft_pressure_after=steps,
                        context_window=1_000_000)  # nothing trimmed: history grows in full
    ui = TimingUI()
    runtime = build_runtime(settings, RunOptions(root=root, home=home), ui, {"OPENAI_API_KEY": "x"})
    await runtime.start()  # the context guard is part of the harness, so it is measured too
    runtime.loop.mode = protocol
    runtime.git.enabled = False
    try:
        await runtime.loop.run_turn(Conversation(), "read data.txt again and again")
    finally:
        await runtime.aclose()
    return [(b - a) * 1000 for a, b in zip(ui.marks, ui.marks[1:], strict=False)]


def one_round(url: str, steps: int, protocol: str) -> tuple[list[float], list[float]]:
    """One session's CPU per step, and the same requests' CPU sent by httpx alone."""
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "p", Path(tmp) / "h"
        root.mkdir()
        (root / "data.txt").write_text("".join(f"line {i} of the data file\n" for i in range(40)))
        with RecordedBodies() as recorded:
            per_step = asyncio.run(session(url, root, home, steps, protocol))
    # Step costs run from one tool call's end to the next: the first request is not in
    # them, and each holds one request.
    return per_step, asyncio.run(bare_round_trips(url, recorded.bodies[1:len(per_step) + 1]))


WINDOW = 10


def windows(count: int) -> list[tuple[str, slice]]:
    middle = count // 2 - WINDOW // 2
    return [("steps 2-11", slice(0, WINDOW)), ("middle 10", slice(middle, middle + WINDOW)),
            ("last 10", slice(count - WINDOW, count))]


def median_of_rounds(rounds: list[list[float]], picked: slice) -> float:
    """The median over rounds of each round's median in the window: the machine's noise
    comes in bursts, so one round can be off as a whole."""
    return statistics.median(statistics.median(costs[picked]) for costs in rounds)


def rounds_here(steps: int, count: int, protocol: str) -> list[tuple[list[float], list[float]]]:
    """`count` rounds with the tether this process imports, against a server of its own."""
    urls: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(urls, stop, protocol), daemon=True)
    server.start()
    url = urls.get(timeout=10)
    try:
        return [one_round(url, steps, protocol) for _ in range(count)]
    finally:
        stop.set()
        server.join(5)


def rounds_of(source: str, steps: int, protocol: str) -> tuple[list[float], list[float]]:
    """One round in a fresh interpreter importing tether from `source`."""
    env = {**os.environ, "PYTHONPATH": source}
    out = subprocess.run([sys.executable, __file__, str(steps), "1", "--protocol", protocol, "--json"],
                         env=env, capture_output=True, text=True, check=True).stdout
    ours, bare = json.loads(out.splitlines()[-1])[0]
    return ours, bare


def report(title: str, ours: list[list[float]], bare: list[list[float]]) -> dict[str, float]:
    print(title)
    print("               tether      httpx alone  tether's own")
    figures = {}
    for label, picked in windows(len(ours[0])):
        mine, floor = median_of_rounds(ours, picked), median_of_rounds(bare, picked)
        figures[label] = (mine, floor)
        print(f"  {label:<12} {mine:6.2f} ms   {floor:6.2f} ms    {mine - floor:6.2f} ms")
    (first, first_floor), (last, last_floor) = figures["steps 2-11"], figures["last 10"]
    print(f"  growth last/first: {last / first:.2f}x (httpx alone {last_floor / first_floor:.2f}x)")
    return {label: mine for label, (mine, _) in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="?", type=int, default=100)
    parser.add_argument("rounds", nargs="?", type=int, default=5)
    parser.add_argument("--protocol", choices=("native", "text"), default="native")
    parser.add_argument("--against", metavar="SRC", help="another checkout's src folder, run alongside")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(rounds_here(args.steps, args.rounds, args.protocol)))
        return
    title = f"CPU per tool round trip, {args.steps} steps, {args.protocol} protocol (model latency zero)"
    if not args.against:
        rounds = rounds_here(args.steps, args.rounds, args.protocol)
        report(f"{title}, median of {args.rounds} rounds", [r[0] for r in rounds], [r[1] for r in rounds])
        return
    here = str(Path(__file__).resolve().parents[1] / "src")
    runs: dict[str, list[tuple[list[float], list[float]]]] = {here: [], args.against: []}
    for _ in range(args.rounds):  # alternating: both meet the same machine load
        for source in runs:
            runs[source].append(rounds_of(source, args.steps, args.protocol))
    figures = {source: report(f"{title}, median of {args.rounds} rounds, tether from {source}",
                              [r[0] for r in rounds], [r[1] for r in rounds])
               for source, rounds in runs.items()}
    print("side by side (tether's CPU per round trip, ms):")
    print(f"  {'':<12} {'this':>8} {'against':>8}")
    for label in figures[here]:
        print(f"  {label:<12} {figures[here][label]:8.2f} {figures[args.against][label]:8.2f}")


if __name__ == "__main__":
    main()
