"""/init and /review through the command table (tests/slash_context.py) against the fake
server: each is one read-only turn; /init writes AGENTS.md only after the diff and a y,
/review never changes a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from slash_context import FakeContext, calc_repo, git, make_context

CHAT = "/v1/chat/completions"
SERVER_MODELS = ["fake"]
DRAFT = "# calc\n\nA tiny calculator.\n\n- Test: `python -m pytest`\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return calc_repo(tmp_path, {"pyproject.toml": '[project]\nname = "calc"\n',
                                "Makefile": "check:\n\tpython -m pytest\nlint:\n\truff check .\n"})


@pytest.fixture
def ctx(server: FakeServer, repo: Path, home: Path) -> FakeContext:
    return make_context(server.url, repo, home)


def last_user_text(body: dict) -> str:
    return [m["content"] for m in body["messages"] if m["role"] == "user"][-1]


def turn_bodies(server: FakeServer) -> list[dict]:
    """The chat requests of turns, leaving out the session-title request a first exchange makes."""
    return [b for b in server.bodies(CHAT) if not last_user_text(b).startswith("Write a short title")]


# ---------------------------------------------------------------- /init


def after_context(request: str) -> str:
    """The request after the project context that opens a conversation's first message."""
    return request.split("# Request\n", 1)[-1]


async def test_init_drafts_from_the_project_and_writes_after_a_yes(
        repo: Path, server: FakeServer, home: Path) -> None:
    ctx = make_context(server.url, repo, home, trusted=True)
    server.add(Reply(text="```markdown\n" + DRAFT + "```"))
    ctx.answers = ["y"]
    await ctx.run("/init")
    request = last_user_text(server.bodies(CHAT)[0])
    assert after_context(request).startswith("/init: write the AGENTS.md")
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


# ---------------------------------------------------------------- /review


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_review_sends_the_working_trees_diff_and_changes_nothing(
        ctx: FakeContext, repo: Path, server: FakeServer) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "new.py").write_text("X = 1\n")
    server.add(Reply(tool_calls=[("edit_file", {"filepath": "calc.py", "old_content": "a - b", "new_content": "a + b"})]))
    server.add(Reply(text="calc.py line 2: add subtracts."))
    await ctx.run("/review")
    first, second = turn_bodies(server)
    request = last_user_text(first)
    assert after_context(request).startswith(
        "/review: review the uncommitted changes of the working tree")
    assert "-    return a + b\n+    return a - b" in request and "+X = 1" in request
    assert "Blocked by /review" in tool_results(second)[0]
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert git(repo, "status", "--porcelain") == " M calc.py\n?? new.py\n"
    assert "Reviewing the uncommitted changes of the working tree: 2 file(s)." in ctx.messages()
    assert ctx.sessions.conv.messages[-1].text == "calc.py line 2: add subtracts."  # in the chat


async def test_review_of_a_range_and_of_one_commit(
        ctx: FakeContext, repo: Path, server: FakeServer) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b + 0\n")
    git(repo, "commit", "-q", "-am", "second")
    (repo / "util.py").write_text("Y = 2\n")
    git(repo, "add", "util.py")
    git(repo, "commit", "-q", "-m", "third")
    server.add(Reply(text="Fine."))
    server.add(Reply(text="Fine too."))
    await ctx.run("/review main..HEAD")
    await ctx.run("/review HEAD")
    whole, one = (last_user_text(b) for b in turn_bodies(server))
    assert after_context(whole).startswith("/review: review the commits main..HEAD")
    assert "+    return a + b + 0" in whole and "+Y = 2" in whole
    assert "+Y = 2" in one and "return a + b + 0" not in one


async def test_review_refuses_what_is_not_a_range_and_says_when_there_is_nothing(
        ctx: FakeContext, repo: Path, server: FakeServer) -> None:
    await ctx.run("/review --output=/tmp/x")
    await ctx.run("/review nosuchbranch..HEAD")
    await ctx.run("/review")
    assert not server.bodies(CHAT)
    warnings = ctx.messages("warning")
    assert "is not a revision" in warnings[0] and "no commit named 'nosuchbranch'" in warnings[1]
    assert ctx.messages()[-1] == ("Nothing to review: the uncommitted changes of the working "
                                  "tree change nothing.")


async def test_a_repositorys_diff_program_never_runs(
        ctx: FakeContext, repo: Path, server: FakeServer) -> None:
    (repo / ".gitattributes").write_text("*.py diff=evil\n")
    git(repo, "config", "diff.evil.textconv", "sh -c 'touch PWNED; cat \"$0\"'")
    git(repo, "config", "diff.external", "sh -c 'touch PWNED2'")
    (repo / "calc.py").write_text("def add(a, b):\n    return 0\n")
    git(repo, "commit", "-q", "-am", "zero")
    server.add(Reply(text="ok"))
    await ctx.run("/review HEAD~1..HEAD")
    assert "+    return 0" in last_user_text(server.bodies(CHAT)[0])
    assert not (repo / "PWNED").exists() and not (repo / "PWNED2").exists()


def test_a_long_diff_is_cut_at_a_line_and_the_cut_names_the_files() -> None:
    from tether.ui.terminal.slash.project_commands import bounded_diff

    parts = [f"diff --git a/f{i}.py b/f{i}.py\n--- a/f{i}.py\n+++ b/f{i}.py\n@@ -0,0 +1,50 @@\n"
             + "".join(f"+line {n}\n" for n in range(50)) for i in range(4)]
    diff = "".join(parts)
    shown, cut = bounded_diff(diff, len(parts[0]) + 100)
    assert diff.startswith(shown + "\n") and shown.splitlines()[-1].startswith("+line")  # whole lines
    assert "f1.py is shown in part" in cut and "not shown at all: f2.py, f3.py" in cut
    assert f"{len(diff) - len(shown) - 1:,} of {len(diff):,} characters" in cut
    assert bounded_diff(parts[0], 10_000) == (parts[0].rstrip("\n"), "")
