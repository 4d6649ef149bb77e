"""CPU to encode one chat request as the history grows: afresh every time against reusing
each message's wire JSON (providers/wire.py), side by side in one run.

"walked" is the encoding before the cache: every string of the body cleaned in Python, then
json.dumps of the whole body; "afresh" skips the walk (one scan of the JSON finds a lone
surrogate); "cached" reuses what the earlier requests encoded. OpenAI format, the 22 built-in
tools, one read_file round trip per step. Prints medians and ratios (no assertions).
Run: python bench/bench_encode.py [repeats]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.core.messages import Message, Text, ToolCall, ToolResult
from tether.core.toolspec import ToolContext
from tether.host.safetext import clean_data
from tether.providers import openai
from tether.providers.base import RequestOptions
from tether.providers.wire import WireCache, encode_body
from tether.tools import builtin_tools

OPTIONS = RequestOptions(model="bench")
RESULT = "".join(f"line {i} of the data file\n" for i in range(40))


def history(steps: int) -> list[Message]:
    messages = [Message.user("read data.txt again and again")]
    for i in range(steps):
        call = ToolCall(f"call_{i}", "read_file", {"filepath": "data.txt"})
        messages += [Message("assistant", [Text(""), call]),
                     Message("tool", [ToolResult(call.id, call.name, RESULT)])]
    return messages


def ms_per_request(encode: Callable[[list[Message]], bytes], messages: list[Message], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.process_time()
        encode(messages)
        samples.append((time.process_time() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as tmp:
        tools = list(builtin_tools(ToolContext(root=Path(tmp)))[0])
    wire = WireCache(openai.encode_message)
    ways = {
        "walked": lambda m: json.dumps(clean_data(openai.build_chat_body(m, tools, OPTIONS)),
                                       ensure_ascii=False).encode(),
        "afresh": lambda m: encode_body(openai.build_chat_body(m, tools, OPTIONS)),
        "cached": lambda m: encode_body(openai.build_chat_body(m, tools, OPTIONS, wire)),
    }
    print(f"CPU to encode one request (median of {repeats})")
    for steps in (10, 100):
        messages = history(steps)
        wire.messages(messages[:-2])  # the request before this one was sent already
        figures = {name: ms_per_request(way, messages, repeats) for name, way in ways.items()}
        shown = "   ".join(f"{name} {value:6.2f} ms" for name, value in figures.items())
        print(f"  step {steps:>3}: {shown}   walked/cached {figures['walked'] / figures['cached']:.1f}x")


if __name__ == "__main__":
    main()
