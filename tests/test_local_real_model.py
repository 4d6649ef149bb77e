"""The local provider with the real llama-cpp-python and a real GGUF: skipped with a reason
when either is missing (the `local` extra is optional; the contract is tested with a fake
backend in test_provider_local.py). TETHER_TEST_GGUF names the model file; default: the
default model in the user's cache."""

from __future__ import annotations

import importlib.util
import os
from contextlib import aclosing
from pathlib import Path

import pytest

from tether.core.messages import Done, Message, TextDelta
from tether.providers.base import RequestOptions
from tether.providers.local import LocalProvider
from tether.store.models import DEFAULT_MODEL, file_name, models_dir

GGUF = Path(os.environ.get("TETHER_TEST_GGUF")
            or models_dir() / file_name(DEFAULT_MODEL.name))

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                       reason="llama-cpp-python (the local extra) is not installed"),
    pytest.mark.skipif(not GGUF.is_file(), reason=f"no GGUF model at {GGUF} (TETHER_TEST_GGUF)"),
]


async def ask(provider: LocalProvider, messages: list[Message]) -> tuple[str, Done]:
    options = RequestOptions(model=str(GGUF), temperature=0, max_tokens=8)
    async with aclosing(provider.stream(messages, None, options)) as events:
        got = [event async for event in events]
    done = got[-1]
    assert isinstance(done, Done)
    return "".join(e.text for e in got if isinstance(e, TextDelta)), done


async def test_real_model_answers_and_reuses_the_prompt_prefix() -> None:
    provider = LocalProvider(GGUF.parent, n_ctx=2048)
    system = Message.system("You are a terse assistant. " * 20)
    text, first = await ask(provider, [system, Message.user("Say OK.")])
    assert text.strip() and first.usage.output_tokens > 0
    _, second = await ask(provider, [system, Message.user("Say yes.")])
    assert second.usage.cached_tokens >= first.usage.input_tokens // 2
