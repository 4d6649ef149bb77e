"""Tags: the names each source file defines (with the signature's line) and the names it
refers to, from the grammar's tags query, or from the standard `ast` module for Python
without the extra. Kept per file by modification time and size, so a map made again
reads only the files that changed."""

from __future__ import annotations

import ast
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tether.host import NotARegularFile, TooLarge, read_small_file

from .ast_grammars import GrammarMissing, Grammars, language_of
from .ast_outline import node_signature, python_outline, whole_definition
from .file_text import BINARY_SNIFF_BYTES

TAG_MAX_FILE_BYTES = 512 * 1024
"""Bigger files (generated code, bundles) are listed without their definitions."""


@dataclass(frozen=True)
class Definition:
    name: str
    line: int
    """1-based."""
    signature: str


@dataclass(frozen=True)
class FileTags:
    definitions: tuple[Definition, ...] = ()
    references: Counter[str] = field(default_factory=Counter)
    """How often each name is referred to in the file."""


Stamp = tuple[int, int]
"""(modification time in ns, size): what says a file is unchanged."""


def stamp_of(path: Path) -> Stamp | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


class TagStore(Protocol):
    """Where tags outlive the process (repo_tag_store.TagStore)."""

    def get(self, path: Path, stamp: Stamp) -> FileTags | None: ...
    def put(self, entries: Iterable[tuple[Path, Stamp, FileTags]]) -> None: ...


@dataclass
class TagCache:
    """Tags per file, reused while the file's stamp is the same: from memory, else from
    the on-disk store, else parsed (and handed to the store by `save`)."""

    grammars: Grammars
    _entries: dict[Path, tuple[Stamp, FileTags]] = field(default_factory=dict)
    _fresh: list[Path] = field(default_factory=list)
    extracted: int = 0
    """Files read and parsed so far (the benchmark and the tests count rescans with it)."""
    loaded: int = 0
    """Files whose tags came from the on-disk store."""

    def tags(self, path: Path, stamp: Stamp, store: TagStore | None = None) -> FileTags:
        kept = self._entries.get(path)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        stored = store.get(path, stamp) if store is not None else None
        if stored is not None:
            self.loaded += 1
            tags = stored
        else:
            tags = self._extract(path)
            self.extracted += 1
            self._fresh.append(path)
        self._entries[path] = (stamp, tags)
        return tags

    def save(self, store: TagStore | None) -> None:
        """Hand the tags parsed since the last save to `store`."""
        fresh = [(p, *self._entries[p]) for p in dict.fromkeys(self._fresh) if p in self._entries]
        self._fresh.clear()
        if store is not None:
            store.put(fresh)

    def keep_only(self, wanted: set[Path]) -> None:
        """Drop the other entries: a big tree's tags beyond what the map uses stay on disk,
        not in memory."""
        for path in [p for p in self._entries if p not in wanted]:
            del self._entries[path]

    def _extract(self, path: Path) -> FileTags:
        language = language_of(path)
        source = _source(path)
        if language is None or source is None:
            return FileTags()
        if self.grammars.available:
            try:
                return _tree_sitter_tags(self.grammars, language, source)
            except GrammarMissing:
                pass  # this one grammar is missing: Python still has the fallback
        if language == "python":
            return _python_tags(source.decode("utf-8", "replace"))
        return FileTags()


def _source(path: Path) -> bytes | None:
    try:
        data = read_small_file(path, TAG_MAX_FILE_BYTES)
    except (TooLarge, NotARegularFile, OSError):
        return None
    return None if b"\0" in data[:BINARY_SNIFF_BYTES] else data


def _tree_sitter_tags(grammars: Grammars, language: str, source: bytes) -> FileTags:
    tree = grammars.parse(language, source)
    definitions: dict[tuple[str, int], Definition] = {}
    references: Counter[str] = Counter()
    for _, captures in grammars.matches(grammars.tags_query(language), tree.root_node):
        names = captures.get("name")
        if not names:
            continue
        name = names[0].text.decode("utf-8", "replace")
        for capture, nodes in captures.items():
            if capture.startswith("definition."):
                node = whole_definition(nodes[0])
                line = node.start_point[0] + 1
                definitions.setdefault((name, line), Definition(name, line, node_signature(node)))
            elif capture.startswith("reference."):
                references[name] += 1
    ordered = sorted(definitions.values(), key=lambda d: d.line)
    return FileTags(tuple(ordered), references)


def _python_tags(source: str) -> FileTags:
    """Definitions from `python_outline`; references are every name and attribute read."""
    try:
        tree = ast.parse(source)
        symbols = python_outline(tree)
    except (SyntaxError, ValueError, RecursionError):  # ValueError: a NUL byte in the source
        return FileTags()
    references: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            references[node.id] += 1
        elif isinstance(node, ast.Attribute):
            references[node.attr] += 1
    definitions = tuple(Definition(s.name, s.start, s.signature) for s in symbols)
    return FileTags(definitions, references)
