"""Long-term memory: named notes the assistant keeps across sessions.

One JSON file, `{"version": 1, "memories": {name: {content, created, updated}}}`,
read fresh on every call (another tether may have changed it) and replaced
atomically after every change. A file that does not read back is never
overwritten: every operation reports it as corrupt, with its path, until the
user fixes or moves it.
"""

from __future__ import annotations

import builtins
import json
import re
import time
from pathlib import Path
from typing import Any

from ..core.textclip import clip_words
from ..host import FileProblem, atomic_write_json, dangling_link, read_file_bytes

FORMAT_VERSION = 1
MEMORY_FILE = "memory.json"
NAME_MAX = 64
CONTENT_MAX = 50_000
"""Characters one memory may hold; memory is for notes, not for copies of files."""
PREVIEW_WIDTH = 80

_NAME_RE = re.compile(r"^[A-Za-z0-9 _.\-]+$")


class MemoryCorrupt(Exception):
    """The memory file exists but cannot be read back; it is left untouched."""

    def __init__(self, path: Path, problem: str, unreadable: bool = False) -> None:
        # A file the system will not hand over (permissions, not a file) is not corrupt.
        state = f"cannot be read ({problem})" if unreadable else f"is corrupt ({problem})"
        super().__init__(
            f"The memory file {path} {state}. Nothing was read or changed; "
            "it will not be overwritten until the user fixes it or moves it away."
        )
        self.path = path
        self.problem = problem


def validate_name(name: str) -> str:
    """The name without surrounding spaces; ValueError explains what is wrong."""
    clean = name.strip()
    if not clean:
        raise ValueError("A memory name cannot be empty.")
    if len(clean) > NAME_MAX:
        raise ValueError(f"A memory name has at most {NAME_MAX} characters (got {len(clean)}).")
    if not _NAME_RE.match(clean):
        raise ValueError(
            f"Invalid memory name {clean!r}: use only letters, digits, spaces, '_', '.' and '-'."
        )
    return clean


class MemoryStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path).expanduser()

    def write(self, name: str, content: str) -> bool:
        """Create or replace a memory; True when it replaced an existing one."""
        name = validate_name(name)
        _check_size(content)
        memories = self._load()
        now = time.time()
        existing = memories.get(name)
        created = existing["created"] if existing else now
        memories[name] = {"content": content, "created": created, "updated": now}
        self._store(memories)
        return existing is not None

    def read(self, name: str) -> str:
        name = validate_name(name)
        return self._entry(self._load(), name)["content"]

    def list(self) -> builtins.list[tuple[str, str]]:
        """(name, first line of content cut to 80 characters), sorted by name."""
        memories = self._load()
        return [
            (name, _preview(memories[name]["content"]))
            for name in sorted(memories, key=str.casefold)
        ]

    def edit(self, name: str, old: str, new: str) -> None:
        """Replace the one occurrence of `old` in a memory with `new`."""
        name = validate_name(name)
        memories = self._load()
        entry = self._entry(memories, name)
        content = entry["content"]
        if not old:
            raise ValueError("old_content cannot be empty; use write_memory to replace everything.")
        count = content.count(old)
        if count == 0:
            raise ValueError(
                f"old_content was not found in memory {name!r}. Read it with read_memory "
                "and copy the exact text."
            )
        if count > 1:
            raise ValueError(
                f"old_content occurs {count} times in memory {name!r}; include more "
                "surrounding text so it occurs exactly once."
            )
        updated = content.replace(old, new, 1)
        _check_size(updated)
        entry.update(content=updated, updated=time.time())
        self._store(memories)

    def delete(self, name: str) -> None:
        name = validate_name(name)
        memories = self._load()
        self._entry(memories, name)
        del memories[name]
        self._store(memories)

    # ------------------------------------------------------------ helpers

    def _entry(self, memories: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
        if name in memories:
            return memories[name]
        raise LookupError(_missing_message(name, list(memories)))

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            raw = read_file_bytes(self.path).decode("utf-8")
        except FileNotFoundError:
            if dangling_link(self.path):
                raise MemoryCorrupt(self.path, "a symbolic link to a file that does not exist",
                                    unreadable=True) from None
            return {}
        except UnicodeDecodeError:
            raise MemoryCorrupt(self.path, "not UTF-8 text") from None
        except FileProblem as exc:  # a FIFO or a device is refused, not waited on
            raise MemoryCorrupt(self.path, exc.reason, unreadable=True) from None
        except OSError as exc:
            raise MemoryCorrupt(self.path, exc.strerror or str(exc), unreadable=True) from None
        try:
            return _memories_from(json.loads(raw))
        except json.JSONDecodeError as exc:
            raise MemoryCorrupt(self.path, f"not valid JSON: {exc}") from None
        except ValueError as exc:
            raise MemoryCorrupt(self.path, str(exc)) from None

    def _store(self, memories: dict[str, dict[str, Any]]) -> None:
        # Private notes about the user's work: readable by the owner only.
        atomic_write_json(self.path, {"version": FORMAT_VERSION, "memories": memories}, secret=True)


def _memories_from(data: Any) -> dict[str, dict[str, Any]]:
    """Raises ValueError naming what is wrong with the file's shape."""
    if not isinstance(data, dict):
        raise ValueError("it does not hold a JSON object")
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"unsupported format version {data.get('version')!r}")
    memories = data.get("memories")
    if not isinstance(memories, dict):
        raise ValueError("'memories' is missing or not an object")
    for name, entry in memories.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("content"), str)
            and all(_is_number(entry.get(k)) for k in ("created", "updated"))
        ):
            raise ValueError(f"memory {name!r} is not {{content, created, updated}}")
    return memories


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_size(content: str) -> None:
    if len(content) > CONTENT_MAX:
        raise ValueError(
            f"A memory holds at most {CONTENT_MAX} characters (this one has {len(content)}); "
            "keep the essentials, or split it into several memories."
        )


def _preview(content: str) -> str:
    line = next((ln.strip() for ln in content.splitlines() if ln.strip()), "")
    return clip_words(line, PREVIEW_WIDTH)


def _missing_message(name: str, names: list[str]) -> str:
    import difflib  # only for a name not found: the store is made at every start

    folded = {n.casefold(): n for n in names}
    near = difflib.get_close_matches(name.casefold(), list(folded), n=3, cutoff=0.6)
    if near:
        hint = ", ".join(repr(folded[n]) for n in near)
        return f"No memory named {name!r}. Did you mean {hint}?"
    if names:
        return f"No memory named {name!r}. get_memory_list shows the {len(names)} saved."
    return f"No memory named {name!r}; no memories are saved yet."
