"""llama-cpp-python behind the local provider's `Backend` protocol (the `local` extra).

One `Llama` object per model file and context size, loaded once per process and kept: it
holds llama.cpp's KV cache of the last prompt, and `Llama.generate` evaluates only the
tokens after the longest prefix the new prompt shares with it (it removes the rest of the
cache with `kv_cache_seq_rm`; when the whole prompt is cached it replays its last token to
refresh the logits). `reused_prefix` counts the same way, so usage reports what was reused.

The prompt is the GGUF's own chat template (`tokenizer.chat_template`, rendered by
llama-cpp-python's `Jinja2ChatFormatter`, which is what its server does with that
metadata), tokenized as its chat handler does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import ProviderError
from .local_types import Generated, Prompt, Sampling

MISSING_EXTRA = "tether --local needs the local extra: pip install 'tether[local]'"
BATCH = 512


@dataclass(frozen=True)
class LoadKey:
    path: str
    n_ctx: int
    threads: int


_LOADED: dict[LoadKey, LlamaBackend] = {}
_LOAD_LOCK = threading.Lock()


def load_backend(path: Path, n_ctx: int, threads: int) -> LlamaBackend:
    """The model at `path`, loaded once per process (a second provider, a sub-agent or a
    /model switch back reuses it and its prompt cache). Blocks: call it from a thread."""
    key = LoadKey(str(path.resolve()), n_ctx, threads)
    with _LOAD_LOCK:
        if key not in _LOADED:
            _LOADED[key] = LlamaBackend(path, n_ctx, threads)
        return _LOADED[key]


def _llama_module() -> Any:
    try:
        import llama_cpp
        import llama_cpp.llama_chat_format as chat_format
    except ImportError:
        raise ProviderError(MISSING_EXTRA, "api") from None
    return llama_cpp, chat_format


def out_of_memory(path: Path) -> ProviderError:
    return ProviderError(
        f"out of memory running {path.name}: close other programs, choose a smaller model "
        "with --model, or set a smaller context_window", "api")


class LlamaBackend:
    """One loaded GGUF model and its prompt cache; `lock` keeps one generation at a time."""

    def __init__(self, path: Path, n_ctx: int, threads: int) -> None:
        llama_cpp, chat_format = _llama_module()
        self.path = path
        self.lock = threading.Lock()
        try:
            self.llm = llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                n_batch=BATCH, n_gpu_layers=0, verbose=False)
        except MemoryError:
            raise out_of_memory(path) from None
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(
                f"llama.cpp cannot load {path} ({' '.join(str(exc).split())}): is it a whole "
                "GGUF file of a model this llama.cpp knows? Too little memory fails this way too",
                "api") from None
        self.n_ctx = int(self.llm.n_ctx())
        self.formatter, self.stop_token_ids = self._formatter(chat_format)

    def _formatter(self, chat_format: Any) -> tuple[Any, set[int]]:
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ProviderError(f"{self.path.name} holds no chat template, so tether cannot "
                                "write a conversation for it; use an instruct (chat) GGUF", "api")
        model = self.llm._model
        eos, bos = self.llm.token_eos(), self.llm.token_bos()
        formatter = chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=model.token_get_text(eos) if eos != -1 else "",
            bos_token=model.token_get_text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        return formatter, {eos}

    @property
    def billions(self) -> float | None:
        count = self.llm._model.n_params()
        return count / 1e9 if count > 0 else None

    def prompt(self, messages: list[dict[str, Any]]) -> Prompt:
        try:
            rendered = self.formatter(messages=messages)
        except Exception as exc:  # the template's own raise_exception, or a Jinja error
            raise ProviderError(f"the model's chat template refused the conversation: "
                                f"{' '.join(str(exc).split())}", "api") from None
        stop = [rendered.stop] if isinstance(rendered.stop, str) else list(rendered.stop or [])
        tokens = self.llm.tokenize(rendered.prompt.encode("utf-8"),
                                   add_bos=not rendered.added_special, special=True)
        return Prompt(list(tokens), tuple(s for s in stop if s))

    def reused_prefix(self, tokens: list[int]) -> int:
        """How many of `tokens` the next generation takes from the cache (as `generate` does)."""
        return reused_prefix(list(self.llm.input_ids), tokens)

    def generate(self, tokens: list[int], sampling: Sampling,
                 keep_going: Callable[[], bool]) -> Iterator[Generated]:
        count = 0

        def stop_here(input_ids: Any, logits: Any) -> bool:
            nonlocal count
            count += 1  # called once per sampled token: the count and the cancel check
            return not keep_going() or int(input_ids[-1]) in self.stop_token_ids

        try:
            chunks = self.llm.create_completion(
                prompt=tokens, max_tokens=sampling.max_tokens, temperature=sampling.temperature,
                stop=list(sampling.stop), stream=True, stopping_criteria=[stop_here],
                **grammar_argument(_llama_module()[0], sampling.grammar))
            for chunk in chunks:
                choice = chunk["choices"][0]
                yield Generated(choice.get("text") or "", count, choice.get("finish_reason"))
        except MemoryError:
            raise out_of_memory(self.path) from None
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(f"llama.cpp failed while answering: {' '.join(str(exc).split())}",
                                "api") from None


def grammar_argument(llama_cpp: Any, grammar: str | None) -> dict[str, Any]:
    """`create_completion`'s `grammar` for a GBNF text: nothing when there is none or this
    llama-cpp-python has no LlamaGrammar; ProviderError when llama.cpp cannot parse it."""
    grammar_class = getattr(llama_cpp, "LlamaGrammar", None) if grammar else None
    if grammar_class is None:
        return {}
    try:
        return {"grammar": grammar_class.from_string(grammar, verbose=False)}
    except (ValueError, RuntimeError) as exc:
        raise ProviderError(f"llama.cpp refused the reply grammar: {' '.join(str(exc).split())}",
                            "api") from None


def reused_prefix(cached: Sequence[int], tokens: Sequence[int]) -> int:
    """The tokens of a new prompt llama.cpp takes from its cache: the longest common prefix
    with what it holds, less one when that is the whole prompt (its last token is evaluated
    again to get fresh logits)."""
    shared = 0
    for old, new in zip(cached, tokens, strict=False):
        if old != new:
            break
        shared += 1
    return shared - 1 if shared and shared == len(tokens) else shared
