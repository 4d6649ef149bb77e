"""The SHA-256 of a big file, remembered while the file stays the same.

Importing a GGUF into Ollama needs its digest on every run (the model's name and the blob's
address both come from it), and hashing a 1 GB file takes seconds. The digest is kept in a
small JSON file in the user's model cache, keyed by the file's resolved path, and trusted only
while the file's size, modification time, change time, inode and device are all what they were
when it was hashed: any write to the file moves its change time, which no user call can set
back. A cache that is missing, corrupt or unwritable only costs the hash again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from ..host import NotARegularFile, TooLarge, atomic_write_json, read_small_file
from .model_download import sha256_of
from .models import models_dir

DIGESTS_FILE = "digests.json"
"""In the model cache folder."""
KEPT_ENTRIES = 64
"""The most recently hashed files kept; older ones are hashed again if ever asked for."""
CACHE_LIMIT = 256 * 1024


def digests_file(env: Mapping[str, str]) -> Path:
    return models_dir(env) / DIGESTS_FILE


def file_stamp(stat: os.stat_result) -> list[int]:
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


def read_cache(cache: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(read_small_file(cache, CACHE_LIMIT))
    except (OSError, ValueError, NotARegularFile, TooLarge):
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: entry for key, entry in data.items() if isinstance(entry, dict)}


def cached_sha256(path: Path, cache: Path | None) -> str:
    """The hex SHA-256 of `path`, from `cache` (a JSON file; None: none) when the file is
    unchanged since it was hashed, else hashed now and remembered. OSError when `path`
    cannot be read; a cache that cannot be read or written is only not used."""
    if cache is None:
        return sha256_of(path)
    key = str(path.resolve())
    before = file_stamp(path.stat())
    entries = read_cache(cache)
    known = entries.get(key, {})
    digest = known.get("sha256")
    if known.get("stamp") == before and isinstance(digest, str) and len(digest) == 64:
        return digest
    digest = sha256_of(path)
    if file_stamp(path.stat()) != before:  # written to while hashed: remember nothing
        return digest
    entries.pop(key, None)
    entries[key] = {"stamp": before, "sha256": digest}
    kept = dict(list(entries.items())[-KEPT_ENTRIES:])
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(cache, kept)
    except OSError:
        pass  # an unwritable cache costs the hash next time, nothing else
    return digest
