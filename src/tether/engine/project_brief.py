"""/init's draft of AGENTS.md: facts read from the project by plain code, written up by the model.

What can be read for certain (the file map, the manifests that say how to build and test,
the current AGENTS.md) is gathered here, so the draft does not rest on the model finding
them; the model gets these facts in one read-only turn (engine/read_only.py), may read more,
and answers with the file. The user sees the diff and says yes before anything is written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..host import read_small_file
from .projectmap import project_map

MAP_BUDGET = 4_000
"""Characters of the project map in the instruction."""
MANIFEST_BYTES = 64_000
"""Manifests larger than this are named but not read."""
MANIFEST_CHARS = 1_500
"""Characters of each manifest quoted to the model."""
CURRENT_CHARS = 8_000
"""Characters of an existing AGENTS.md quoted to the model."""

MANIFESTS: dict[str, tuple[str, ...]] = {
    "pyproject.toml": ("python -m pytest",),
    "setup.py": ("python -m pytest",),
    "package.json": (),  # its scripts say
    "Cargo.toml": ("cargo build", "cargo test"),
    "go.mod": ("go build ./...", "go test ./..."),
    "Makefile": (),  # its targets say
    "CMakeLists.txt": ("cmake -B build && cmake --build build",),
    "pom.xml": ("mvn test",),
    "build.gradle": ("./gradlew test",),
    "Gemfile": ("bundle exec rake test",),
}
"""Files that say how a project is built and tested, with the commands they usually mean."""
_MAKE_TARGET = re.compile(r"^([A-Za-z][\w.-]*):(?!=)", re.MULTILINE)

INIT_INSTRUCTION = """\
/init: write the AGENTS.md of this project: the instructions an assistant reads before it \
works here. Read what you need (you cannot change anything now), then answer with the whole \
file and nothing else: no code fence around it, no remarks before or after.

Keep it short and true for this project: what it is (one or two sentences), how to build, \
run and test it (the exact commands), how the code is laid out (the main folders and what \
they hold), and the conventions a change must follow (style, tests, what not to touch). \
Only what the files show; no generic advice.

Facts read from the project:

{facts}"""


def read_text(path: Path, limit: int) -> str | None:
    """A regular file's text (symlinks followed, nothing special opened), None when it is
    missing, not a regular file or larger than `limit` bytes."""
    try:
        return read_small_file(path, limit).decode("utf-8", "replace")
    except OSError:
        return None


def manifest_commands(name: str, text: str) -> list[str]:
    """The commands a manifest names: package.json's scripts, a Makefile's targets, else
    the usual ones for its kind."""
    if name == "package.json":
        try:
            scripts = json.loads(text).get("scripts", {})
        except (ValueError, AttributeError):
            return []
        return [f"npm run {key}" for key in scripts][:12] if isinstance(scripts, dict) else []
    if name == "Makefile":
        return [f"make {target}" for target in dict.fromkeys(_MAKE_TARGET.findall(text))][:12]
    return list(MANIFESTS.get(name, ()))


def project_facts(root: Path, current: str | None) -> str:
    """The facts /init hands the model: the file map, each manifest (head) with the
    commands it suggests, and the AGENTS.md there now."""
    parts = [f"Files (path size):\n{project_map(root, MAP_BUDGET) or '(no files)'}"]
    for name in MANIFESTS:
        text = read_text(root / name, MANIFEST_BYTES)
        if text is None:
            continue
        commands = manifest_commands(name, text)
        suggested = f"\nCommands it suggests: {', '.join(commands)}" if commands else ""
        parts.append(f"{name}:{suggested}\n```\n{text[:MANIFEST_CHARS]}\n```")
    if current is not None:
        parts.append(f"The AGENTS.md there now (keep what is still true):\n```\n"
                     f"{current[:CURRENT_CHARS]}\n```")
    return "\n\n".join(parts)


def init_request(root: Path, current: str | None) -> str:
    return INIT_INSTRUCTION.format(facts=project_facts(root, current))
