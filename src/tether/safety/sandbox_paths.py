"""What stays read-only inside a writable project: git's folder, tether's own project config
(`project_config.PROJECT_CONFIG`), the project's instruction files (AGENTS.md) and the
project files that config runs (`config_programs`).

A command in the workspace-write sandbox may change the project, but not what
tether or git later runs *outside* the sandbox on the project's behalf: a hook
in `.git/hooks`, a clean filter or `core.hooksPath` in `.git/config`, a
`.git/commondir` that points git at a copy with hooks of its own, or allow
rules in `.permissions.json`, nor the AGENTS.md the next request carries, nor
the MCP server list and the script a server entry starts. So the whole git
directory is read-only inside the sandbox (git commands that write, such as
commit or checkout, fail there and need to run outside it), and so is every
path in `PROJECT_CONFIG`, every instruction file name of the root
(`instruction_entries`; the folders above the root are outside the writable
bind already) and every file `config_programs.named_programs` finds.

A read-only mount cannot be renamed away, but the folder holding it could be:
`mv .claude x; mkdir .claude` would put a new, writable `.claude/agents` where
tether looks. So every folder between the root and a protected path is
`pinned`: bound onto itself, writable, which makes it a mount point that no
command can rename or remove (EBUSY).

A path that does not exist yet is covered too, or the command could create
it: tether makes a placeholder (an empty folder, or a file holding the
entry's `stand_in`, e.g. `{}` for a JSON file, so tether reading it meanwhile
sees valid, empty settings) that the sandbox mounts read-only, and removes it
again, if still untouched, once no sandboxed command is left running. For a
nested path the placeholder is its first missing folder. The same goes for a folder
that a `.git` file (`gitdir: ...`) or a `.git` symlink names but that does not exist:
git would use whatever repository a command made there.

Paths are resolved as the kernel resolves them (`paths.resolve_path`): through a
symlink, the file it names is what is mounted. The symlink itself, when it sits in a
writable folder, no mount can hold: bubblewrap mounts onto what a link names, never onto
the link, so a command could remove an AGENTS.md that is a link to CLAUDE.md (or a
`.tether` that is a link to a shared folder) and write its own in its place. So every link
on the way to a protected entry is written down before the command (`entry_links`) and put
back once it ended (`restore_links`); what the command left in its place is kept beside
it, renamed, so nothing is lost and tether never reads it as its configuration.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..host import MAX_POINTER_BYTES, is_within, read_file_bytes, resolve_path
from .config_programs import named_programs
from .project_config import PROJECT_CONFIG, ConfigPath, Kind

GIT_ENTRY = ".git"


@dataclass(frozen=True)
class Protected:
    path: Path
    """A real path (symlinks resolved), as bubblewrap mounts it."""
    kind: Kind
    stand_in: bytes = b""


def real(path: Path) -> Path:
    """bubblewrap mounts onto real paths: a symlinked directory must be resolved first,
    the way the kernel does (a loop or a NUL byte leaves the path as written)."""
    written = Path(path).expanduser()
    try:
        return Path(resolve_path(str(written), os.getcwd()))
    except (OSError, ValueError):
        return written.absolute()


def instruction_entries(names: Sequence[str]) -> tuple[ConfigPath, ...]:
    """The project root's instruction files (AGENTS.md and the names that stand in for it),
    which the next request's system prompt is built from. A missing one is held by an
    empty folder of its name, not an empty file: the loader reads files only, so the folder
    changes nothing (an empty AGENTS.md would hide the CLAUDE.md next to it), and git status
    does not show it."""
    return tuple(ConfigPath(name, "dir") for name in dict.fromkeys(names))


def protected_paths(
    root: Path, instructions: Sequence[str] = (), hidden: Path | None = None
) -> list[Protected]:
    """What a workspace-write sandbox mounts read-only over `root` (a real path), with the
    instruction files named `instructions`. `hidden` is a folder the sandbox covers with an
    empty one (tether's state directory): nothing under it needs protecting or a
    placeholder, unless it is inside `root` and does not exist yet."""
    found = git_paths(root)
    for entry in (*PROJECT_CONFIG, *instruction_entries(instructions)):
        found += _config_path(root, entry)
    found += [Protected(program, "file") for program in named_programs(root)]
    if hidden is not None:
        found = [item for item in found if not _covered(item.path, hidden, root)]
        found += _missing_folder(root, hidden)
    return list(dict.fromkeys(found))


def _covered(path: Path, hidden: Path, root: Path) -> bool:
    """Whether the sandbox hides `path` behind the empty folder over `hidden`: the root is
    bound again over it when it lies inside (but is not) the hidden folder."""
    if not is_within(path, hidden) or not hidden.is_dir():
        return False
    return not (is_within(root, hidden) and root != hidden and is_within(path, root))


def pinned(root: Path, protected: Sequence[Protected]) -> list[Path]:
    """The folders between `root` and each protected path, outermost first: bound onto
    themselves so that no command can rename or remove one and put another in its place.
    A folder inside a protected folder is read-only already and left out."""
    folders = [Path(*item.path.parts[:depth]) for item in protected if is_within(item.path, root)
               for depth in range(len(root.parts) + 1, len(item.path.parts))]
    read_only = [item.path for item in protected if item.kind == "dir"]
    kept = [folder for folder in dict.fromkeys(folders)
            if not any(is_within(folder, ro) for ro in read_only)]
    return sorted(kept, key=lambda folder: len(folder.parts))


def git_paths(root: Path) -> list[Protected]:
    """The git directory, or the `.git` file and the folders it points to (worktrees,
    submodules); a placeholder folder where there is no `.git`, so none can be made."""
    entry = root / GIT_ENTRY
    if not os.path.lexists(entry):
        return [Protected(entry, "dir")]
    target = real(entry)
    if target.is_dir():
        return [Protected(target, "dir")]
    if not target.is_file():
        # A dangling link: git would use the folder it names once a command made it.
        return _missing_folder(root, target)
    found = [Protected(target, "file")]
    gitdir = _pointed_to(target, "gitdir: ")
    if gitdir is None:
        return found
    if not gitdir.is_dir():
        return found + _missing_folder(root, gitdir)
    found.append(Protected(gitdir, "dir"))
    common = _pointed_to(gitdir / "commondir", "")
    if common is not None and common.is_dir():
        found.append(Protected(common, "dir"))
    return found


@dataclass(frozen=True)
class EntryLink:
    path: Path
    """A symlink inside the root on the way to a protected entry (the entry itself, or a
    folder above it), as written: not resolved."""
    target: str
    """What it pointed to before the command ran."""


def entry_links(root: Path, instructions: Sequence[str] = ()) -> list[EntryLink]:
    """The symlinks in `root` (a real path) on the way to a protected entry: each component
    of `.git`, the config paths and the instruction names that is a link now."""
    names = [GIT_ENTRY, *(entry.name for entry in PROJECT_CONFIG), *instructions]
    found: dict[Path, EntryLink] = {}
    for name in names:
        for depth in range(1, len(Path(name).parts) + 1):
            path = root.joinpath(*Path(name).parts[:depth])
            with contextlib.suppress(OSError):
                found.setdefault(path, EntryLink(path, os.readlink(path)))
    return list(found.values())


def restore_links(links: Sequence[EntryLink]) -> list[str]:
    """Put back every link a command removed or changed; what it left in a link's place is
    renamed to `<name>.from-sandbox[-N]`. Returns one line per link put back."""
    restored = []
    for link in links:
        with contextlib.suppress(OSError):
            if os.path.islink(link.path) and os.readlink(link.path) == link.target:
                continue
            kept = _set_aside(link.path) if os.path.lexists(link.path) else None
            os.symlink(link.target, link.path)
            restored.append(f"{link.path} was a link to {link.target}, which the sandbox keeps "
                            f"as it was" + (f"; the command's version is in {kept}" if kept else ""))
    return restored


def _set_aside(path: Path) -> Path:
    for n in range(1000):
        aside = path.with_name(f"{path.name}.from-sandbox" + (f"-{n}" if n else ""))
        if not os.path.lexists(aside):
            os.rename(path, aside)
            return aside
    raise FileExistsError(path)


def _missing_folder(root: Path, target: Path) -> list[Protected]:
    """A placeholder for a folder that does not exist yet, so no command can make it: its
    first missing folder inside `root` (outside it, all but the private /tmp is read-only)."""
    if os.path.lexists(target) or not is_within(str(target), str(root)) or target == root:
        return []
    return [Protected(_first_missing(root, target), "dir")]


def _first_missing(root: Path, target: Path) -> Path:
    missing = target
    while missing.parent != root and not os.path.lexists(missing.parent):
        missing = missing.parent
    return missing


def _pointed_to(file: Path, prefix: str) -> Path | None:
    """The folder a `.git` file (`gitdir: ...`) or a `commondir` file names, relative to its folder."""
    try:
        raw = read_file_bytes(file, MAX_POINTER_BYTES)  # a FIFO `.git` must not hang
    except OSError:
        return None
    text = raw.decode("utf-8", errors="replace").strip()
    if not text.startswith(prefix) or not text[len(prefix):].strip():
        return None
    return real(file.parent / text[len(prefix):].strip())


def _config_path(root: Path, entry: ConfigPath) -> list[Protected]:
    target = real(root / entry.name)  # through a symlink, the file it names is what tether reads
    if os.path.lexists(target):
        return [Protected(target, "dir" if target.is_dir() else "file")]
    if not is_within(str(target), str(root)):
        return []  # outside the project everything but /tmp is read-only already
    missing = _first_missing(root, target)
    if missing != target:
        return [Protected(missing, "dir")]
    return [Protected(missing, entry.kind, entry.stand_in)]


class Placeholders:
    """Empty stand-ins for protected paths that do not exist, kept while any sandbox runs."""

    def __init__(self) -> None:
        self._made: list[Protected] = []
        self._users = 0
        self._lock = threading.Lock()

    def acquire(self, wanted: list[Protected]) -> list[Protected]:
        """Make the missing ones; returns the protected paths that now exist (to be mounted)."""
        with self._lock:
            self._users += 1
            present = []
            for item in wanted:
                if not os.path.lexists(item.path) and _make_empty(item):
                    self._made.append(item)
                if os.path.lexists(item.path):
                    present.append(item)
            return present

    def release(self) -> None:
        """One sandbox fewer; with none left, remove the placeholders nothing wrote into."""
        with self._lock:
            self._users = max(self._users - 1, 0)
            if self._users:
                return
            made, self._made = self._made, []
        for item in reversed(made):
            _remove_if_untouched(item)


def _make_empty(item: Protected) -> bool:
    try:
        if item.kind == "dir":
            item.path.mkdir()
        else:
            fd = os.open(item.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, item.stand_in)
            finally:
                os.close(fd)
    except OSError:
        return False  # a read-only project: the command cannot create it either
    return True


def _remove_if_untouched(item: Protected) -> None:
    with contextlib.suppress(OSError):
        if item.kind == "dir":
            item.path.rmdir()  # fails, as it should, when something was put inside
        elif not item.path.is_symlink() and item.path.read_bytes() == item.stand_in:
            item.path.unlink()
