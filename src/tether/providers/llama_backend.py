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

import atexit
import json
import re
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import ProviderError
from .local_types import Generated, Prompt, Sampling

MISSING_EXTRA = "tether --local needs the local extra: pip install 'tether[local]'"
BATCH = 512
PROMPT_CHUNK = BATCH
EXIT_WAIT = 10.0
"""Seconds the exit waits for a generation to let its model go before freeing it."""
"""Prompt tokens evaluated between two cancel checks."""


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
            if not _LOADED:
                atexit.register(unload_all)
            _LOADED[key] = LlamaBackend(path, n_ctx, threads)
        return _LOADED[key]


def unload_all() -> None:
    """Frees the loaded models while llama-cpp-python is still whole: left to the end of
    the interpreter, its finalizer runs after its module is torn down and prints a traceback."""
    with _LOAD_LOCK:
        for backend in _LOADED.values():
            # A generation still running in a worker was told to stop: it ends within a token
            # or a prompt chunk. One that does not is left alone rather than hang the exit.
            if backend.lock.acquire(timeout=EXIT_WAIT):
                backend.llm.close()
                backend.lock.release()
        _LOADED.clear()


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
        self.stopping_criteria = llama_cpp.StoppingCriteriaList
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
        self.formatter = self._formatter(chat_format)

    def _formatter(self, chat_format: Any) -> Any:
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ProviderError(f"{self.path.name} holds no chat template, so tether cannot "
                                "write a conversation for it; use an instruct (chat) GGUF", "api")
        model = self.llm._model
        eos, bos = self.llm.token_eos(), self.llm.token_bos()
        # No stop_token_ids: create_completion ends a reply at any end-of-generation token.
        return chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=model.token_get_text(eos) if eos != -1 else "",
            bos_token=model.token_get_text(bos) if bos != -1 else "",
        )

    @property
    def billions(self) -> float | None:
        count = self.llm._model.n_params()
        return count / 1e9 if count > 0 else None

    def prompt(self, messages: list[dict[str, Any]], prefill: str = "") -> Prompt:
        rendered = self._render(messages)
        stop = [rendered.stop] if isinstance(rendered.stop, str) else list(rendered.stop or [])
        tokens: list[int] = []
        for text, from_template in template_pieces(
                lambda marked: self._render(marked).prompt, messages, rendered.prompt):
            tokens += self.llm.tokenize(text.encode("utf-8"), special=from_template,
                                        add_bos=not tokens and not rendered.added_special)
        if prefill:  # the model's own text: no special tokens in it
            tokens += self.llm.tokenize(prefill.encode("utf-8"), special=False, add_bos=False)
        return Prompt(tokens, tuple(s for s in stop if s))

    def _render(self, messages: list[dict[str, Any]]) -> Any:
        try:
            return self.formatter(messages=messages)
        except Exception as exc:  # the template's own raise_exception, or a Jinja error
            raise ProviderError(f"the model's chat template refused the conversation: "
                                f"{' '.join(str(exc).split())}", "api") from None

    def reused_prefix(self, tokens: list[int]) -> int:
        """How many of `tokens` the next generation takes from the cache (as `generate` does)."""
        return reused_prefix(self.llm.input_ids[: self.llm.n_tokens].tolist(), tokens)

    def generate(self, tokens: list[int], sampling: Sampling,
                 keep_going: Callable[[], bool]) -> Generator[Generated, None, None]:
        produced = 0

        def stop_here(input_ids: Any, logits: Any) -> bool:
            # Asked once per sampled token with the tokens before it (and once more at the
            # end), so the length counts the tokens generated whatever ended the reply.
            nonlocal produced
            produced = max(produced, len(input_ids) - len(tokens) + 1)
            return not keep_going()

        chunks = None
        try:
            if not self._read_prompt(tokens, keep_going):
                return
            chunks = self.llm.create_completion(
                prompt=tokens, max_tokens=sampling.max_tokens, temperature=sampling.temperature,
                stop=list(sampling.stop), stream=True,
                stopping_criteria=self.stopping_criteria([stop_here]),
                **grammar_argument(_llama_module()[0], sampling.grammar))
            for chunk in chunks:
                choice = chunk["choices"][0]
                yield Generated(choice.get("text") or "", produced, choice.get("finish_reason"))
        except MemoryError:
            raise out_of_memory(self.path) from None
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(f"llama.cpp failed while answering: {' '.join(str(exc).split())}",
                                "api") from None
        finally:
            if chunks is not None:
                chunks.close()  # here, under the caller's lock, not whenever it is collected

    def _read_prompt(self, tokens: list[int], keep_going: Callable[[], bool]) -> bool:
        """Evaluates the prompt but its last token after the cached prefix, a chunk at a time
        with a cancel check between (llama.cpp cannot stop within one); False when stopped.
        `create_completion` then finds all but the last token cached, evaluates that one and
        samples. A cache that cannot be cut at a position (a recurrent model's) is left to
        `create_completion`, which starts such a model over."""
        llm = self.llm
        keep = self.reused_prefix(tokens)
        if keep < llm.n_tokens and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
            return True
        llm.n_tokens = keep
        for start in range(keep, len(tokens) - 1, PROMPT_CHUNK):
            if not keep_going():
                return False
            llm.eval(tokens[start:min(start + PROMPT_CHUNK, len(tokens) - 1)])
        return True

MARK = "\ue000{}\ue001"
MARKED = re.compile("\ue000([0-9]+)\ue001")


def template_pieces(render: Callable[[list[dict[str, Any]]], str],
                    messages: list[dict[str, Any]], prompt: str) -> list[tuple[str, bool]]:
    """`prompt` (the conversation in the chat template) as (text, written by the template)
    pieces, so only the template's own text may hold control tokens such as <|im_start|>: a
    message (a file the model read, a web page) that spells one stays text and cannot fake
    a turn. The template is rendered again with each message's content replaced by a mark;
    when that does not give `prompt` back with the contents put in (the template changes a
    content), the whole prompt is one piece, as a server tokenizes it."""
    whole = [(prompt, True)]
    if "\ue000" in json.dumps(messages, ensure_ascii=False, default=str):  # marks would mislead
        return whole
    contents = [m.get("content") for m in messages]
    marked = [{**m, "content": MARK.format(i)} if isinstance(c, str) and c else m
              for i, (m, c) in enumerate(zip(messages, contents, strict=True))]
    parts = MARKED.split(render(marked))
    pieces = [(text, True) if n % 2 == 0 else (str(contents[int(text)]), False)
              for n, text in enumerate(parts)]
    if "".join(text for text, _ in pieces) != prompt:
        return whole
    return [(text, from_template) for text, from_template in pieces if text]


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
