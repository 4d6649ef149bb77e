"""The seam between the local provider and the library that runs the model, so the provider
is tested against a fake in-process backend and llama-cpp-python stays an optional extra."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Prompt:
    tokens: list[int]
    stop: tuple[str, ...] = ()
    """Text the chat template ends a reply with (its end-of-turn token as text)."""


@dataclass(frozen=True)
class Sampling:
    temperature: float
    max_tokens: int | None
    stop: tuple[str, ...] = ()
    grammar: str | None = None
    """A GBNF grammar the reply must follow (RequestOptions.grammar)."""


@dataclass(frozen=True)
class Generated:
    """A piece of the reply: its text, the tokens generated so far, and on the last piece
    why generation ended ("stop", "length")."""

    text: str
    tokens: int
    finish_reason: str | None = None


class Backend(Protocol):
    """A loaded model. `lock` is held around `prompt` + `generate`: one request at a time uses
    the model and its prompt cache. Every method blocks; the provider calls them in a thread
    and raises ProviderError (from them too) for anything the user must be told."""

    n_ctx: int
    lock: threading.Lock

    @property
    def billions(self) -> float | None: ...

    def prompt(self, messages: list[dict[str, Any]], prefill: str = "") -> Prompt:
        """The conversation in the model's chat template, as tokens, then `prefill` (the start
        of the reply, which the model carries on)."""
        ...

    def reused_prefix(self, tokens: list[int]) -> int:
        """How many of `tokens` the next `generate` takes from the prompt cache."""
        ...

    def generate(self, tokens: list[int], sampling: Sampling,
                 keep_going: Callable[[], bool]) -> Generator[Generated, None, None]:
        """The reply, piece by piece; `keep_going` is asked once per token, and False stops it."""
        ...
