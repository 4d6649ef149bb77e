"""/init and /review through the command table (tests/slash_context.py) against the fake
server: each is one read-only turn; /init writes AGENTS.md only after the diff and a y,
/review never changes a file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from slash_context import FakeContext, make_context

CHAT = "/v1/chat/completions"
SERVER_MODELS = ["fake"]
DRAFT = "# calc\n\nA tiny calculator.\n\n- Test: `python -m pytest`\n"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "pyproject.toml").write_text('[project]\nname = "calc"\n')
    (root / "Makefile").write_text("check:\n\tpython -m pytest\nlint:\n\truff check .\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


@pytest.fixture
def ctx(server: FakeServer, repo: Path, home: Path) -> FakeContext:
    return make_context(server.url, repo, home)


def last_user_text(body: dict) -> str:
    return [m["content"] for m in body["messages"] if m["role"] == "user"][-1]


# ---------------------------------------------------------------- /init


async def test_init_drafts_from_the_project_and_writes_after_a_yes(
        repo: Path, server: FakeServer, home: Path) -> None:
    ctx = make_context(server.url, repo, home, trusted=True)
    server.add(Reply(text="```markdown\n" + DRAFT + "```"))
    ctx.answers = ["y"]
    await ctx.run("/init")
    request = last_user_text(server.bodies(CHAT)[0])
    assert request.startswith("/init: write the AGENTS.md")
    assert "calc.py" in request and "pyproject.toml" in request
    assert "make check, make lint" in request and "python -m pytest" in request
    assert "+# calc" in ctx.printed  # the diff came before the question
    assert ctx.asked[-1][0].startswith("Write AGENTS.md with this?")
    assert (repo / "AGENTS.md").read_text() == DRAFT
    assert "A tiny calculator." in ctx.runtime.instructions.prompt_section()  # from the next request
    assert ctx.messages()[-1] == "Wrote AGENTS.md."
    assert not ctx.sessions.conv.messages  # the draft's turn is not the chat's history


async def test_init_never_replaces_an_existing_file_without_its_diff_and_a_yes(
        ctx: FakeContext, repo: Path, server: FakeServer) -> None:
    (repo / "AGENTS.md").write_text("# calc\n\nOld rules.\n")
    server.add(Reply(text=DRAFT))
    ctx.answers = ["n"]
    await ctx.run("/init")
    assert "Old rules." in last_user_text(server.bodies(CHAT)[0])  # kept what is true
    assert "-Old rules." in ctx.printed and "+A tiny calculator." in ctx.printed
    assert ctx.asked[-1][0].startswith("Replace AGENTS.md with this?")
    assert (repo / "AGENTS.md").read_text() == "# calc\n\nOld rules.\n"
    assert ctx.messages()[-1] == "AGENTS.md was not written."


async def test_init_in_an_untrusted_folder_says_when_the_file_counts(
        ctx: FakeContext, repo: Path, server: FakeServer) -> None:
    server.add(Reply(text=DRAFT))
    ctx.answers = ["y"]
    await ctx.run("/init")
    assert (repo / "AGENTS.md").read_text() == DRAFT
    assert ctx.messages()[-1] == "Wrote AGENTS.md. It is read once this folder is trusted."


async def test_init_refuses_the_models_writes_and_a_symlinked_file(
        ctx: FakeContext, repo: Path, server: FakeServer, tmp_path: Path) -> None:
    server.add(Reply(tool_calls=[("write_file", {"filepath": "AGENTS.md", "content": "sneaky"})]))
    server.add(Reply(text=DRAFT))
    ctx.answers = ["n"]
    await ctx.run("/init")
    tool_result = [m for m in server.bodies(CHAT)[1]["messages"] if m["role"] == "tool"][0]
    assert "Blocked by /init" in tool_result["content"]
    assert not (repo / "AGENTS.md").exists()
    outside = tmp_path / "elsewhere.md"
    outside.write_text("not the project's\n")
    (repo / "AGENTS.md").symlink_to(outside)
    asked = len(server.bodies(CHAT))
    await ctx.run("/init")
    assert "symbolic link" in ctx.messages("warning")[-1]
    assert len(server.bodies(CHAT)) == asked and outside.read_text() == "not the project's\n"


async def test_init_without_an_answer_writes_nothing(
        ctx: FakeContext, repo: Path, server: FakeServer) -> None:
    server.add(Reply(text=""))
    await ctx.run("/init")
    assert not (repo / "AGENTS.md").exists()
    assert "was not written" in ctx.messages()[-1]
    assert json.dumps(ctx.said)  # every message was plain text
