"""Finding skills: the search order, trust gating, and the index the system prompt carries.

Project folders come first so a project skill overrides a personal one of the same name,
but only in a trusted folder: a hostile repository must not hand the model instructions
or tools. The installed package never looks next to its own code, so an install cannot add
a skill the user did not put in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.textclip import clip_words
from ..safety.project_config import SKILL_FOLDERS
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

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def folder(self) -> Path | None:
        """The skill's folder (bundled files live there); None for a one-file skill."""
        return self.file.parent if self.file.name == SKILL_FILE else None

    def body(self) -> str:
        text = self.file.read_text(encoding="utf-8", errors="replace")
        return split_frontmatter(text)[1].strip()

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


def search_folders(root: Path, home: Path, user_home: Path, trusted: bool) -> list[tuple[Path, str]]:
    """The folders searched, in order, each with the label /skills shows."""
    found = [(root / f, f"project {f}") for f in PROJECT_FOLDERS] if trusted else []
    return found + [(home / "skills", "personal TETHER_HOME/skills"),
                    (user_home / ".agents" / "skills", "personal ~/.agents/skills")]


def candidates(folder: Path) -> list[tuple[str, Path]]:
    """(expected name, file) for every skill-shaped entry of one folder, in name order."""
    if not folder.is_dir():
        return []
    found = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and (entry / SKILL_FILE).is_file():
            found.append((entry.name, entry / SKILL_FILE))
        elif entry.is_file() and entry.suffix == ".md" and entry.name.upper() != "README.MD":
            found.append((entry.stem, entry))
    return found


def read_skill(expected: str, file: Path, source: str) -> Skill:
    """FrontmatterError or OSError when the file is not a valid skill."""
    if file.stat().st_size > MAX_FILE_BYTES:
        raise FrontmatterError(f"the file is larger than {MAX_FILE_BYTES} bytes", 1)
    text = file.read_text(encoding="utf-8", errors="replace")
    yaml_text = split_frontmatter(text)[0]
    return Skill(parse_frontmatter(yaml_text, expected), file, source)


def discover_skills(
    root: Path, home: Path, *, trusted: bool, user_home: Path | None = None
) -> SkillCatalog:
    catalog = SkillCatalog()
    seen: set[str] = set()
    for folder, source in search_folders(root, home, user_home or Path.home(), trusted):
        for expected, file in candidates(folder):
            if expected in seen:
                continue  # the first match on a name wins
            try:
                skill = read_skill(expected, file, source)
            except FrontmatterError as exc:
                catalog.problems.append(f"{file}:{exc.line}: {exc}; skill skipped")
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
