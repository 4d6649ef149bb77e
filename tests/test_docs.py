"""The documentation must not name things that are gone, and must name what exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tether.cli import build_parser
from tether.core.toolspec import ToolContext
from tether.store.config import FIELDS
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


def module_map() -> set[str]:
    """The paths ARCHITECTURE.md's module map names, read as the tree it is drawn as."""
    block = ARCHITECTURE.split("## Module map", 1)[1].split("```", 2)[1]
    named: set[str] = set()
    folders: list[tuple[int, str]] = []  # (indent, folder path) from the root down
    for line in block.splitlines():
        entry = re.match(r"^( *)([\w.]+\.py|[\w/]+/)(?:\s|$)", line)
        if not entry:
            continue  # a description carried over to the next line
        indent, name = len(entry.group(1)), entry.group(2)
        while folders and folders[-1][0] >= indent:
            folders.pop()
        path = "".join(folder for _, folder in folders) + name
        if name.endswith("/"):
            folders.append((indent, name))
        named.add(path)
    return named


def holds_code(path: Path) -> bool:
    """More than a docstring: a package `__init__.py` that does something is a module to name."""
    body = ast.parse(path.read_text()).body
    return len(body) > 1 or (bool(body) and not isinstance(body[0], ast.Expr))


def test_architecture_module_map_is_the_package_tree() -> None:
    named = module_map()
    assert "src/tether/core/loop.py" in named, "the module map is read as a tree"
    for path in sorted(named):
        assert (REPO / path).exists(), f"ARCHITECTURE.md's module map names {path}, which is gone"
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        if path.name != "__init__.py" or holds_code(path):
            assert relative in named, f"{relative} is missing from ARCHITECTURE.md's module map"
        else:
            assert relative.removesuffix("__init__.py") in named, (
                f"the package {path.parent.relative_to(REPO)} is missing from the module map"
            )


def test_readme_documents_every_flag_and_names_no_missing_one() -> None:
    flags = cli_flags()
    for flag in flags:
        assert f"`{flag}" in README, f"README does not document {flag}"
    named = set(re.findall(r"`(--[a-z][a-z-]+)", README))
    assert named <= flags, f"README names flags that do not exist: {named - flags}"


def test_readme_documents_every_setting() -> None:
    section = README.split("| setting | default | meaning |", 1)[1].split("\n\n", 1)[0]
    table = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert set(table) == set(FIELDS), "README's settings table and Settings differ"


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
