"""repo_map: PageRank, the ranking toward the conversation, the budget, .gitignore, the walk's
guards, the caches (tags by file and stamp, maps never by the prompt) and the fallback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say

from tether.core.messages import Message, Text, ToolCall
from tether.core.toolspec import CONVERSATION, Tool, ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import Dispatcher
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.tools.ast_tools import AstTools
from tether.tools.params import RepoMapParams
from tether.tools.repo_map import tokens_of
from tether.tools.repo_rank import pagerank

CORE = '''class ToolContext:
    """What a handler may know."""


def resolve_user_path(text: str, root: str) -> str:
    return text
'''
LONELY = '''def lonely_function_name() -> None:
    pass
'''
USER = '''from core import ToolContext, resolve_user_path


def handler_{n}(ctx: ToolContext) -> str:
    return resolve_user_path("a", "b")
'''
BILLING = '''def compute_invoice_total(lines: list) -> int:
    return 0
'''


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "ignored").mkdir(parents=True)
    (root / "core.py").write_text(CORE)
    for n in range(3):
        (root / f"user_{n}.py").write_text(USER.format(n=n))
    (root / "billing.py").write_text(BILLING)
    (root / "lonely.py").write_text(LONELY)
    (root / "ignored" / "generated.py").write_text("def ignored_definition():\n    pass\n")
    (root / ".gitignore").write_text("ignored/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def repo_map(
    root: Path, tools: AstTools, budget: int = 2_000, history: list[Message] | None = None,
    ctx: ToolContext | None = None, **args: object,
) -> tuple[str, str]:
    token = CONVERSATION.set(history or [])
    try:
        out = tools.repo_map(RepoMapParams(budget=budget, **args), ctx or ToolContext(root=root))
    finally:
        CONVERSATION.reset(token)
    return out.text, out.summary


def shown_names(text: str) -> list[str]:
    """Definition names in map order."""
    names = []
    for line in text.splitlines():
        if line.startswith("  "):
            signature = line.split(": ", 1)[1]
            names.append(signature.split("(")[0].split()[-1])
    return names


# ---------------------------------------------------------------- PageRank


def test_pagerank_matches_the_closed_form() -> None:
    # a -> b, and b has no out-edges (its rank jumps uniformly): r_a = 0.15/2 + 0.85 r_b / 2.
    rank = pagerank(["a", "b"], {"a": {"b": 1.0}})
    assert rank["a"] == pytest.approx(0.5 / 1.425, abs=1e-5)
    assert rank["a"] + rank["b"] == pytest.approx(1.0)
    leaning = pagerank(["a", "b"], {"a": {"b": 1.0}}, {"a": 1.0})
    assert leaning["a"] > rank["a"]


def test_pagerank_ranks_the_hub_of_a_star_first() -> None:
    nodes = ["hub", *(f"leaf{i}" for i in range(5))]
    rank = pagerank(nodes, {f"leaf{i}": {"hub": 1.0} for i in range(5)})
    assert max(rank, key=rank.__getitem__) == "hub"
    assert pagerank([], {}) == {}


# ---------------------------------------------------------------- ranking


def test_the_most_referenced_definitions_come_first(repo: Path) -> None:
    text, summary = repo_map(repo, AstTools())
    lines = text.splitlines()
    files = [line for line in lines if line.endswith(":") and not line.startswith(" ")]
    assert lines[0].startswith("Repository map:") and files[0] == "core.py:"
    names = shown_names(text)
    assert names.index("resolve_user_path") < names.index("lonely_function_name")
    assert "6 files" in summary


def test_names_in_the_conversation_lift_their_definitions(repo: Path) -> None:
    tools = AstTools()
    budget = tokens_of(repo_map(repo, tools, budget=4_000)[0]) // 2
    plain, _ = repo_map(repo, tools, budget=budget)
    assert "lonely_function_name" not in plain
    talk = [Message.user("Why is lonely_function_name never called?")]
    leaning, _ = repo_map(repo, tools, budget=budget, history=talk)
    assert shown_names(leaning)[0] == "lonely_function_name"


def test_files_in_play_lift_their_definitions(repo: Path) -> None:
    tools = AstTools()
    budget = tokens_of(repo_map(repo, tools, budget=4_000)[0]) // 2
    assert "compute_invoice_total" not in repo_map(repo, tools, budget=budget)[0]
    read = Message("assistant", [ToolCall("c1", "read_file", {"filepath": "billing.py"})])
    assert "compute_invoice_total" in repo_map(repo, tools, budget=budget, history=[read])[0]
    assert "compute_invoice_total" in repo_map(repo, tools, budget=budget, focus=["billing.py"])[0]


# ---------------------------------------------------------------- budget, files


def test_the_map_fits_every_budget_and_grows_with_it(repo: Path) -> None:
    tools = AstTools()
    counts = []
    for budget in (32, 60, 80, 100, 150, 4_000):
        text, _ = repo_map(repo, tools, budget=budget)
        assert tokens_of(text) <= budget
        counts.append(len(shown_names(text)))
    assert counts == sorted(counts) and counts[0] < counts[-1]
    assert counts[-1] == 2 + 3 + 1 + 1  # core's two, a handler per user file, billing, lonely


def test_gitignored_files_are_left_out(repo: Path) -> None:
    text, _ = repo_map(repo, AstTools(), budget=4_000)
    assert "ignored_definition" not in text and "generated.py" not in text


def test_the_walk_skips_denied_files_and_symlinks_leading_out(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def outside_definition():\n    pass\n")
    (repo / "link.py").symlink_to(outside)
    ctx = ToolContext(root=repo, may_read=lambda path: path.name != "billing.py")
    text, _ = repo_map(repo, AstTools(), budget=4_000, ctx=ctx)
    assert "compute_invoice_total" not in text and "outside_definition" not in text
    assert "resolve_user_path" in text


def test_a_subfolder_is_mapped_alone(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "inner.py").write_text("def inner_only():\n    pass\n")
    text, _ = repo_map(repo, AstTools(), budget=4_000, path="pkg")
    assert "pkg/inner.py:" in text and "core.py" not in text


# ---------------------------------------------------------------- caches


def test_tags_are_cached_until_a_file_changes(repo: Path) -> None:
    tools = AstTools()
    repo_map(repo, tools, budget=4_000)
    parsed = tools.mapper.tag_cache.extracted
    assert parsed == 6
    _, summary = repo_map(repo, tools, budget=4_000)
    assert summary.endswith("(cached)") and tools.mapper.tag_cache.extracted == parsed
    (repo / "core.py").write_text(CORE + "\n\ndef brand_new_function() -> None:\n    pass\n")
    text, summary = repo_map(repo, tools, budget=4_000)
    assert "brand_new_function" in text and not summary.endswith("(cached)")
    assert tools.mapper.tag_cache.extracted == parsed + 1  # only the edited file was read again


def test_a_new_prompt_is_no_new_map(repo: Path) -> None:
    tools = AstTools()
    repo_map(repo, tools, history=[Message.user("hello")])
    _, summary = repo_map(repo, tools, history=[Message.user("something else entirely")])
    assert summary.endswith("(cached)")
    _, summary = repo_map(repo, tools, budget=1_000, history=[Message.user("hello")])
    assert not summary.endswith("(cached)")  # another budget is another map
    assert tools.mapper.tag_cache.extracted == 6


async def test_the_loop_hands_its_history_to_the_calls(tmp_path: Path) -> None:
    from pydantic import BaseModel

    class NoArgs(BaseModel):
        pass

    seen: list[str] = []

    def record(args: NoArgs, ctx: ToolContext) -> str:
        seen.extend(p.text for m in CONVERSATION.get() for p in m.parts if isinstance(p, Text))
        return "ok"

    table = ToolTable([Tool("peek", "Peek.", NoArgs, record, reads=True)])
    provider = ScriptedProvider([call(("peek", {})), say("done")])
    loop = TurnLoop(provider, table, Dispatcher(table, ToolContext(root=tmp_path), SilentUI()),
                    SilentUI(), TurnSettings(model="m"), system_prompt=lambda mode: "S")
    await loop.run_turn(Conversation(), "map the billing code")
    assert seen == ["map the billing code"]
    assert CONVERSATION.get() == ()  # reset once the calls are done


# ---------------------------------------------------------------- grammars and fallback


def test_without_the_extra_python_files_still_make_a_map(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tree_sitter", None)
    (repo / "main.go").write_text("package main\n\nfunc GoOnly() {}\n")
    text, summary = repo_map(repo, AstTools(), budget=4_000)
    assert "tree-sitter is missing" in text and "pip install 'tether[ast]'" in text
    assert "resolve_user_path" in text and "GoOnly" not in text and "7 files" in summary


def test_other_languages_are_mapped_with_the_extra(repo: Path) -> None:
    pytest.importorskip("tree_sitter", reason="the ast extra (installed by the test extra)")
    (repo / "config.go").write_text("package main\n\nfunc ParseConfigFile(p string) int { return 0 }\n")
    for n in range(3):
        (repo / f"use_{n}.go").write_text(f"package main\n\nfunc Use{n}() int {{ return ParseConfigFile(\"x\") }}\n")
    (repo / "view.ts").write_text("export class ViewModel {}\nexport function makeView(): ViewModel { return new ViewModel(); }\n")
    text, _ = repo_map(repo, AstTools(), budget=4_000)
    assert "  3: func ParseConfigFile(p string) int" in text
    assert "class ViewModel" in text and "function makeView(): ViewModel" in text
    names = shown_names(text)
    assert names.index("ParseConfigFile") < names.index("Use0")
