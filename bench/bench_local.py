"""`tether --local` measured (not CI): tokens per second, time to the first token of a prompt of
about 1,400 tokens, the second request's prefill with that prefix reused, and peak RSS; beside
a llama-server already running at --server URL on the same GGUF (this script never starts one).

    python bench/bench_local.py --model ~/.cache/tether/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        [--server http://127.0.0.1:8089/v1] [--tokens 64]

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


def show(name: str, cold: Run, warm: Run, rss: float | None) -> None:
    print(f"{name}: first token of {cold.prompt_tokens} prompt tokens {cold.first_token:.2f} s, "
          f"{cold.per_second:.1f} tokens/s; second request: {warm.cached_tokens} of "
          f"{warm.prompt_tokens} prompt tokens reused, first token {warm.first_token:.2f} s"
          + (f"; peak RSS {rss:.0f} MB" if rss is not None else ""))


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--server", help="a running llama-server's /v1 URL, same GGUF")
    parser.add_argument("--tokens", type=int, default=64, help="tokens to generate")
    parser.add_argument("--ctx", type=int, default=4096)
    args = parser.parse_args()
    system = long_prompt()
    first_chat = [Message.system(system), Message.user("Which handler has the largest number?")]
    second_chat = [Message.system(system), Message.user("Name one handler.")]
    provider = LocalProvider(Path(args.model).expanduser().parent, n_ctx=args.ctx)
    try:
        cold = await local_run(provider, args.model, first_chat, args.tokens)
        warm = await local_run(provider, args.model, second_chat, args.tokens)
    except ProviderError as exc:
        print(f"bench_local: {exc}", file=sys.stderr)
        return 1
    show("in-process", cold, warm, peak_rss_mb())
    if args.server:
        as_dicts = [[{"role": m.role, "content": m.text} for m in chat]
                    for chat in (first_chat, second_chat)]
        try:
            server_cold = await server_run(args.server, as_dicts[0], args.tokens)
            server_warm = await server_run(args.server, as_dicts[1], args.tokens)
        except httpx.HTTPError as exc:
            print(f"bench_local: llama-server at {args.server}: {exc}", file=sys.stderr)
            return 1
        show("llama-server", server_cold, server_warm, server_rss_mb(args.server))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
