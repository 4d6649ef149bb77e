"""Project instructions: the AGENTS.md files that reach every request through the system prompt.

The personal file (TETHER_HOME/AGENTS.md) comes first, then one file per folder from the git
root down to the working directory, so the nearest folder's words come last and win. A
folder's AGENTS.override.md replaces its AGENTS.md; a folder with neither falls back to the
first fallback name found there (CLAUDE.md by default). Project files are read only in a
trusted folder: a hostile repository must not speak to the model with the user's voice. The
working directory's trust does not reach up: a folder above it is read only when it is
trusted itself (a trust given to it or to a folder above it), and a file skipped for that is
named in `skipped`, which /context shows.
Every file is read through a `LoaderGate`: a project's file only when it resolves inside the
project (the chain's top folder), the personal one from anywhere but /proc, /dev and /sys,
neither when it is tether's saved keys, and only a regular file (a FIFO is a problem, not a
wait). A file refused for that is named in `problems` with the reason; nothing is included
from other files (no @-include syntax), so these are the only reads.
The text lives in the system prompt, outside the history, so compaction never touches it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..host import FileProblem
from ..safety.project_config import DEFAULT_FALLBACKS, instruction_names
from ..store.loader_gate import LoaderGate

DEFAULT_MAX_BYTES = 32 * 1024


@dataclass(frozen=True)
class InstructionFile:
    path: Path
    text: str


@dataclass
class ProjectInstructions:
    files: list[InstructionFile] = field(default_factory=list)
    cut: str = ""
    """The visible note when the cap cut the text, else ""."""
    problems: list[str] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    """Project files not read because their folder is not trusted, root first."""

    @property
    def paths(self) -> list[Path]:
        return [f.path for f in self.files]

    def text(self) -> str:
        """Every file's text under its path, root first; the cut note last."""
        parts = [f"## {f.path}\n{f.text.rstrip()}" for f in self.files]
        if self.cut:
            parts.append(self.cut)
        return "\n\n".join(parts)

    def prompt_section(self) -> str:
        if not self.files:
            return ""
        return ("\n\n# Project instructions (from the user's files; the later file wins)\n"
                + self.text())


def git_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` holding a .git (a directory or a file)."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def folders_down_to(cwd: Path) -> list[Path]:
    """The folders from the git root (or `cwd` itself outside a repository) down to `cwd`."""
    top = git_root(cwd) or cwd
    chain = []
    for folder in (cwd, *cwd.parents):
        chain.append(folder)
        if folder == top:
            break
    return list(reversed(chain))


def file_of_folder(folder: Path, fallbacks: Sequence[str]) -> Path | None:
    """The one instructions file a folder contributes, if any."""
    for name in instruction_names(fallbacks):
        candidate = folder / name
        if candidate.exists() and not candidate.is_dir():  # a FIFO too: refused with a note
            return candidate
    return None


def load_instructions(
    cwd: Path, home: Path, *, trusted: bool, fallbacks: Sequence[str] = DEFAULT_FALLBACKS,
    max_bytes: int = DEFAULT_MAX_BYTES, trusted_above: Callable[[Path], bool] = lambda f: False,
) -> ProjectInstructions:
    """`trusted` is the working directory's trust; `trusted_above` tells whether a folder
    above it (up to the git root) is trusted too."""
    found = ProjectInstructions()
    chain = folders_down_to(cwd)
    user, project = LoaderGate(home), LoaderGate(home, project=chain[0])
    paths = [p for p in (file_of_folder(home, ()),) if p is not None]
    for folder in chain:
        path = file_of_folder(folder, fallbacks)
        if path is None or path in paths:
            continue
        if trusted and (folder == cwd or trusted_above(folder)):
            paths.append(path)
        else:
            found.skipped.append(path)
    budget = max_bytes
    for path in paths:
        gate = user if path.parent == home else project
        try:
            data, size = gate.read_head(path, budget)
        except FileNotFoundError:
            continue  # gone since it was found
        except FileProblem as exc:
            found.problems.append(f"Instructions file skipped: {exc}")
            continue
        if size > budget:
            found.cut = (f"[instructions cut at {max_bytes} bytes: {size - budget} bytes "
                         f"of {path} and any later file not shown]")
            shown = data.decode("utf-8", errors="ignore")
            if shown:
                found.files.append(InstructionFile(path, shown))
            break
        budget -= len(data)
        found.files.append(InstructionFile(path, data.decode("utf-8", errors="replace")))
    return found
