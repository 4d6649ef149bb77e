"""Trusted folders: where a project's own allow rules count, kept in TRUST_FILE by
real path and identity, so a folder put in a trusted one's place is not trusted."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..host import LoadedFile, read_json_file, write_json_state
from .project_config import RULES_FILE

PROJECT_FILE = RULES_FILE
"""The project's own rules file, whose allow rules count only in a trusted folder."""

TRUST_FILE = "trusted.json"


@dataclass(frozen=True)
class TrustedFolder:
    """One entry of trusted.json: a folder's real path and, since identities are kept,
    its device and inode, so a folder put in its place (or a symlink) is not trusted."""

    path: Path
    identity: tuple[int, int] | None
    """(device, inode) when trusted; None for an entry written before identities were kept."""

    @classmethod
    def of(cls, folder: Path) -> TrustedFolder:
        real = _resolved(folder)
        info = os.stat(real)
        return cls(real, (info.st_dev, info.st_ino))

    @classmethod
    def from_json(cls, item: object) -> TrustedFolder | None:
        """An entry as stored: a plain path (older files) or {"path", "device", "inode"}."""
        if isinstance(item, str):
            return cls(Path(item), None) if os.path.isabs(item) else None
        if not isinstance(item, dict):
            return None
        path, device, inode = item.get("path"), item.get("device"), item.get("inode")
        if not (isinstance(path, str) and os.path.isabs(path)):
            return None
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (device, inode)):
            return None
        return cls(Path(path), (device, inode))  # type: ignore[arg-type]

    def to_json(self) -> object:
        if self.identity is None:
            return str(self.path)
        return {"path": str(self.path), "device": self.identity[0], "inode": self.identity[1]}

    def covers(self, target: Path) -> bool:
        """`target` (a real path) is this folder or below it, this is still the folder that
        was trusted, and no git repository of its own lies in between."""
        if not (target == self.path or self.path in target.parents):
            return False
        if self.identity is not None:
            try:
                info = os.stat(self.path, follow_symlinks=False)
            except OSError:
                return False
            if (info.st_dev, info.st_ino) != self.identity:
                return False
        between = [target, *target.parents]
        between = between[: between.index(self.path)]
        return not any(os.path.lexists(folder / ".git") for folder in between)


class TrustStore:
    """Folders whose project allow rules the user accepted, in `home/trusted.json`.

    Trust covers subfolders, except one that is a git repository of its own
    (it needs its own trust), and only while the folder is the one trusted.
    """

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / TRUST_FILE

    def is_trusted(self, folder: Path) -> bool:
        """True when `folder` or one of its parents was trusted (see TrustedFolder.covers)."""
        target = _resolved(folder)
        return any(entry.covers(target) for entry in self._folders())

    def trust(self, folder: Path) -> None:
        """Remember `folder`. Raises StateFileError (and writes nothing) when the file
        could not be read: replacing it would lose every folder it lists."""
        loaded = self._load()
        entry = TrustedFolder.of(folder)
        # An older entry for the same folder is replaced; entries this version cannot
        # use (another format, a relative path) are kept, not dropped.
        kept = [item for item in loaded.data or [] if _entry_path(item) != entry.path]
        write_json_state(self.path, [*kept, entry.to_json()], loaded)

    @property
    def problem(self) -> str:
        """Why the file cannot be read ("" when it can, or is absent)."""
        return self._load().problem

    def _load(self) -> LoadedFile:
        return read_json_file(self.path, _trust_shape)

    def _folders(self, loaded: LoadedFile | None = None) -> list[TrustedFolder]:
        # An unreadable or hand-broken file trusts nothing: the safe reading.
        data = (loaded or self._load()).data or []
        # Stored paths are real paths already; resolving them again would let a symlink
        # put in a trusted folder's place carry its trust to wherever it points.
        return [f for f in map(TrustedFolder.from_json, data) if f is not None]


def _entry_path(item: object) -> Path | None:
    entry = TrustedFolder.from_json(item)
    return entry.path if entry is not None else None


def _trust_shape(data: Any) -> str:
    return "" if isinstance(data, list) else "does not hold a list of folders"


def _resolved(folder: Path) -> Path:
    return Path(folder).expanduser().resolve()


REPO_SCAN_LIMIT = 2000
"""Directories looked at when asking whether a folder holds git repositories."""


def too_broad_to_trust(folder: Path, user_home: Path) -> str | None:
    """Why `folder` must not become trusted as a side effect of an [a]lways answer:
    it is the user's home, the file system root, or (not being a repository
    itself) it holds git repositories. None when it may."""
    real = _resolved(folder)
    if real == _resolved(user_home):
        return "it is your home folder"
    if real == Path(real.anchor):
        return "it is the root of the file system"
    if os.path.lexists(real / ".git"):
        return None  # a repository: repositories inside it need their own trust anyway
    if _holds_repositories(real):
        return "it holds other git repositories"
    return None


def _holds_repositories(folder: Path, depth: int = 3) -> bool:
    """Whether a git repository lies within `depth` levels (symlinks not followed)."""
    seen = 0
    level = [folder]
    for _ in range(depth):
        below: list[Path] = []
        for current in level:
            try:
                children = [e for e in os.scandir(current) if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            for child in children:
                seen += 1
                if seen > REPO_SCAN_LIMIT:
                    return True  # too big to tell: the careful answer
                if os.path.lexists(os.path.join(child.path, ".git")):
                    return True
                below.append(Path(child.path))
        level = below
    return False
