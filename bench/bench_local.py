"""`tether --local` measured (not CI): tokens per second, time to the first token of a prompt of
about 1,400 tokens, the second request's prefill with that prefix reused, and peak RSS; beside
a llama-server already running at --server URL on the same GGUF (this script never starts one).
Medians over --runs cold requests, each followed by a warm one on the same prefix. Each time
is given on the wall clock and on the CPU clock of the process that runs the model: on a
shared core the wall clock also measures the neighbours; the CPU clock what the model cost.

    python bench/bench_local.py --model ~/.cache/tether/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        [--server http://127.0.0.1:8089/v1] [--tokens 64] [--threads 1] [--runs 3]

For a fair comparison give both sides the same cores and threads and the server one slot of
the same context, e.g. `taskset -c 1 llama-server -m M -c 4096 -np 1 -t 1 --port 8095` and
`taskset -c 1 python bench/bench_local.py --model M --threads 1 --server http://127.0.0.1:8095/v1`.

Needs the local extra (llama-cpp-python). Greedy sampling on both sides, so both generate
the same number of tokens when they agree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

import httpx

from tether.core.messages import Done, Message, TextDelta
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.local import LocalProvider

FILLER = ("def handle_{n}(request):\n    \"\"\"Handle request number {n}: validate it, look up the "
          "user, and return the rendered page.\"\"\"\n    return render(request, {n})\n\n")

Clock = Callable[[], tuple[float, float]]
"""Wall seconds and CPU seconds of the process that runs the model, now."""


@dataclass
class Run:
    first_token: tuple[float, float]
    total: tuple[float, float]
    prompt_tokens: int
    cached_tokens: int
    tokens: int

    def per_second(self, clock: int) -> float:
        generating = self.total[clock] - self.first_token[clock]
        return (self.tokens - 1) / generating if self.tokens > 1 and generating > 0 else 0.0


class Timer:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.started = clock()
        self.first: tuple[float, float] | None = None

    def since(self) -> tuple[float, float]:
        wall, cpu = self.clock()
        return wall - self.started[0], cpu - self.started[1]

    def token(self) -> None:
        if self.first is None:
            self.first = self.since()

    def run(self, prompt_tokens: int, cached_tokens: int, tokens: int) -> Run:
        total = self.since()
        return Run(self.first or total, total, prompt_tokens, cached_tokens, tokens)


def this_process() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def process_clock(pid: int) -> Clock:
    import psutil

    process = psutil.Process(pid)

    def now() -> tuple[float, float]:
        times = process.cpu_times()
        return time.perf_counter(), times.user + times.system

    return now


def long_prompt(target_chars: int = 5600) -> str:
    """About 1,400 tokens of code (four characters a token)."""
    text, n = "", 0
    while len(text) < target_chars:
        text += FILLER.format(n=n)
        n += 1
    return "You review Python code.\n\n" + text


async def local_run(provider: LocalProvider, model: str, messages: list[Message],
                    tokens: int) -> Run:
    options = RequestOptions(model=model, temperature=0, max_tokens=tokens)
    timer = Timer(this_process)
    done: Done | None = None
    async with aclosing(provider.stream(messages, None, options)) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                timer.token()
            if isinstance(event, Done):
                done = event
    assert done is not None
    return timer.run(done.usage.input_tokens, done.usage.cached_tokens, done.usage.output_tokens)


async def server_run(url: str, clock: Clock, messages: list[dict[str, str]], tokens: int) -> Run:
    body = {"messages": messages, "temperature": 0, "max_tokens": tokens, "stream": True,
            "stream_options": {"include_usage": True}, "cache_prompt": True}
    timer = Timer(clock)
    usage: dict = {}
    async with httpx.AsyncClient(timeout=1800) as client, \
            client.stream("POST", url.rstrip("/") + "/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line.endswith("[DONE]"):
                continue
            chunk = json.loads(line[5:])
            usage = chunk.get("usage") or usage
            choices = chunk.get("choices") or []
            if choices and (choices[0].get("delta") or {}).get("content"):
                timer.token()
    details = usage.get("prompt_tokens_details") or {}
    return timer.run(usage.get("prompt_tokens", 0), details.get("cached_tokens", 0),
                     usage.get("completion_tokens", 0))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def server_pid(url: str) -> int | None:
    """The process listening on the URL's port, when it runs here."""
    import psutil

    port = httpx.URL(url).port
    for conn in psutil.net_connections("tcp"):
        if conn.status == "LISTEN" and conn.laddr and conn.laddr.port == port and conn.pid:
            return conn.pid
    return None


def peak_rss_of(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


@dataclass
class Side:
    """Every run of one side: each cold request (a prompt nothing is cached of) and the
    warm one after it (the same long prefix, another question)."""

    name: str
    cold: list[Run] = field(default_factory=list)
    warm: list[Run] = field(default_factory=list)

    def line(self, rss: float | None) -> str:
        def both(values: Callable[[int], Iterable[float]], unit: str) -> str:
            return f"{median(values(0)):.2f} {unit} (CPU {median(values(1)):.2f} {unit})"

        runs = self.cold + self.warm
        return (f"{self.name}: median of {len(self.cold)}: first token of "
                f"{self.cold[0].prompt_tokens} prompt tokens "
                + both(lambda c: (r.first_token[c] for r in self.cold), "s") + ", "
                + both(lambda c: (r.per_second(c) for r in runs), "tokens/s")
                + f"; second request: {median(r.cached_tokens for r in self.warm):.0f} of "
                f"{self.warm[0].prompt_tokens} prompt tokens reused, first token "
                + both(lambda c: (r.first_token[c] for r in self.warm), "s")
                + (f"; peak RSS {rss:.0f} MB" if rss is not None else ""))


Pair = tuple[list[Message], list[Message]]


def chats(runs: int) -> list[Pair]:
    """One pair per run; each pair's prefix differs from every other's (this invocation's
    and earlier ones') from its first line, so every cold request starts from an empty cache
    on both sides (llama-server also keeps earlier prompts in its RAM cache)."""
    pairs = []
    nonce = time.time_ns()
    for n in range(runs):
        system = f"Review {nonce}-{n}. " + long_prompt()
        pairs.append(([Message.system(system), Message.user("Which handler has the largest number?")],
                      [Message.system(system), Message.user("Name one handler.")]))
    return pairs


def wire(chat: list[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.text} for m in chat]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--server", help="a running llama-server's /v1 URL, same GGUF")
    parser.add_argument("--tokens", type=int, default=64, help="tokens to generate")
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, help="default: one per physical core")
    parser.add_argument("--runs", type=int, default=3, help="cold and warm requests per side")
    args = parser.parse_args()
    provider = LocalProvider(Path(args.model).expanduser().parent, n_ctx=args.ctx,
                             threads=args.threads)
    local, server = Side("in-process"), Side("llama-server")
    pid = server_pid(args.server) if args.server else None
    if args.server and pid is None:
        print(f"bench_local: nothing here listens at {args.server}", file=sys.stderr)
        return 1
    try:
        await local_run(provider, args.model, [Message.user("Say OK.")], 2)  # load, warm up
        for cold, warm in chats(args.runs):  # the sides take turns: a busy spell hits both
            local.cold.append(await local_run(provider, args.model, cold, args.tokens))
            local.warm.append(await local_run(provider, args.model, warm, args.tokens))
            if pid is not None:
                server.cold.append(await server_run(args.server, process_clock(pid), wire(cold), args.tokens))
                server.warm.append(await server_run(args.server, process_clock(pid), wire(warm), args.tokens))
    except ProviderError as exc:
        print(f"bench_local: {exc}", file=sys.stderr)
        return 1
    except httpx.HTTPError as exc:
        print(f"bench_local: llama-server at {args.server}: {exc}", file=sys.stderr)
        return 1
    print(local.line(peak_rss_mb()))
    if pid is not None:
        print(server.line(peak_rss_of(pid)))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
