"""Agent definitions: markdown files whose frontmatter names a sub-agent and whose body is its
instructions. Read from TETHER_HOME/agents/ and, in a trusted folder only (a hostile repository
must not hand the model new instructions), from .tether/agents/ and .claude/agents/.
Each file is read through a `LoaderGate` (a project's only from inside the project, never the
saved keys, only a regular file): a refused one is a warning with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..host import FileProblem
from ..safety.project_config import AGENT_FOLDERS
from .loader_gate import LoaderGate

MAX_DEFINITION_BYTES = 64_000
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    instructions: str
    tools: tuple[str, ...] | None = None
    """The tools it may use (a subset of the sub-agent table); None: all of them."""
    model: str = ""
    max_steps: int = 0
    source: Path | None = None


def definition_dirs(root: Path, home: Path, trusted: bool) -> list[tuple[Path, LoaderGate]]:
    """Later directories win on a name clash: the project's own over the user's. Each comes
    with the rules its files are read by."""
    dirs = [(home / "agents", LoaderGate(home))]
    if trusted:
        project = LoaderGate(home, project=root)
        dirs += [(root / folder, project) for folder in AGENT_FOLDERS]
    return dirs


def load_definitions(root: Path, home: Path, trusted: bool) -> tuple[dict[str, AgentDefinition], list[str]]:
    """Every readable definition by name, and one warning per file that could not be used."""
    found: dict[str, AgentDefinition] = {}
    warnings: list[str] = []
    for directory, gate in definition_dirs(root, home, trusted):
        refused = gate.refusal(directory) if directory.is_dir() else ""
        if refused:  # one warning for a folder that is a link out, not one per file
            warnings.append(f"Agent definitions skipped: {refused}")
            continue
        for path in sorted(directory.glob("*.md")) if directory.is_dir() else ():
            try:
                text = gate.read(path, MAX_DEFINITION_BYTES).decode("utf-8", "replace")
                definition = parse_definition(text, path)
            except FileProblem as exc:
                warnings.append(f"Agent definition skipped: {exc}")
                continue
            except (OSError, ValueError) as exc:
                warnings.append(f"agent definition {path}: {exc}")
                continue
            found[definition.name] = definition
    return found, warnings


def parse_definition(text: str, path: Path) -> AgentDefinition:
    """ValueError with a short reason for a file that is not a usable definition."""
    fields, body = split_frontmatter(text)
    name = fields.get("name", "") or path.stem
    if not name or set(name) - NAME_CHARS:
        raise ValueError("name must be lowercase letters, digits, - or _")
    tools = tuple(t for t in (w.strip() for w in fields.get("tools", "").strip("[]").split(",")) if t)
    steps = fields.get("max_steps", "0")
    if not steps.isdigit():
        raise ValueError(f"max_steps must be a number, not {steps!r}")
    return AgentDefinition(
        name=name,
        description=fields.get("description", "").strip() or "(no description)",
        instructions=body.strip(),
        tools=tools or None,
        model=fields.get("model", "").strip(),
        max_steps=int(steps),
        source=path,
    )


def split_frontmatter(text: str) -> tuple[dict[str, str], str]:
    """`key: value` lines between two `---` lines, and the body after them."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("no frontmatter (the file must start with a --- line)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("the frontmatter has no closing --- line") from None
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip().lower()] = value.strip().strip("\"'")
    return fields, "\n".join(lines[end + 1:])
