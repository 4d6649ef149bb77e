"""`tether --local` measured (not CI): tokens per second, time to the first token of a prompt of
about 1,400 tokens, the second request's prefill with that prefix reused, and peak RSS; beside
a llama-server already running at --server URL on the same GGUF (this script never starts one).
Medians over --runs cold requests, each followed by a warm one on the same prefix.

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
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import httpx

from tether.core.messages import Done, Message, TextDelta
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.local import LocalProvider

FILLER = ("def handle_{n}(request):\n    \"\"\"Handle request number {n}: validate it, look up the "
          "user, and return the rendered page.\"\"\"\n    return render(request, {n})\n\n")


@dataclass
class Run:
    first_token: float
    total: float
    prompt_tokens: int
    cached_tokens: int
    tokens: int

    @property
    def per_second(self) -> float:
        generating = self.total - self.first_token
        return (self.tokens - 1) / generating if self.tokens > 1 and generating > 0 else 0.0


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
    started = time.perf_counter()
    first = 0.0
    done: Done | None = None
    async with aclosing(provider.stream(messages, None, options)) as events:
        async for event in events:
            if isinstance(event, TextDelta) and not first:
                first = time.perf_counter() - started
            if isinstance(event, Done):
                done = event
    assert done is not None
    return Run(first, time.perf_counter() - started, done.usage.input_tokens,
               done.usage.cached_tokens, done.usage.output_tokens)


async def server_run(url: str, messages: list[dict[str, str]], tokens: int) -> Run:
    body = {"messages": messages, "temperature": 0, "max_tokens": tokens, "stream": True,
            "stream_options": {"include_usage": True}, "cache_prompt": True}
    started = time.perf_counter()
    first = 0.0
    usage: dict = {}
    async with httpx.AsyncClient(timeout=600) as client, \
            client.stream("POST", url.rstrip("/") + "/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line.endswith("[DONE]"):
                continue
            chunk = json.loads(line[5:])
            usage = chunk.get("usage") or usage
            choices = chunk.get("choices") or []
            if choices and (choices[0].get("delta") or {}).get("content") and not first:
                first = time.perf_counter() - started
    details = usage.get("prompt_tokens_details") or {}
    return Run(first, time.perf_counter() - started, usage.get("prompt_tokens", 0),
               details.get("cached_tokens", 0), usage.get("completion_tokens", 0))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def server_rss_mb(url: str) -> float | None:
    """The peak RSS of a llama-server listening on the URL's port, when it runs here."""
    try:
        import psutil
    except ImportError:
        return None
    port = httpx.URL(url).port
    for conn in psutil.net_connections("tcp"):
        if conn.status == "LISTEN" and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                status = Path(f"/proc/{conn.pid}/status").read_text()
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
    cold: list[Run]
    warm: list[Run]

    def line(self, rss: float | None) -> str:
        return (f"{self.name}: median of {len(self.cold)}: first token of "
                f"{self.cold[0].prompt_tokens} prompt tokens {median(r.first_token for r in self.cold):.2f} s, "
                f"{median(r.per_second for r in self.cold + self.warm):.2f} tokens/s; second request: "
                f"{median(r.cached_tokens for r in self.warm):.0f} of {self.warm[0].prompt_tokens} "
                f"prompt tokens reused, first token {median(r.first_token for r in self.warm):.2f} s"
                + (f"; peak RSS {rss:.0f} MB" if rss is not None else ""))


def chats(runs: int) -> list[tuple[list[Message], list[Message]]]:
    """One pair per run; each pair's prefix differs from the others' from its first line, so
    every cold request starts from an empty cache on both sides."""
    pairs = []
    for n in range(runs):
        system = f"Review {n}. " + long_prompt()
        pairs.append(([Message.system(system), Message.user("Which handler has the largest number?")],
                      [Message.system(system), Message.user("Name one handler.")]))
    return pairs


async def local_side(args: argparse.Namespace, pairs: list[tuple[list[Message], list[Message]]]) -> Side:
    provider = LocalProvider(Path(args.model).expanduser().parent, n_ctx=args.ctx,
                             threads=args.threads)
    await local_run(provider, args.model, [Message.user("Say OK.")], 2)  # load, warm up
    side = Side("in-process", [], [])
    for cold, warm in pairs:
        side.cold.append(await local_run(provider, args.model, cold, args.tokens))
        side.warm.append(await local_run(provider, args.model, warm, args.tokens))
    return side


async def server_side(url: str, pairs: list[tuple[list[Message], list[Message]]],
                      tokens: int) -> Side:
    def wire(chat: list[Message]) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.text} for m in chat]

    await server_run(url, [{"role": "user", "content": "Say OK."}], 2)
    side = Side("llama-server", [], [])
    for cold, warm in pairs:
        side.cold.append(await server_run(url, wire(cold), tokens))
        side.warm.append(await server_run(url, wire(warm), tokens))
    return side


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--server", help="a running llama-server's /v1 URL, same GGUF")
    parser.add_argument("--tokens", type=int, default=64, help="tokens to generate")
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, help="default: one per physical core")
    parser.add_argument("--runs", type=int, default=3, help="cold and warm requests per side")
    args = parser.parse_args()
    pairs = chats(args.runs)
    try:
        local = await local_side(args, pairs)
    except ProviderError as exc:
        print(f"bench_local: {exc}", file=sys.stderr)
        return 1
    print(local.line(peak_rss_mb()))
    if args.server:
        try:
            server = await server_side(args.server, pairs, args.tokens)
        except httpx.HTTPError as exc:
            print(f"bench_local: llama-server at {args.server}: {exc}", file=sys.stderr)
            return 1
        print(server.line(server_rss_mb(args.server)))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
