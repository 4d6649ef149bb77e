"""`tether --local`: a GGUF model run in tether's own process (llama-cpp-python, the `local`
extra), behind the same provider interface and event stream as the servers.

The model is loaded once per process and keeps llama.cpp's prompt cache between requests,
so a request costs only the tokens after the first one that differs from the last prompt;
`Usage.cached_tokens` says how many were reused. Generation runs in a worker thread that
asks a cancel flag once per token: closing the stream (Ctrl-C, the loop cutting a reply at
a whole call) stops it within a token. A prompt already being read by the model finishes its
current batch first (llama.cpp offers no way to stop it midway).

No native tool calls: the small profile speaks the text protocol, and `supports_native_tools`
says no so `auto` picks it for any profile. `--protocol native` is refused in one line.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing, closing
from pathlib import Path
from typing import Any

from ..core.messages import Done, Event, Message, TextDelta, ThinkingDelta, Usage
from ..core.toolspec import Tool
from ..host import NotARegularFile, open_regular
from ..protocol import THINK_CLOSE, THINK_OPEN
from ..store.config import Settings
from ..store.models import (
    DEFAULT_MODEL,
    cached_models,
    file_name,
    format_size,
    models_dir,
    names_a_file,
)
from . import DEFAULT_MODELS
from ._http import map_stop_reason
from .base import ProviderError, RequestOptions
from .local_types import Backend, Generated, Sampling
from .openai import encode_message

DEFAULT_CONTEXT = 16_384
"""Tokens of context when the setting names none: room for the small profile's work, and
about 0.5 GB of KV cache for a 1.5B model."""
DEFAULT_TEMPERATURE = 0.7
NATIVE_TOOLS = ("the local provider has no native tool calls; use --protocol text "
                "(auto picks it)")
GGUF_MAGIC = b"GGUF"

Loader = Callable[[Path, int, int], Backend]
Fetcher = Callable[[Path], Any]
"""Downloads the default model into the given cache folder (a coroutine function)."""


def physical_cores() -> int:
    """llama.cpp runs best with one thread per physical core (hyper-threads only contend),
    and no more threads than the cores this process may run on (`taskset`, a container's
    cpuset): its threads spin while they wait for each other, so two on one core crawl."""
    import psutil

    cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    return max(1, min(cores, allowed))


def load_llama(path: Path, n_ctx: int, threads: int) -> Backend:
    from .llama_backend import load_backend

    return load_backend(path, n_ctx, threads)


class LocalProvider:
    name = "local"
    default_model = DEFAULT_MODELS["local"]
    default_base_url = ""

    def __init__(
        self,
        models: Path,
        *,
        n_ctx: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        loader: Loader = load_llama,
        fetch: Fetcher | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        """`models` is the user's model cache; `fetch` downloads the default model into it
        when it is missing (None: say where to put it instead)."""
        self.models = models
        self.n_ctx = n_ctx
        self.threads = threads or physical_cores()
        self._loader = loader
        self._fetch = fetch
        self._notice = notice
        self._backend: Backend | None = None
        self._loading = asyncio.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, env: Mapping[str, str],
                      notice: Callable[[str], None] | None = None) -> LocalProvider:
        folder = models_dir(env)
        return cls(folder, n_ctx=settings.context_window or DEFAULT_CONTEXT,
                   threads=settings.local_threads, fetch=default_fetcher(notice), notice=notice)

    # -- the model

    def model_path(self, model: str) -> Path:
        """The file `model` names: a path to a GGUF, or a model in the cache ("" is the
        default). ProviderError when it is not there (the default may still be fetched)."""
        if names_a_file(model):
            return Path(model).expanduser()
        return self.models / file_name(model or DEFAULT_MODEL.name)

    async def backend(self, model: str) -> Backend:
        """The loaded model, fetched first when it is the default and missing; once."""
        async with self._loading:
            if self._backend is None:
                path = await self._present(model)
                check_gguf(path)
                self._backend = await asyncio.to_thread(self._loader, path, self.n_ctx,
                                                        self.threads)
            return self._backend

    async def _present(self, model: str) -> Path:
        path = self.model_path(model)
        if path.exists():
            return path
        is_default = not names_a_file(model) and file_name(model or DEFAULT_MODEL.name) \
            == file_name(DEFAULT_MODEL.name)
        if is_default and self._fetch is not None:
            return Path(await self._fetch(self.models))
        if is_default:
            raise ProviderError(f"the default model is not in the cache: put "
                                f"{file_name(DEFAULT_MODEL.name)} in {self.models}", "api")
        if names_a_file(model):
            raise ProviderError(f"no model file at {path}", "api")
        known = ", ".join(m.name for m in cached_models(self.models)) or "none"
        raise ProviderError(f"no cached model named {model!r} in {self.models} (cached: {known}); "
                            "name a GGUF file with --model ./file.gguf", "api")

    # -- streaming

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions,
    ) -> AsyncGenerator[Event, None]:
        if tools is not None:
            raise ProviderError(NATIVE_TOOLS, "api")
        backend = await self.backend(options.model)
        chat = [m for message in messages for m in encode_message(message)]
        async with aclosing(Generation(backend, chat, options).events()) as events:
            async for event in events:
                yield event

    # -- what the model can do

    async def list_models(self) -> list[str]:
        return [m.name for m in cached_models(self.models)]

    async def supports_native_tools(self, model: str) -> bool:
        return False

    async def context_window(self, model: str) -> int | None:
        return self._backend.n_ctx if self._backend is not None else self.n_ctx

    async def continues_replies(self, model: str) -> bool:
        """The prompt is rendered here: the reply's start follows the template's opening."""
        return True

    async def stated_billions(self, model: str) -> float | None:
        """The loaded model's size; before it is loaded, the default model's when that is
        the one named (loading a model only to ask its size would cost seconds)."""
        if self._backend is not None:
            return self._backend.billions
        if file_name(model or DEFAULT_MODEL.name) == file_name(DEFAULT_MODEL.name):
            return DEFAULT_MODEL.billions
        return None

    async def aclose(self) -> None:
        """Nothing to close: the model stays loaded for the rest of the process."""


def check_gguf(path: Path) -> None:
    """ProviderError unless `path` is a regular file that starts like a GGUF model."""
    try:
        with open_regular(path) as handle:
            head = handle.read(len(GGUF_MAGIC))
    except NotARegularFile as exc:
        raise ProviderError(f"{path} is not a regular file ({exc.kind})", "api") from None
    except OSError as exc:
        raise ProviderError(f"cannot read {path}: {exc.strerror or exc}", "api") from None
    if head != GGUF_MAGIC:
        raise ProviderError(f"{path} is not a GGUF model file", "api")


def default_fetcher(notice: Callable[[str], None] | None) -> Fetcher:
    """Downloads the default model with its progress told through `notice`."""
    from ..store.model_download import DownloadError, ProgressNotices, download_model

    async def fetch(folder: Path) -> Path:
        say = notice or (lambda _message: None)
        say(f"fetching {file_name(DEFAULT_MODEL.name)} ({format_size(DEFAULT_MODEL.size)}) "
            f"into {folder}, once")
        try:
            return await download_model(DEFAULT_MODEL, folder,
                                        ProgressNotices(DEFAULT_MODEL.name, say))
        except DownloadError as exc:
            raise ProviderError(str(exc), "connection") from None

    return fetch


class Generation:
    """One request: the worker thread that runs the model, and the events it yields."""

    END = object()

    def __init__(self, backend: Backend, chat: list[dict[str, Any]],
                 options: RequestOptions) -> None:
        self.backend = backend
        self.chat = chat
        self.options = options
        self.cancel = threading.Event()
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.loop = asyncio.get_running_loop()

    def put(self, item: Any) -> None:
        if self.loop.is_closed():  # the process is ending (tether quit mid-reply): nobody reads
            self.cancel.set()
            return
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # closed between the check and the call
            self.cancel.set()

    def work(self) -> None:
        try:
            with self.backend.lock:
                if self.cancel.is_set():
                    return
                prompt = self.backend.prompt(self.chat, self.options.prefill)
                self.check_room(len(prompt.tokens))
                self.put(Usage(len(prompt.tokens), 0, self.backend.reused_prefix(prompt.tokens)))
                sampling = Sampling(
                    self.options.temperature if self.options.temperature is not None
                    else DEFAULT_TEMPERATURE,
                    self.options.max_tokens, prompt.stop + self.options.stop, self.options.grammar)
                pieces = self.backend.generate(prompt.tokens, sampling,
                                               lambda: not self.cancel.is_set())
                with closing(pieces):  # ended under the lock: the next request finds it idle
                    for piece in pieces:
                        if self.cancel.is_set():
                            return
                        self.put(piece)
        except BaseException as exc:  # noqa: BLE001 - handed to the event loop, raised there
            self.put(exc)
        finally:
            self.put(self.END)

    def check_room(self, count: int) -> None:
        if count >= self.backend.n_ctx:
            raise ProviderError(
                f"the conversation is {count} tokens, more than the model's context of "
                f"{self.backend.n_ctx}: /compact it, or set a larger context_window", "api")

    async def events(self) -> AsyncGenerator[Event, None]:
        thread = threading.Thread(target=self.work, name="tether-local-model", daemon=True)
        thread.start()
        usage = Usage()
        finish: str | None = None
        split = ThinkSplit()
        try:
            while (item := await self.queue.get()) is not self.END:
                if isinstance(item, BaseException):
                    raise provider_error(item)
                if isinstance(item, Usage):
                    usage = item
                    continue
                assert isinstance(item, Generated)
                usage.output_tokens = item.tokens
                finish = item.finish_reason or finish
                for event in split.feed(item.text):
                    yield event
            for event in split.flush():
                yield event
            yield Done(usage, map_stop_reason(finish, False))
        finally:
            self.cancel.set()  # a closed stream (Ctrl-C, a reply cut short) stops the model


def provider_error(exc: BaseException) -> BaseException:
    """What a failure in the worker becomes: ProviderError as it is, a lack of memory as one
    line, anything else one line naming it (never a traceback)."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, MemoryError):
        return ProviderError("out of memory while running the model: close other programs, "
                             "or choose a smaller model or context_window", "api")
    if isinstance(exc, Exception):
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return ProviderError(f"the local model failed: {detail}", "api")
    return exc


class ThinkSplit:
    """Keeps thinking apart: a reply that opens with `<think>` is thinking up to `</think>`.
    A tag may arrive split over pieces, so text that could be the start of one waits."""

    def __init__(self) -> None:
        self.pending = ""
        self.state = "start"  # start -> thinking -> text, or start -> text

    def feed(self, text: str) -> list[Event]:
        self.pending += text
        events: list[Event] = []
        while True:
            if self.state == "start":
                stripped = self.pending.lstrip()
                if stripped.startswith(THINK_OPEN):
                    self.pending = stripped[len(THINK_OPEN):]
                    self.state = "thinking"
                elif THINK_OPEN.startswith(stripped):
                    return events  # still may become the tag
                else:
                    self.state = "text"
            elif self.state == "thinking":
                end = self.pending.find(THINK_CLOSE)
                if end < 0:
                    keep = partial_tag_length(self.pending, THINK_CLOSE)
                    shown, self.pending = self.pending[:len(self.pending) - keep], \
                        self.pending[len(self.pending) - keep:]
                    if shown:
                        events.append(ThinkingDelta(shown))
                    return events
                if end:
                    events.append(ThinkingDelta(self.pending[:end]))
                self.pending = self.pending[end + len(THINK_CLOSE):].lstrip("\n")
                self.state = "text"
            else:
                if self.pending:
                    events.append(TextDelta(self.pending))
                self.pending = ""
                return events

    def flush(self) -> list[Event]:
        rest, self.pending = self.pending, ""
        if not rest:
            return []
        return [ThinkingDelta(rest) if self.state == "thinking" else TextDelta(rest)]


def partial_tag_length(text: str, tag: str) -> int:
    """How many characters at the end of `text` could be the start of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
