"""/diff and /commit on real repositories in temporary folders, through the command table
(tests/slash_context.py): the model drafts the message, the user's answer decides."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from slash_context import FakeContext, calc_repo, git, make_context

CHAT = "/v1/chat/completions"
SERVER_MODELS = ["fake"]
"""What the `server` fixture (conftest) lists as the server's models."""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return calc_repo(tmp_path)


@pytest.fixture
def ctx(server: FakeServer, repo: Path, home: Path) -> FakeContext:
    return make_context(server.url, repo, home)


def change(repo: Path) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    (repo / "notes.md").write_text("new file\n")


def head_message(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%B").strip()


async def test_diff_shows_changed_and_new_files_and_says_when_clean(
    ctx: FakeContext, repo: Path
) -> None:
    await ctx.run("/diff")
    assert ctx.said == [("No uncommitted changes.", "info")]
    change(repo)
    await ctx.run("/diff")
    printed = ctx.printed
    assert "-    return a + b" in printed and "+    return b + a" in printed
    assert "+new file" in printed
    assert ctx.messages()[-1] == "2 file(s) changed: calc.py, notes.md"
    assert git(repo, "diff", "--cached", "--name-only") == ""  # the real index is untouched


async def test_diff_outside_a_repository_says_so(server: FakeServer, tmp_path: Path,
                                                 home: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    ctx = make_context(server.url, plain, home)
    await ctx.run("/diff")
    assert ctx.said == [(f"No diff: {plain} is not inside a git repository", "warning")]


async def test_commit_uses_the_models_draft_after_a_yes(
    ctx: FakeContext, repo: Path, server: FakeServer
) -> None:
    change(repo)
    server.add(Reply(text="```\nSwap the operands of add\n\nAdd notes.\n```"))
    ctx.answers = ["y"]
    await ctx.run("/commit")
    assert ctx.asked[-1][0].startswith("Commit with this message? [y]es / [n]o")
    assert "Swap the operands of add" in ctx.printed
    assert head_message(repo) == "Swap the operands of add\n\nAdd notes."
    assert git(repo, "status", "--porcelain") == ""
    assert ctx.messages()[-1].startswith("Committed ") and ctx.messages()[-1].endswith(
        ": Swap the operands of add")
    sent = server.bodies(CHAT)[-1]
    assert "tools" not in sent and "+    return b + a" in sent["messages"][-1]["content"]


async def test_commit_refused_or_replaced_by_the_users_words(
    ctx: FakeContext, repo: Path, server: FakeServer
) -> None:
    change(repo)
    before = git(repo, "rev-parse", "HEAD")
    server.add(Reply(text="Draft one"), Reply(text="Draft two"))
    ctx.answers = ["n"]
    await ctx.run("/commit")
    assert ctx.messages()[-1] == "Not committed." and git(repo, "rev-parse", "HEAD") == before
    ctx.answers = ["e", "Use my own words"]  # e, then the message typed over the draft
    await ctx.run("/commit")
    assert ctx.asked[-1] == ("Commit message: ", False)
    assert head_message(repo) == "Use my own words"


async def test_commit_with_a_message_asks_no_model_and_nothing_to_commit_says_so(
    ctx: FakeContext, repo: Path, server: FakeServer
) -> None:
    change(repo)
    await ctx.run("/commit Tidy up")
    assert head_message(repo) == "Tidy up" and server.bodies(CHAT) == []
    await ctx.run("/commit Again")
    assert ctx.messages()[-1] == "Nothing to commit."


async def test_commit_runs_nothing_the_repository_configures(
    ctx: FakeContext, repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    (repo / ".gitattributes").write_text("*.py filter=evil\n")
    change(repo)
    await ctx.run("/diff")
    await ctx.run("/commit Hostile repository")
    assert head_message(repo) == "Hostile repository"
    assert not marker.exists()
