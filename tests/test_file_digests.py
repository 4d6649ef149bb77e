"""A big file's SHA-256 is remembered in the model cache while the file is unchanged: a second
`--local --model ./x.gguf` through Ollama does not hash the gigabyte again, and any write to the
file, a file put in its place or a cache that is corrupt or unwritable costs only a new hash."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tether.store import file_digests
from tether.store.file_digests import DIGESTS_FILE, cached_sha256, digests_file


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file actually hashed, in order (the real hash is still computed)."""
    seen: list[Path] = []
    real = file_digests.sha256_of

    def counting(path: Path) -> str:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(file_digests, "sha256_of", counting)
    return seen


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(5000))
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_unchanged_file_is_hashed_once(tmp_path: Path, model: Path, hashes: list[Path]) -> None:
    cache = tmp_path / "cache" / DIGESTS_FILE
    assert cached_sha256(model, cache) == sha(model)
    assert cached_sha256(model, cache) == sha(model)
    assert hashes == [model]
    assert json.loads(cache.read_text())[str(model.resolve())]["sha256"] == sha(model)


def test_a_write_of_the_same_size_is_hashed_again(tmp_path: Path, model: Path,
                                                   hashes: list[Path]) -> None:
    cache = tmp_path / DIGESTS_FILE
    cached_sha256(model, cache)
    stat = model.stat()
    with model.open("r+b") as handle:  # same size, and the modification time put back
        handle.seek(10)
        handle.write(b"changed")
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert cached_sha256(model, cache) == sha(model)
    assert len(hashes) == 2


def test_another_file_put_in_its_place_is_hashed(tmp_path: Path, model: Path,
                                                 hashes: list[Path]) -> None:
    cache = tmp_path / DIGESTS_FILE
    first = cached_sha256(model, cache)
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + bytes(4999) + b"x")
    os.replace(other, model)
    assert cached_sha256(model, cache) == sha(model) != first
    assert len(hashes) == 2


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"x": 3}', b"\xff\xfe"])
def test_a_corrupt_cache_costs_a_hash_and_is_rewritten(tmp_path: Path, model: Path,
                                                        hashes: list[Path], content: bytes) -> None:
    cache = tmp_path / DIGESTS_FILE
    cache.write_bytes(content)
    assert cached_sha256(model, cache) == sha(model)
    assert cached_sha256(model, cache) == sha(model)
    assert len(hashes) == 1


def test_a_cache_that_cannot_be_written_still_gives_the_digest(tmp_path: Path, model: Path,
                                                               hashes: list[Path]) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    assert cached_sha256(model, blocked / DIGESTS_FILE) == sha(model)
    assert cached_sha256(model, blocked / DIGESTS_FILE) == sha(model)
    assert len(hashes) == 2


def test_a_fifo_in_place_of_the_cache_is_not_waited_on(tmp_path: Path, model: Path,
                                                       hashes: list[Path]) -> None:
    cache = tmp_path / DIGESTS_FILE
    os.mkfifo(cache)
    assert cached_sha256(model, cache) == sha(model)


def test_without_a_cache_every_call_hashes(model: Path, hashes: list[Path]) -> None:
    cached_sha256(model, None)
    cached_sha256(model, None)
    assert len(hashes) == 2


def test_the_cache_lives_in_the_user_model_cache(tmp_path: Path) -> None:
    assert digests_file({"TETHER_HOME": str(tmp_path)}) == tmp_path / "models" / DIGESTS_FILE


def test_only_the_most_recent_files_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_digests, "KEPT_ENTRIES", 3)
    cache = tmp_path / DIGESTS_FILE
    files = []
    for n in range(5):
        path = tmp_path / f"m{n}.gguf"
        path.write_bytes(b"GGUF" + bytes([n]))
        files.append(path)
        cached_sha256(path, cache)
    assert list(json.loads(cache.read_text())) == [str(p.resolve()) for p in files[2:]]
