"""The user's cache of GGUF models for `tether --local`: where it is, what it holds, and
which file a `--model` value names.

The cache is the user's, never the project's: `$TETHER_HOME/models` when TETHER_HOME is set,
else `$XDG_CACHE_HOME/tether/models` (`~/.cache/tether/models`). A repository cannot plant a
model there, and a model never lands in the working tree. Each file fetched by tether has a
`NAME.gguf.json` beside it saying where it came from; a file put there by hand has none.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..host import NotARegularFile, TooLarge, read_small_file

GGUF_SUFFIX = ".gguf"
SOURCE_SUFFIX = ".json"
"""The sidecar beside a fetched model: `NAME.gguf.json`."""
PARTIAL_SUFFIX = ".part"
"""A download in progress; never a name the cache lists or loads."""
PARTIAL_DIR = "partial"
"""Where unfinished downloads wait, inside the cache folder but out of its listing."""
SOURCE_LIMIT = 64 * 1024


@dataclass(frozen=True)
class ModelSpec:
    """A model tether knows how to fetch: its file name, where from, and what it must be."""

    name: str
    url: str
    size: int
    sha256: str
    billions: float
    ollama: str = ""
    """The same model's name in Ollama's library, for `--local` through Ollama ("" for none)."""


DEFAULT_MODEL = ModelSpec(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    url="https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/"
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    # The sha256 of the published file (1,117,320,768 bytes), as `sha256sum` gives it.
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    billions=1.54,
    ollama="qwen2.5-coder:1.5b",
)
"""The model `tether --local` runs when none is named: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M."""


def models_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's model cache (see the module docstring); never under the project."""
    env = os.environ if env is None else env
    if env.get("TETHER_HOME"):
        return Path(env["TETHER_HOME"]).expanduser() / "models"
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "tether" / "models"


def file_name(name: str) -> str:
    return name if name.endswith(GGUF_SUFFIX) else name + GGUF_SUFFIX


def names_a_file(value: str) -> bool:
    """Whether a `--model` value is a path (`./m.gguf`, `~/m.gguf`, `/x/m.gguf`) rather than the
    name of a cached model."""
    return value.endswith(GGUF_SUFFIX) and (os.sep in value or value.startswith(("~", ".")))


@dataclass(frozen=True)
class CachedModel:
    name: str
    path: Path
    size: int
    source: str
    """The URL it was fetched from, or "placed by hand"."""


def cached_models(folder: Path) -> list[CachedModel]:
    """The GGUF files in the cache, by name; a folder that does not exist holds none."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    found = []
    for path in entries:
        if path.suffix != GGUF_SUFFIX or not path.is_file():
            continue
        found.append(CachedModel(path.stem, path, path.stat().st_size, source_of(path)))
    return found


def source_of(path: Path) -> str:
    """Where a cached model came from, as its sidecar says ("placed by hand" without one)."""
    try:
        data = json.loads(read_small_file(sidecar(path), SOURCE_LIMIT))
    except (OSError, ValueError, NotARegularFile, TooLarge):
        return "placed by hand"
    url = data.get("url") if isinstance(data, dict) else None
    return url if isinstance(url, str) and url else "placed by hand"


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + SOURCE_SUFFIX)


def remove_model(folder: Path, name: str) -> Path:
    """Delete the cached model `name` (with or without `.gguf`) and its sidecar; LookupError
    naming the cached ones when there is no such model. Only a plain name is taken, so
    nothing outside the cache can be named."""
    wanted = file_name(name.strip())
    if not wanted or Path(wanted).name != wanted or wanted.startswith("."):
        raise LookupError(f"{name!r} is not a model name (`tether models` lists them)")
    path = folder / wanted
    if not path.is_file():
        known = ", ".join(m.name for m in cached_models(folder)) or "none"
        raise LookupError(f"no cached model named {name!r}; cached: {known}")
    path.unlink()
    sidecar(path).unlink(missing_ok=True)
    return path


def format_size(size: int) -> str:
    """Bytes as people read them: "1.1 GB", "640 MB", "12 KB"."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
