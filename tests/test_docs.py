"""The documentation (README.md, the pages in docs/, ARCHITECTURE.md) must not name things
that are gone, and must name what exists; the pages `tether help` prints are docs/ itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tether.cli import build_parser
from tether.core.toolspec import ToolContext
from tether.store.config import FIELDS
from tether.tools import builtin_tools
from tether.ui.docs_pages import topics, with_settings_table

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
ARCHITECTURE = (REPO / "ARCHITECTURE.md").read_text()
SRC = REPO / "src" / "tether"
DOCS = REPO / "docs"
PAGES = {p.name: p.read_text() for p in sorted(DOCS.glob("*.md"))}
USER_DOCS = "\n".join([README, *PAGES.values()])
"""Everything a user reads: a thing is documented when it is named somewhere in it."""


def cli_flags() -> set[str]:
    flags = set()
    for action in build_parser()._actions:
        flags.update(o for o in action.option_strings if o.startswith("--"))
    return flags - {"--help"}


@pytest.mark.parametrize("doc", ["README.md", "ARCHITECTURE.md", *(f"docs/{p}" for p in PAGES)])
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
    assert "src/tether/engine/loop.py" in named, "the module map is read as a tree"
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


def test_the_docs_document_every_flag_and_name_no_missing_one() -> None:
    flags = cli_flags()
    for flag in flags:
        assert f"`{flag}" in USER_DOCS, f"no page documents {flag}"
    for name, text in {"README.md": README, **PAGES}.items():
        named = set(re.findall(r"`(--[a-z][a-z-]+)", text))
        assert named <= flags, f"{name} names flags that do not exist: {named - flags}"
    headless = PAGES["headless.md"].split("## Flags", 1)[1].split("\n## ", 1)[0]
    first_cells = re.findall(r"^\| (.*?) \|", headless, re.M)
    listed = {flag for cell in first_cells for flag in re.findall(r"`(--[a-z][a-z-]+)", cell)}
    assert flags - {"--version"} <= listed | {"--version"}, (
        f"headless.md's flag table misses {flags - listed - {'--version'}}")


def test_the_settings_table_is_generated_from_the_code() -> None:
    """The configuration page's table is the one `.ci/docs.py` writes from the settings class,
    so it cannot drift: a setting added, removed or re-described fails here until it is run."""
    page = PAGES["configuration.md"]
    assert with_settings_table(page) == page, "docs/configuration.md is stale: run python .ci/docs.py"
    section = page.split("| setting | default | meaning |", 1)[1].split("\n\n", 1)[0]
    table = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert table == list(FIELDS), "the settings table and Settings differ"


def test_the_docs_name_every_builtin_tool(tmp_path: Path) -> None:
    table, _ = builtin_tools(ToolContext(root=tmp_path))
    tools_page = PAGES["tools.md"]
    for name in table.names():
        assert f"`{name}" in tools_page, f"docs/tools.md does not mention the {name} tool"


def test_the_chat_page_documents_every_slash_command_and_no_missing_one() -> None:
    from tether.ui.terminal.slash.handlers import COMMANDS

    names = {c.name for c in COMMANDS.all()}
    chat = PAGES["chat.md"]
    for name in names:
        assert f"`/{name}" in chat, f"docs/chat.md does not document /{name}"
    table = chat.split("## Slash commands", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"^\| `/([a-z]+)", table, re.M))
    assert named == names, f"the chat page's command table and the command table differ: {named ^ names}"


# ---------------------------------------------------------------- the pages themselves


def test_the_packaged_pages_are_the_repository_pages() -> None:
    """`tether help` reads the copy inside the package (an installed tether has no docs/);
    docs/ is the copy people read and edit. `.ci/docs.py` copies one onto the other."""
    packaged = {p.name: p.read_text() for p in sorted((SRC / "ui" / "docs").glob("*.md"))}
    assert packaged == PAGES, "src/tether/ui/docs differs from docs/: run python .ci/docs.py"
    assert sorted(topics()) == sorted(name.removesuffix(".md") for name in PAGES)


def test_the_packaging_ships_the_pages() -> None:
    project = (REPO / "pyproject.toml").read_text()
    assert re.search(r'"tether\.ui" = \[[^]]*"docs/\*\.md"', project), "pyproject.toml leaves the docs out"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_page_opens_with_what_a_user_wants_to_do(page: str) -> None:
    """A page reads on its own: its title, then a paragraph before any table or section."""
    lines = PAGES[page].splitlines()
    assert lines[0].startswith("# ") and lines[1] == ""
    assert lines[2] and not lines[2].startswith(("#", "|", "```", "-")), f"{page} opens with no paragraph"


def test_the_readme_is_a_front_door_that_links_every_page() -> None:
    assert len(README.splitlines()) <= 250
    for page in PAGES:
        assert f"](docs/{page})" in README, f"README does not link docs/{page}"


def test_every_link_between_pages_lands_on_a_page_and_heading() -> None:
    for name, text in {"README.md": README, **PAGES}.items():
        base = REPO if name == "README.md" else DOCS
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md|)(?:#([\w-]+))?\)", text):
            path = (base / target) if target else (base / name)
            assert path.exists(), f"{name} links {target}, which does not exist"
            if anchor and path.parent == DOCS:
                assert anchor in anchors_of(path.read_text()), f"{name} links {target}#{anchor}: no such heading"


def anchors_of(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to
    hyphens."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", markdown, flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


PATHS_NOT_COMMANDS = {"tmp", "proc", "sys", "dev", "run"}
"""Backticked `/word`s in the pages that are folders of the system, not slash commands."""


def test_every_slash_command_the_docs_name_exists() -> None:
    from tether.ui.terminal.slash.handlers import COMMANDS

    names = {c.name for c in COMMANDS.all()}
    named = set(re.findall(r"`/([a-z]+)[` ]", USER_DOCS)) - PATHS_NOT_COMMANDS
    assert named <= names, f"the docs name slash commands that do not exist: {named - names}"


def test_every_environment_variable_the_docs_name_is_read() -> None:
    """A TETHER_ variable the docs name is one the code (or the test tooling) reads."""
    code = "\n".join(p.read_text() for p in [*SRC.rglob("*.py"), *(REPO / "tests").glob("*.py")])
    for name in sorted(set(re.findall(r"\bTETHER_[A-Z_]+\b", USER_DOCS))):
        assert re.search(rf"\b{name}\b", code), f"the docs name {name}, which nothing reads"


def test_the_quick_start_commands_are_the_ones_ci_runs() -> None:
    """The README's Quick start keeps its three commands, and CI runs its test command
    verbatim, so the command a new contributor copies is the one that is known to work."""
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", quick_start)
    assert commands == ["pip install . && tether", "pip install -e '.[test]' && python -m pytest",
                        "pip install '.[local]' && tether --local"]
    assert "\npip install -q -e '.[test]' && python -m pytest\n" in (REPO / ".ci" / "run").read_text()
