"""What the provider tests share: a tool to offer, a collector for one answer's events,
and `tether -p` run end to end with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tether.core.messages import Event, Message, Text, TextDelta, Thinking, ToolCall, ToolResult
from tether.core.toolspec import Tool
from tether.providers import provider_class
from tether.providers.base import Provider, RequestOptions

HELLO = (Message.user("hi"),)
QUESTION = "What is the answer?"
ANSWER = "The file says the answer is 42."


class ReadArgs(BaseModel):
    path: str


READ_TOOL = Tool("read_file", "Read a text file.", ReadArgs, lambda args, ctx: "")


def two_reads(text: str | None, *, results_in_call_order: bool = True) -> list[Message]:
    """A system prompt, a request to read a.txt and b.txt, the assistant's reply (thinking,
    `text` unless None, calls call_1 and call_2), and one tool message with both results
    (b.txt's an error), in call order unless told otherwise."""
    reply = [Thinking("I should read both."), *([] if text is None else [Text(text)])]
    results = [
        ToolResult("call_1", "read_file", "alpha"),
        ToolResult("call_2", "read_file", "no such file", is_error=True),
    ]
    return [
        Message.system("You are terse."),
        Message.user("Read a.txt and b.txt"),
        Message(
            "assistant",
            [
                *reply,
                ToolCall("call_1", "read_file", {"path": "a.txt"}),
                ToolCall("call_2", "read_file", {"path": "b.txt"}),
            ],
        ),
        Message("tool", results if results_in_call_order else results[::-1]),
    ]


ANSWERED_AND_THANKED = [Message("assistant", [Text("a.txt says alpha.")]), Message.user("thanks")]
"""What follows two_reads in a longer history: the answer, and the user's thanks."""

Collect = Callable[..., Awaitable[list[Event]]]


def collector(default_options: RequestOptions | None = None) -> Collect:
    """A `collect(provider, messages=HELLO, tools=None, options=default_options, into=None)`
    that streams one answer and returns its events.

    Without `default_options` a request is for the provider's default model.
    Events go into `into` as they arrive, so a test that expects the stream to
    fail can still see what came before the failure.
    """

    async def collect(
        provider: Provider,
        messages: Sequence[Message] = HELLO,
        tools: Sequence[Tool] | None = None,
        options: RequestOptions | None = default_options,
        into: list[Event] | None = None,
    ) -> list[Event]:
        events = [] if into is None else into
        options = options or RequestOptions(provider.default_model)
        async for event in provider.stream(messages, tools, options):
            events.append(event)
        return events

    return collect


def text_of(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@asynccontextmanager
async def opened(name: str, server_url: str, **settings: Any) -> AsyncIterator[Any]:
    """The provider `name` pointed at a FakeServer (OpenAI's base URL ends in /v1),
    closed afterwards. `settings` go to its constructor (read_timeout is 5 s unless given)."""
    url = server_url + "/v1" if name == "openai" else server_url
    provider = provider_class(name)(url, **{"read_timeout": 5, **settings})
    try:
        yield provider
    finally:
        await provider.aclose()


# ---------------------------------------------------------------- the CLI, end to end


OUTSIDE_VARIABLES = ("OPENAI", "OLLAMA", "TETHER", "ANTHROPIC", "GEMINI", "GOOGLE")
"""Prefixes of the variables a test run must not inherit: keys, hosts, tether settings."""


def project_with_answer(tmp_path: Path) -> Path:
    """A project directory whose answer.txt holds the answer to QUESTION."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "answer.txt").write_text("The answer is 42.\n")
    return root


def ask_in_json(
    provider: str, base_url: str, model: str, cwd: Path, home: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`tether -p QUESTION --output-format json` against `provider` at `base_url`.

    Runs in `cwd` with TETHER_HOME=`home`, none of the outside provider or
    tether variables, and `env` (the key) added.
    """
    clean = {k: v for k, v in os.environ.items() if not k.startswith(OUTSIDE_VARIABLES)}
    clean.update({"TETHER_HOME": str(home), **env})
    args = ["-p", QUESTION, "--output-format", "json", "--provider", provider]
    return subprocess.run(
        [sys.executable, "-m", "tether", *args, "--base-url", base_url, "--model", model],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
