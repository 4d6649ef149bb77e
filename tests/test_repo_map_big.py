"""repo_map on trees bigger than its budget: only the budget's share of the files is parsed,
the most promising first (by path, name, size, age and what the conversation mentions), the
map says it was cut short, and the on-disk tag cache spares a new process the parsing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.core.messages import Message
from tether.core.toolspec import CONVERSATION, ToolContext
from tether.tools import repo_order
from tether.tools.ast_tools import AstTools
from tether.tools.params import RepoMapParams
from tether.tools.repo_order import parse_order
from tether.tools.repo_tag_store import TagStore

CORE = '''class ProjectCatalog:
    """The catalog every module reads."""

    def entry_for(self, key: str) -> str:
        return key


def load_project_catalog(path: str) -> ProjectCatalog:
    return ProjectCatalog()
'''
USER = '''from core import ProjectCatalog, load_project_catalog


def use_{n}() -> ProjectCatalog:
    return load_project_catalog("x")
'''


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project with a few real modules and many test and vendored files."""
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "core.py").write_text(CORE)
    for n in range(4):
        (root / "src" / f"user_{n}.py").write_text(USER.format(n=n))
    for folder in ("tests", "vendor/lib"):
        (root / folder).mkdir(parents=True)
        for n in range(40):
            (root / folder / f"case_{n}.py").write_text(USER.format(n=n + 100))
    (root / "deep" / "er" / "still").mkdir(parents=True)
    (root / "deep" / "er" / "still" / "billing_rules.py").write_text(
        "def compute_invoice_total(lines: list) -> int:\n    return 0\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def small_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget of 100 tokens parses 8 files."""
    monkeypatch.setattr(repo_order, "MIN_FILES", 4)
    monkeypatch.setattr(repo_order, "FILES_PER_TOKEN", 0.08)


def repo_map(root: Path, tools: AstTools, budget: int = 100, history: list[Message] | None = None) -> tuple[str, str]:
    token = CONVERSATION.set(history or [])
    try:
        out = tools.repo_map(RepoMapParams(budget=budget), ToolContext(root=root))
    finally:
        CONVERSATION.reset(token)
    return out.text, out.summary


def test_only_the_budgets_share_is_parsed_and_the_map_says_so(tree: Path, small_share: None) -> None:
    tools = AstTools()
    text, summary = repo_map(tree, tools, budget=300)
    total = 4 + 1 + 80 + 1
    assert tools.mapper.tag_cache.extracted == 24
    assert f"[cut short: 24 of {total} source files parsed" in text
    assert summary.endswith(f"from {total} files (24 parsed)")
    assert "src/core.py:" in text and "ProjectCatalog" in text


def test_the_share_goes_to_source_before_tests_and_vendored_code(tree: Path, small_share: None) -> None:
    tools = AstTools()
    repo_map(tree, tools, budget=75)  # a share of 6 files: as many as are not tests or vendored
    parsed = {p.relative_to(tree).as_posix() for p in tools.mapper.tag_cache._entries}
    assert len(parsed) == 6 and {"src/core.py", "src/user_0.py"} <= parsed
    assert not any(p.startswith(("tests/", "vendor/")) for p in parsed)


def test_a_file_the_conversation_names_is_parsed_first(tree: Path, small_share: None) -> None:
    tools = AstTools()
    history = [Message.user("What does billing_rules.py compute?")]
    text, _ = repo_map(tree, tools, history=history)
    assert "compute_invoice_total" in text


def test_the_whole_tree_is_parsed_when_the_share_covers_it(tree: Path) -> None:
    tools = AstTools()
    text, summary = repo_map(tree, tools, budget=2_000)
    assert "cut short" not in text and "parsed)" not in summary
    assert tools.mapper.tag_cache.extracted == 86


def test_parsing_stops_at_its_cpu_limit_and_says_so(tree: Path) -> None:
    tools = AstTools()
    tools.mapper.parse_seconds = -1.0
    text, _ = repo_map(tree, tools, budget=2_000)
    assert "[cut short: parsing stopped after -1 s of CPU at 0 of 86 source files" in text
    assert tools.mapper.tag_cache.extracted == 0


def test_the_order_weighs_paths_names_sizes_and_mentions() -> None:
    stamps = {
        "tests/test_core.py": (0, 5_000), "src/core.py": (0, 5_000), "src/empty.py": (0, 10),
        "a/b/c/d/e/deep.py": (0, 5_000), "a/b/c/d/e/billing.py": (0, 5_000),
    }
    order = parse_order(stamps, frozenset(), frozenset({"billing"}))
    assert order[0] == "a/b/c/d/e/billing.py"  # mentioned by name
    assert order.index("src/core.py") < order.index("src/empty.py") < order.index("tests/test_core.py")
    assert parse_order(stamps, frozenset({"tests/test_core.py"}), frozenset())[0] == "tests/test_core.py"


# ---------------------------------------------------------------- the on-disk tag cache


def test_a_new_process_reads_the_tags_from_disk(tree: Path, tmp_path: Path) -> None:
    store = tmp_path / "home" / "cache" / "tags"
    first = AstTools(tag_store=store)
    text, _ = repo_map(tree, first, budget=2_000)
    assert first.mapper.tag_cache.extracted == 86
    second = AstTools(tag_store=store)  # a new tether: nothing in memory
    again, _ = repo_map(tree, second, budget=2_000)
    assert again == text
    assert second.mapper.tag_cache.extracted == 0 and second.mapper.tag_cache.loaded == 86
    (tree / "src" / "core.py").write_text(CORE + "\n\ndef brand_new_function() -> None:\n    pass\n")
    third = AstTools(tag_store=store)
    changed, _ = repo_map(tree, third, budget=2_000)
    assert "brand_new_function" in changed and third.mapper.tag_cache.extracted == 1


def test_the_cache_lives_outside_the_project(tree: Path, tmp_path: Path) -> None:
    store = tmp_path / "home" / "cache" / "tags"
    before = set(tree.rglob("*"))
    repo_map(tree, AstTools(tag_store=store), budget=2_000)
    assert set(tree.rglob("*")) == before
    assert [p.name for p in store.iterdir()] == [TagStore(store, tree).path.name]


def test_a_damaged_cache_file_only_costs_the_parsing(tree: Path, tmp_path: Path) -> None:
    store = tmp_path / "tags"
    store.mkdir()
    TagStore(store, tree).path.write_bytes(b"not a database at all" * 100)
    tools = AstTools(tag_store=store)
    text, _ = repo_map(tree, tools, budget=2_000)
    assert "ProjectCatalog" in text and tools.mapper.tag_cache.extracted == 86


def test_a_row_that_is_not_tags_is_parsed_again(tree: Path, tmp_path: Path) -> None:
    store = tmp_path / "tags"
    repo_map(tree, AstTools(tag_store=store), budget=2_000)
    cache = TagStore(store, tree)
    assert cache._open() is not None and cache._db is not None
    with cache._db:
        cache._db.execute("UPDATE tags SET data = '{\"d\": 7}'")
    cache.close()
    tools = AstTools(tag_store=store)
    text, _ = repo_map(tree, tools, budget=2_000)
    assert "ProjectCatalog" in text and tools.mapper.tag_cache.extracted == 86
