"""The documentation must not name things that are gone, and must name what exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tether.cli import build_parser
from tether.core.toolspec import ToolContext
from tether.store.config import Settings
from tether.tools import builtin_tools

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
ARCHITECTURE = (REPO / "ARCHITECTURE.md").read_text()
SRC = REPO / "src" / "tether"


def cli_flags() -> set[str]:
    flags = set()
    for action in build_parser()._actions:
        flags.update(o for o in action.option_strings if o.startswith("--"))
    return flags - {"--help"}


@pytest.mark.parametrize("doc", ["README.md", "ARCHITECTURE.md"])
def test_named_files_exist(doc: str) -> None:
    text = (REPO / doc).read_text()
    for path in set(re.findall(r"`((?:src/|tests/|bench/|\.ci/)[\w./-]+)`", text)):
        assert (REPO / path).exists(), f"{doc} names {path}, which does not exist"


def test_architecture_module_map_matches_the_package() -> None:
    named = set(re.findall(r"^\s+([\w/]+\.py)\b", ARCHITECTURE, re.M))
    assert named, "the module map lists modules"
    for module in named:
        assert list(SRC.rglob(Path(module).name)), f"ARCHITECTURE.md names {module}, which is gone"
    for path in SRC.rglob("*.py"):
        if path.name != "__init__.py" and not path.name.startswith("_"):
            assert path.name in ARCHITECTURE, f"{path.relative_to(SRC)} is missing from ARCHITECTURE.md"


def test_readme_documents_every_flag_and_names_no_missing_one() -> None:
    flags = cli_flags()
    for flag in flags:
        assert f"`{flag}" in README, f"README does not document {flag}"
    named = set(re.findall(r"`(--[a-z][a-z-]+)", README))
    assert named <= flags, f"README names flags that do not exist: {named - flags}"


def test_readme_documents_every_setting() -> None:
    section = README.split("| setting | default | meaning |", 1)[1].split("\n\n", 1)[0]
    table = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert set(table) == set(Settings.model_fields), "README's settings table and Settings differ"


def test_readme_names_every_builtin_tool(tmp_path: Path) -> None:
    table, _ = builtin_tools(ToolContext(root=tmp_path))
    for name in table.names():
        assert f"`{name}" in README, f"README does not mention the {name} tool"


def test_readme_documents_every_slash_command_and_no_missing_one() -> None:
    from tether.ui.terminal.slash.handlers import COMMANDS

    names = {c.name for c in COMMANDS.all()}
    for name in names:
        assert f"`/{name}" in README, f"README does not document /{name}"
    table = README.split("### Slash commands", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"^\| `/([a-z]+)", table, re.M))
    assert named == names, f"README's command table and the command table differ: {named ^ names}"
