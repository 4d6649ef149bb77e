"""Groups the files of a tree by content: by size first, then by a hash of the content."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path


def file_hash(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def duplicate_groups(root: Path, min_size: int, algorithm: str) -> list[list[Path]]:
    by_size: dict[int, list[Path]] = defaultdict(list)
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.stat().st_size >= min_size:
            by_size[path.stat().st_size].append(path)
    groups = []
    for same_size in by_size.values():
        if len(same_size) < 2:
            continue
        by_hash: dict[str, list[Path]] = defaultdict(list)
        for path in same_size:
            by_hash[file_hash(path, algorithm)].append(path)
        groups.extend(g for g in by_hash.values() if len(g) > 1)
    return groups
