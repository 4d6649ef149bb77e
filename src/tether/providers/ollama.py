"""Ollama's native API: `/api/chat` streamed as NDJSON, `/api/show`, `/api/tags`, `/api/pull`,
and the blob and create endpoints (pulling a model, importing a GGUF file, for
`--local` through Ollama: see the sections at the end).

The pull's answer is newline-delimited JSON (Ollama's API reference, "Pull a Model"):
`{"status": "pulling manifest"}`, then for each layer `{"status": "pulling <digest>",
"digest", "total", "completed"}` (no `completed` until some of it arrived), then "verifying
sha256 digest", "writing manifest", "success". A failure is `{"error": "..."}`: the whole body,
with an error status, when it comes before the stream began; a line of the stream after it
(a full disk, a registry that cannot be reached). Only a "success" line means the model is
there: a stream that ends without one is a failed pull. Ollama keeps what a cancelled or cut
pull fetched and resumes from there, so stopping one (Ctrl-C) loses nothing. `/api/create`
(importing a GGUF file: see the last section) streams the same kind of status lines, read by the
same `read_status_stream`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.messages import (
    Done,
    Event,
    Message,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    new_call_id,
)
from ..core.profile import billions_stated
from ..core.toolspec import Tool
from ..host import open_regular
from ..safety.visible import visible
from ..store.config import normalize_ollama_host
from . import DEFAULT_MODELS
from ._common import HttpChatProvider
from ._errors import display_url, server_error_message, status_phrase
from ._http import (
    CAPABILITY_TIMEOUT,
    as_int,
    chunk_object,
    function_tool_schema,
    map_stop_reason,
    one_line,
    parse_tool_arguments,
    tool_result_text,
)
from .base import ProviderError, RequestOptions
from .wire import WireCache

if TYPE_CHECKING:  # httpx loads when a pull or an import begins: a chat's start never needs it
    import httpx

DEFAULT_HOST = "http://127.0.0.1:11434"
SERVER_DEFAULT_NUM_CTX = 4096
"""What an Ollama server uses when neither the request nor the model sets num_ctx.

When tether could not ask the server (so it sends no `options.num_ctx`), the server's
default applies: 2048 on old servers, 4096 on current ones with less than
24 GiB of VRAM, more on larger GPUs or with OLLAMA_CONTEXT_LENGTH. 4096 is the
common case; a user with more sets the window explicitly.
"""


# ---------------------------------------------------------------- the context window


def ollama_context_window(
    show: Mapping[str, Any], default_num_ctx: int = SERVER_DEFAULT_NUM_CTX
) -> int:
    """The window an Ollama server will use, from its `/api/show` answer.

    The model's own `num_ctx` parameter wins over the server default; neither
    can exceed what the model was trained for (`model_info["*.context_length"]`).
    Assumes the chat request does not set `options.num_ctx`.
    """
    used = _num_ctx_parameter(show.get("parameters")) or default_num_ctx
    trained = _trained_context_length(show.get("model_info"))
    return min(used, trained) if trained else used


def _num_ctx_parameter(parameters: Any) -> int | None:
    """`parameters` is Modelfile text: one `name value` pair a line."""
    if isinstance(parameters, Mapping):
        return _positive_int(parameters.get("num_ctx"))
    if not isinstance(parameters, str):
        return None
    for line in parameters.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "num_ctx":
            return _positive_int(fields[1])
    return None


def _trained_context_length(model_info: Any) -> int | None:
    if not isinstance(model_info, Mapping):
        return None
    for key, value in model_info.items():
        if isinstance(key, str) and key.endswith(".context_length"):
            return _positive_int(value)
    return None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


# ---------------------------------------------------------------- encoding


def encode_message(message: Message) -> list[dict[str, Any]]:
    """One history entry as Ollama chat messages (a tool message per result)."""
    if message.role == "tool" or message.tool_results:
        return [
            {"role": "tool", "content": tool_result_text(r), "tool_name": r.name}
            for r in message.tool_results
        ]
    encoded: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.images:  # base64, without a data: prefix
        encoded["images"] = [image.data for image in message.images]
    calls = message.tool_calls
    if message.role == "assistant" and calls:
        encoded["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    return [encoded]


def build_chat_body(
    messages: Sequence[Message],
    tools: Sequence[Tool] | None,
    options: RequestOptions,
    num_ctx: int | None = None,
    wire: WireCache | None = None,
) -> dict[str, Any]:
    """`num_ctx` sets the context window; without it the server's default (often small)
    applies. `wire` reuses what earlier requests encoded of the same history and tools."""
    body: dict[str, Any] = {
        "model": options.model,
        "messages": wire.messages(messages) if wire is not None
        else [m for message in messages for m in encode_message(message)],
        "stream": True,
    }
    if tools is not None:
        body["tools"] = wire.tools(tools, function_tool_schema) if wire is not None \
            else [function_tool_schema(t) for t in tools]
    model_options: dict[str, Any] = {}
    if options.temperature is not None:
        model_options["temperature"] = options.temperature
    if options.max_tokens is not None:
        model_options["num_predict"] = options.max_tokens
    if options.stop:
        model_options["stop"] = list(options.stop)
    if num_ctx is not None:
        model_options["num_ctx"] = num_ctx
    if model_options:
        body["options"] = model_options
    return body


# ---------------------------------------------------------------- decoding


def decode_tool_call(raw: Any) -> ToolCall | None:
    """Ollama sends each call whole: `{"function": {"name", "arguments": {...}}}`."""
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        return None
    function = raw["function"]
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return None
    raw_id = raw.get("id")
    call_id = raw_id if isinstance(raw_id, str) and raw_id else new_call_id()
    return ToolCall(call_id, name, parse_tool_arguments(function.get("arguments")))


class OllamaStreamDecoder:
    """Turns `/api/chat` NDJSON lines into events; a line that is not a JSON object raises
    UnreadableChunk."""

    def __init__(self) -> None:
        self.finished = False
        self.valid_events = 0
        self.calls_made = 0

    def feed(self, line: str) -> list[Event]:
        line = line.strip()
        if not line or self.finished:
            return []
        chunk = chunk_object(line)
        self.valid_events += 1
        if "error" in chunk:
            raise ProviderError(
                f"Ollama reported an error while answering: {one_line(str(chunk['error']))}", "api"
            )
        events = self._message_events(chunk.get("message"))
        if chunk.get("done"):
            self.finished = True
            usage = Usage(as_int(chunk.get("prompt_eval_count")), as_int(chunk.get("eval_count")))
            events.append(
                Done(usage, map_stop_reason(chunk.get("done_reason"), self.calls_made > 0))
            )
        return events

    def _message_events(self, message: Any) -> list[Event]:
        if not isinstance(message, dict):
            return []
        events: list[Event] = []
        if isinstance(message.get("thinking"), str) and message["thinking"]:
            events.append(ThinkingDelta(message["thinking"]))
        if isinstance(message.get("content"), str) and message["content"]:
            events.append(TextDelta(message["content"]))
        for raw in message.get("tool_calls") or []:
            call = decode_tool_call(raw)
            if call is not None:
                self.calls_made += 1
                events.append(ToolCallEvent(call))
        return events


# ---------------------------------------------------------------- provider


DEFAULT_NUM_CTX = 16_384
"""The window asked of Ollama when none is configured: room for the tool menu and real work
on a small model, at a memory cost a laptop can carry."""


class OllamaProvider(HttpChatProvider[OllamaStreamDecoder]):
    """A local (or remote) Ollama server through its native chat API."""

    name = "ollama"
    default_model = DEFAULT_MODELS["ollama"]
    default_base_url = DEFAULT_HOST
    label = "Ollama"
    connect_hint = "Is 'ollama serve' running? Set OLLAMA_HOST or --base-url to point elsewhere."

    def __init__(
        self, base_url: str, *, context_window: int | None = None, **transport: Any
    ) -> None:
        """`context_window` is sent as options.num_ctx with every chat request; `transport`
        is what every HTTP provider takes (api_key, timeouts, retry, notice)."""
        super().__init__(base_url, **transport)
        self._num_ctx = context_window
        self._shown: dict[str, dict[str, Any]] = {}
        self._chosen_ctx: dict[str, int] = {}

    @classmethod
    def _clean_base_url(cls, base_url: str) -> str:
        return normalize_ollama_host(base_url) or DEFAULT_HOST

    def _auth_hint(self, api_key: str | None) -> str:
        return "Check the access settings of the server (or the proxy in front of it)."

    def _chat_request(
        self, messages: Sequence[Message], tools: Sequence[Tool] | None, options: RequestOptions
    ) -> tuple[str, dict[str, Any]]:
        num_ctx = self._num_ctx or self._chosen_ctx.get(options.model)
        return "/api/chat", build_chat_body(messages, tools, options, num_ctx, self._wire)

    @cached_property
    def _wire(self) -> WireCache:
        return WireCache(encode_message)

    def _decoder(self) -> OllamaStreamDecoder:
        return OllamaStreamDecoder()

    def _stream_ended(self, decoder: OllamaStreamDecoder) -> list[Event]:
        raise self._http.incomplete_stream_error(decoder.valid_events > 0)

    def _model_not_found(self, model: str, message: str) -> str:
        return (
            f"model '{model}' not found on Ollama at {self._http.shown_url}. "
            f"Run 'ollama pull {model}' or choose another with --model."
        )

    async def list_models(self) -> list[str]:
        data = await self._http.get_json("/api/tags")
        models = self._model_list(data, "models")
        names = (m.get("name") or m.get("model") for m in models if isinstance(m, dict))
        return [n for n in names if isinstance(n, str) and n]

    async def supports_native_tools(self, model: str) -> bool:
        """Whether the model's template takes native tools (`/api/show` capabilities).

        Only an actual answer is remembered: when the server cannot be asked,
        the answer is False for now and the question is asked again next time.
        """
        data = await self._show(model)
        capabilities = data.get("capabilities") if data else None
        return isinstance(capabilities, list) and "tools" in capabilities

    async def stated_billions(self, model: str) -> float | None:
        """The model's parameters in billions, as `/api/show` states them: the exact
        `model_info["general.parameter_count"]`, else `details.parameter_size` ("1.5B")."""
        data = await self._show(model)
        if not data:
            return None
        info, details = data.get("model_info"), data.get("details")
        count = _positive_int(info.get("general.parameter_count")) if isinstance(info, dict) else None
        if count is not None:
            return count / 1e9
        return billions_stated(details.get("parameter_size")) if isinstance(details, dict) else None

    async def context_window(self, model: str) -> int | None:
        """The window tether asks for, sent as `num_ctx` with every chat request.

        The server's own default is small (a few thousand tokens) and it silently
        cuts a longer prompt, losing the system prompt and the tool menu. So unless
        a window is configured, tether asks for the model's Modelfile `num_ctx`, or
        DEFAULT_NUM_CTX, never more than the model was trained for. Model names never
        go through the table of hosted windows: a local model may be called anything.
        """
        if self._num_ctx:
            return self._num_ctx
        data = await self._show(model)
        if not data:  # nothing asked for: the server's own default applies
            return SERVER_DEFAULT_NUM_CTX
        self._chosen_ctx[model] = ollama_context_window(data, DEFAULT_NUM_CTX)
        return self._chosen_ctx[model]

    async def _show(self, model: str) -> dict[str, Any] | None:
        """`/api/show` for the model, asked once per model and server (unless it failed)."""
        if model in self._shown:
            return self._shown[model]
        try:
            data = await self._http.post_json(
                "/api/show", {"model": model}, timeout=CAPABILITY_TIMEOUT
            )
        except ProviderError:
            return None
        if not isinstance(data, dict):
            return None
        self._shown[model] = data
        return data


# ---------------------------------------------------------------- pulling a model

PullProgress = Callable[[int, int], None]
"""Told (bytes so far, bytes in all) over the layers seen so far."""

TAGS_TIMEOUT = 3.0
CONNECT_TIMEOUT = 10.0
QUIET_LIMIT = 300.0
"""Seconds of silence after which a pull is given up (Ollama reports progress every few
hundred milliseconds while it works; verifying a layer takes seconds, not minutes)."""


class PullError(Exception):
    """A pull or an import that did not leave the model in Ollama; the message is one line."""


def same_model(listed: str, wanted: str) -> bool:
    """Whether a name `/api/tags` lists is `wanted` (a name without a tag means `:latest`)."""
    def tagged(name: str) -> str:
        name = name.strip().lower()
        return name if ":" in name.rsplit("/", 1)[-1] else name + ":latest"

    return tagged(listed) == tagged(wanted)


async def has_model(base_url: str, name: str, timeout: float = TAGS_TIMEOUT) -> bool:
    """Whether the Ollama at `base_url` lists `name` (`/api/tags`); False when it cannot be
    asked (the pull that follows says why)."""
    ollama = OllamaProvider(base_url, connect_timeout=timeout, read_timeout=timeout)
    try:
        return any(same_model(listed, name) for listed in await ollama.list_models())
    except ProviderError:
        return False
    finally:
        await ollama.aclose()


class LayerProgress:
    """The bytes of every layer seen so far, summed: one bar for the whole pull."""

    def __init__(self, progress: PullProgress) -> None:
        self.progress = progress
        self.layers: dict[str, tuple[int, int]] = {}

    def update(self, line: dict[str, Any]) -> None:
        digest, total = line.get("digest"), line.get("total")
        if not isinstance(digest, str) or not isinstance(total, int) or total <= 0:
            return
        completed = line.get("completed")
        done = completed if isinstance(completed, int) and 0 <= completed <= total else 0
        self.layers[digest] = (done, total)
        self.progress(sum(d for d, _ in self.layers.values()),
                      sum(t for _, t in self.layers.values()))


@dataclass(frozen=True)
class Job:
    """A model job Ollama streams status lines for (a pull, an import), in the words its
    errors use."""

    verb: str
    """"pull", "import"."""
    name: str
    again: str = "run again to resume it"
    """What running again does, said after a failure."""

    @property
    def gerund(self) -> str:
        return self.verb.rstrip("e") + "ing"


def job_client(base_url: str = "") -> httpx.AsyncClient:
    """A client for one job: `CONNECT_TIMEOUT` to connect, `QUIET_LIMIT` for each read."""
    import httpx

    return httpx.AsyncClient(base_url=base_url,
                             timeout=httpx.Timeout(QUIET_LIMIT, connect=CONNECT_TIMEOUT))


@asynccontextmanager
async def job_errors(base_url: str, job: Job) -> AsyncIterator[None]:
    """The HTTP failures of `job` as PullError, one line each."""
    import httpx

    where = display_url(base_url)
    try:
        yield
    except httpx.TimeoutException:
        raise PullError(f"Ollama at {where} sent nothing for {QUIET_LIMIT:.0f} s while "
                        f"{job.gerund} {job.name}; the {job.verb} was given up "
                        f"({job.again})") from None
    except httpx.HTTPError as exc:
        reason = one_line(str(exc)) or type(exc).__name__
        raise PullError(f"the connection to Ollama at {where} was lost while {job.gerund} "
                        f"{job.name} ({reason}); {job.again}") from None


async def refuse_unless(response: httpx.Response, base_url: str, job: Job, *accepted: int) -> None:
    """PullError with the server's words unless the response's status is one of `accepted`."""
    if response.status_code in accepted:
        return
    body = (await response.aread()).decode("utf-8", "replace")
    raise PullError(f"Ollama at {display_url(base_url)} refused to {job.verb} "
                    f"{job.name} ({status_phrase(response.status_code)}): "
                    f"{server_words(server_error_message(body))}")


async def pull_model(base_url: str, name: str, progress: PullProgress) -> None:
    """Pull `name` into the Ollama at `base_url`, reporting progress; PullError (one line)
    when the model did not arrive. Cancelling it (Ctrl-C) closes the connection, which
    stops the pull (Ollama keeps what it fetched)."""
    job = Job("pull", name)
    async with job_errors(base_url, job), job_client() as client, \
            client.stream("POST", base_url.rstrip("/") + "/api/pull",
                          json={"model": name, "stream": True}) as response:
        await refuse_unless(response, base_url, job, 200)
        await read_status_stream(response, job, LayerProgress(progress).update)


async def read_status_stream(response: httpx.Response, job: Job,
                             on_line: Callable[[dict[str, Any]], None]) -> None:
    """Read the job's status lines until "success"; PullError for an error line or an early
    end."""
    async for raw in response.aiter_lines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            raise PullError(f"Ollama's answer to the {job.verb} of {job.name} is not its status "
                            f"stream: {server_words(raw)}") from None
        if not isinstance(line, dict):
            continue
        error = line.get("error")
        if error:
            raise PullError(f"Ollama could not {job.verb} {job.name}: {server_words(str(error))}")
        if line.get("status") == "success":
            return
        on_line(line)
    raise PullError(f"Ollama's answer ended before the {job.verb} of {job.name} finished; "
                    f"{job.again}")


def server_words(text: str) -> str:
    """A server's words on one line, control characters made visible."""
    return visible(one_line(text))


# ---------------------------------------------------------------- importing a GGUF file
#
# `--local --model ./x.gguf` without the local extra (Ollama's API reference, "Create a Model",
# "Check if a Blob Exists", "Push a Blob"): the file goes up as a blob addressed by its SHA-256,
# `POST /api/blobs/sha256:<hex>` with the file's bytes as the body (201 Created; 200 when Ollama
# has it already; 400 when the bytes do not match the digest); `HEAD` on the same path answers
# 200 when the blob is there, 404 when not. Then `POST /api/create` with `{"model", "files":
# {"<file name>": "sha256:<hex>"}, "stream": true}` makes a model of it, streaming status lines
# ("parsing GGUF", "using existing layer ...", "writing manifest") that end with "success" or
# an `{"error"}` line. The model's name is derived from the file's name and digest
# (`ollama_name`), so the same file is imported once and a changed file is a new model. The
# file is sent a chunk at a time, read in a worker thread: a model of several gigabytes never
# sits in memory.

UPLOAD_CHUNK = 1 << 20
NAME_PREFIX = "tether-"
STEM_LIMIT = 48
"""Characters of the file's stem kept in the model's name (Ollama allows 80 in a name)."""
DIGEST_SHOWN = 12


def ollama_name(path: Path, digest: str) -> str:
    """`tether-<stem>-<first 12 hex of the digest>`, lower case, only the characters Ollama
    takes in a model name (letters, digits, `_`, `-`, `.` but never two dots in a row)."""
    stem = re.sub(r"\.{2,}", ".", re.sub(r"[^a-z0-9_.-]+", "-", path.stem.lower()))
    stem = stem.strip("-._")[:STEM_LIMIT].strip("-._")
    return f"{NAME_PREFIX}{stem or 'model'}-{digest[:DIGEST_SHOWN].lower()}"


def source_name(path: Path) -> str:
    """The file's name as `/api/create` takes it: Ollama refuses a name with `\\` or `:`."""
    return re.sub(r"[\\:]", "_", path.name)


async def import_gguf(base_url: str, name: str, path: Path, digest: str,
                      progress: PullProgress) -> None:
    """Make `path` (whose SHA-256 is `digest`) the model `name` in the Ollama at `base_url`,
    uploading it unless Ollama has the blob already; PullError (one line) when it did not
    become a model. Cancelling it closes the connection: Ollama drops a blob cut short."""
    job = Job("import", name, "run again to start it over")
    blob = f"/api/blobs/sha256:{digest}"
    async with job_errors(base_url, job), \
            job_client(base_url.rstrip("/")) as client:
        if not await has_blob(client, blob, base_url, job):
            size = file_size(path)
            response = await client.post(blob, content=file_chunks(path, size, progress),
                                         headers={"Content-Length": str(size)})
            await refuse_unless(response, base_url, job, 200, 201)
        body = {"model": name, "files": {source_name(path): f"sha256:{digest}"}, "stream": True}
        async with client.stream("POST", "/api/create", json=body) as created:
            await refuse_unless(created, base_url, job, 200)
            await read_status_stream(created, job, lambda line: None)


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as exc:
        raise PullError(f"cannot read {path}: {exc.strerror or exc}") from None


async def has_blob(client: httpx.AsyncClient, blob: str, base_url: str, job: Job) -> bool:
    response = await client.head(blob)
    if response.status_code == 404:
        return False
    await refuse_unless(response, base_url, job, 200)
    return True


async def file_chunks(path: Path, size: int, progress: PullProgress) -> AsyncIterator[bytes]:
    """The file's bytes, read in a worker thread a chunk at a time, progress told as each
    chunk is handed to the connection; PullError when the file cannot be read."""
    sent = 0
    try:
        handle = await asyncio.to_thread(open_regular, path)
        try:
            while chunk := await asyncio.to_thread(handle.read, UPLOAD_CHUNK):
                yield chunk
                sent += len(chunk)
                progress(min(sent, size), size)
        finally:
            handle.close()
    except OSError as exc:
        raise PullError(f"cannot read {path} while importing it: {exc.strerror or exc}") from None
