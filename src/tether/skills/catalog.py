"""Finding skills: the search order, trust gating, and the index the system prompt carries.

Personal folders come first, and a project's skills count only in a trusted folder: a
hostile repository must not hand the model instructions or tools. A project skill with the
name of a personal one is left out with a note: its scripts would be tools named like yours
(`<skill>__<script>`), judged by the rules and hooks you wrote for them, and `use_skill`
would hand the model the project's text where you expect your own. The installed package never looks next to its own code, so an install cannot add
a skill the user did not put in place. Every skill file is read through a `LoaderGate`: a
project's skill (its folder, its SKILL.md, its scripts) only when it resolves inside the
project, a personal one from anywhere but /proc, /dev and /sys, never tether's saved keys,
and only a regular file; what is refused is a problem with the reason, the skill skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.textclip import clip_words
from ..host import FileProblem
from ..safety.project_config import SKILL_FOLDERS
from ..store.loader_gate import LoaderGate
from .frontmatter import Frontmatter, FrontmatterError, parse_frontmatter, split_frontmatter

PROJECT_FOLDERS = SKILL_FOLDERS
SKILL_FILE = "SKILL.md"
PROMPT_BUDGET = 4000
"""Characters the skill index may take in the system prompt."""
MIN_DESCRIPTION = 40
MAX_FILE_BYTES = 256 * 1024
MAX_BUNDLED = 200
"""Bundled files listed by use_skill; a folder with more says how many were left out."""


@dataclass(frozen=True)
class Skill:
    meta: Frontmatter
    file: Path
    """SKILL.md, or the one-file skill's <name>.md."""
    source: str
    """Where it was found, as /skills shows it."""
    gate: LoaderGate = field(compare=False)
    """The rules its files are read by (a project's or the user's)."""

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def folder(self) -> Path | None:
        """The skill's folder (bundled files live there); None for a one-file skill."""
        return self.file.parent if self.file.name == SKILL_FILE else None

    def body(self) -> str:
        """The instructions; FileProblem (or FileNotFoundError) when the file may no longer
        be read (a link swapped in since it was found)."""
        return split_frontmatter(self._text())[1].strip()

    def _text(self) -> str:
        return self.gate.read(self.file, MAX_FILE_BYTES).decode("utf-8", errors="replace")

    def bundled_files(self) -> tuple[list[Path], int]:
        """The files of the skill's folder but SKILL.md, relative to it (at most MAX_BUNDLED),
        and how many more there are."""
        if self.folder is None:
            return [], 0
        found = sorted(
            p.relative_to(self.folder) for p in self.folder.rglob("*")
            if p.is_file() and p != self.file and "__pycache__" not in p.parts
        )
        return found[:MAX_BUNDLED], max(0, len(found) - MAX_BUNDLED)


@dataclass
class SkillCatalog:
    skills: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def names(self) -> list[str]:
        return [s.name for s in self.skills]


def search_folders(
    root: Path, home: Path, user_home: Path, trusted: bool
) -> list[tuple[Path, str, LoaderGate]]:
    """The folders searched, in order, each with the label /skills shows and its rules:
    the personal ones first (see the module's text)."""
    project, user = LoaderGate(home, project=root), LoaderGate(home)
    found = [(root / f, f"project {f}", project) for f in PROJECT_FOLDERS] if trusted else []
    return [(home / "skills", "personal TETHER_HOME/skills", user),
            (user_home / ".agents" / "skills", "personal ~/.agents/skills", user)] + found


def candidates(folder: Path) -> list[tuple[str, Path]]:
    """(expected name, file) for every skill-shaped entry of one folder, in name order."""
    if not folder.is_dir():
        return []
    found = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and _present_file(entry / SKILL_FILE):
            found.append((entry.name, entry / SKILL_FILE))
        elif _present_file(entry) and entry.suffix == ".md" and entry.name.upper() != "README.MD":
            found.append((entry.stem, entry))
    return found


def _present_file(path: Path) -> bool:
    """Something that is not a folder is there (a FIFO too: reading it is refused, with a
    note, instead of the skill vanishing without one)."""
    return path.exists() and not path.is_dir()


def read_skill(expected: str, file: Path, source: str, gate: LoaderGate) -> Skill:
    """FrontmatterError or OSError (FileProblem: one line naming the file) when the file is
    not a valid skill or may not be read."""
    text = gate.read(file, MAX_FILE_BYTES).decode("utf-8", errors="replace")
    yaml_text = split_frontmatter(text)[0]
    return Skill(parse_frontmatter(yaml_text, expected), file, source, gate)


def discover_skills(
    root: Path, home: Path, *, trusted: bool, user_home: Path | None = None
) -> SkillCatalog:
    catalog = SkillCatalog()
    personal: set[str] = set()
    seen: set[str] = set()
    for folder, source, gate in search_folders(root, home, user_home or Path.home(), trusted):
        refused = gate.refusal(folder) if folder.exists() else ""
        if refused:  # one note for a skills folder that is a link out, not one per skill
            catalog.problems.append(f"Skills folder skipped: {refused}")
            continue
        for expected, file in candidates(folder):
            if gate.project is not None and expected in personal:
                catalog.problems.append(
                    f"Skill {expected!r} in {file} has the name of one of your own skills and "
                    "is not used: rename it there to use it")
                continue
            if gate.project is None:
                personal.add(expected)  # a broken one too: the project's must not stand in
            if expected in seen:
                continue  # the first match on a name wins
            try:
                skill = read_skill(expected, file, source, gate)
            except FrontmatterError as exc:
                catalog.problems.append(f"{file}:{exc.line}: {exc}; skill skipped")
                continue
            except FileProblem as exc:
                catalog.problems.append(f"Skill skipped: {exc}")
                continue
            except OSError as exc:
                catalog.problems.append(f"{file}: cannot be read ({exc.strerror or exc}); "
                                        "skill skipped")
                continue
            seen.add(expected)
            catalog.skills.append(skill)
    return catalog


def prompt_index(skills: list[Skill], budget: int = PROMPT_BUDGET) -> str:
    """Names and descriptions in name order; descriptions shortened to fit, no skill dropped."""
    if not skills:
        return ""
    ordered = sorted(skills, key=lambda s: s.name)
    head = ("\n\n# Skills\nLoad one with use_skill(name) when the task matches its "
            "description; it brings instructions and maybe tools.\n")
    fixed = len(head) + sum(len(f"- {s.name}: \n") for s in ordered)
    share = max(MIN_DESCRIPTION, (budget - fixed) // len(ordered))
    lines = [f"- {s.name}: {shortened(s.meta.description, share)}" for s in ordered]
    return head + "\n".join(lines)


def shortened(text: str, limit: int) -> str:
    return clip_words(" ".join(text.split()), limit)
