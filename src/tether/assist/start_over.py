"""Starting over: the files a turn changed put back as they were when it began, so that the
model can try the request again from the start (assist/verify.VerifyGate decides when).

Asked to fix its own failing change, with that change and its reasoning in the history, a
small model writes the same code again: at temperature 0 word for word, and sampled the
history still pulls it back to the same draft (seen on tasks of several kinds: a reply
repeated four times over a failing check). A fresh attempt from the request, its replies
sampled, is a new draw, and the check the request names is the judge (resampling with a
verifier, as pass@k measures it). Only files read here when the turn began can be put back:
the files the request names and the code its named tests import, small and UTF-8, and a file
that did not exist yet. A turn that changed any other file is not started over.

Putting back goes through the dispatcher as `write_file` and `delete_file` calls the harness
makes (approval, the rules, the hooks, the undo commits and the evidence apply as to any
call), so the user sees each file put back and `/undo` can take it back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.messages import Evidence, ToolCall, new_call_id
from ..host import NotARegularFile, TooLarge, read_small_file, resolve_path

RESTORE_ID = "restore"
"""How the ids of the harness's calls that put a file back begin."""
FILE_LIMIT = 256 * 1024
"""A bigger file is not kept, so a turn that changes it is not started over."""
TOTAL_LIMIT = 1024 * 1024
ABSENT = None
"""Kept for a file that did not exist when the turn began."""


@dataclass(frozen=True)
class TurnStartFiles:
    """Files as they were when the turn began, by resolved absolute path: their text, or
    ABSENT for one that did not exist yet."""

    root: Path
    texts: dict[str, str | None]

    @classmethod
    def capture(cls, root: Path, names: Iterable[str]) -> TurnStartFiles:
        texts: dict[str, str | None] = {}
        total = 0
        for name in names:
            key = _key(root, name)
            if key is None or key in texts:
                continue
            path = Path(key)
            if not path.exists() and not path.is_symlink():
                texts[key] = ABSENT
                continue
            text = _text(path)
            if text is not None and total + len(text) <= TOTAL_LIMIT:
                texts[key] = text
                total += len(text)
        return cls(root, texts)

    def restorable(self, changed: Iterable[str]) -> bool:
        """Whether every path in `changed` (absolute, as the file tools report them) was
        kept, so that putting them back restores the turn's start."""
        paths = [str(path) for path in changed]
        return bool(paths) and all(_key(self.root, path) in self.texts for path in paths)

    def calls_to_restore(self, changed: Iterable[str]) -> list[ToolCall]:
        """The calls that put the `changed` files back (none for a file already as it was)."""
        calls: list[ToolCall] = []
        for key in dict.fromkeys(k for path in changed if (k := _key(self.root, str(path)))):
            before = self.texts[key]
            name = _shown(self.root, key)
            if before is ABSENT:
                if Path(key).exists() or Path(key).is_symlink():
                    calls.append(ToolCall(f"{RESTORE_ID}_{new_call_id()}", "delete_file", {"filepath": name}))
            elif _text(Path(key)) != before:
                calls.append(ToolCall(f"{RESTORE_ID}_{new_call_id()}", "write_file",
                                      {"filepath": name, "content": before}))
        return calls


def changed_in(evidence: Sequence[Evidence]) -> list[str]:
    """The paths the turn's calls changed, in order, each once."""
    return list(dict.fromkeys(str(path) for record in evidence for path in record.changed_paths))


def _key(root: Path, name: str) -> str | None:
    """The path `name` (relative to `root`, or absolute) resolves to, as the kernel does; None
    when it cannot be resolved or lies outside the project."""
    try:
        resolved = resolve_path(name, str(root))
        base = resolve_path(".", str(root))
    except (OSError, ValueError):
        return None
    if resolved != base and not resolved.startswith(base.rstrip("/") + "/"):
        return None
    return resolved


def _shown(root: Path, key: str) -> str:
    base = resolve_path(".", str(root)).rstrip("/") + "/"
    return key[len(base):] if key.startswith(base) else key


def _text(path: Path) -> str | None:
    try:
        return read_small_file(path, FILE_LIMIT).decode("utf-8")
    except (OSError, ValueError, NotARegularFile, TooLarge):
        return None
