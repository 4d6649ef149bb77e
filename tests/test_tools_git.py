from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.core.toolspec import ToolContext, ToolError
from tether.tools import git as git_tools
from tether.tools.git import GIT_TOOLS, git_diff, git_status
from tether.tools.params import GitDiffParams, GitStatusParams

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
    reason="git is not installed",
)


def git(cwd: Path, *args: str) -> None:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\n")
    (root / "b.txt").write_text("two\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


def test_tool_entries_are_read_only() -> None:
    assert [t.name for t in GIT_TOOLS] == ["git_status", "git_diff"]
    assert all(t.read_only for t in GIT_TOOLS)
    schema = GIT_TOOLS[1].json_schema()
    assert list(schema["properties"]) == ["path"]
    assert schema.get("required", []) == []
    assert GIT_TOOLS[1].main_value({"path": "src/a.py"}) == "src/a.py"


def test_status_lists_branch_and_changes(repo: Path) -> None:
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    (repo / "b.txt").write_text("staged\n")
    git(repo, "add", "b.txt")

    out = git_status(GitStatusParams(), ToolContext(root=repo))

    lines = out.text.splitlines()
    assert lines[0] == "## main"
    assert sorted(lines[1:]) == [" M a.txt", "?? new.txt", "M  b.txt"]
    assert out.summary == "3 changed path(s) on main"


def test_status_of_a_clean_tree(repo: Path) -> None:
    out = git_status(GitStatusParams(), ToolContext(root=repo))
    assert "(working tree clean)" in out.text


def test_diff_shows_staged_unstaged_and_untracked(repo: Path) -> None:
    (repo / "a.txt").write_text("unstaged edit\n")
    (repo / "b.txt").write_text("staged edit\n")
    git(repo, "add", "b.txt")
    (repo / "fresh.txt").write_text("x\n")

    out = git_diff(GitDiffParams(), ToolContext(root=repo))

    staged_part, unstaged_part = out.text.split("Unstaged changes (git diff):")
    assert "Staged changes (git diff --cached):" in staged_part
    assert "+staged edit" in staged_part and "a.txt" not in staged_part
    assert "+unstaged edit" in unstaged_part and "-one" in unstaged_part
    assert "Untracked files (not in git yet):\nfresh.txt" in out.text
    assert out.summary == "1 staged, 1 unstaged, 1 untracked"


def test_diff_for_one_path(repo: Path) -> None:
    (repo / "a.txt").write_text("edit a\n")
    (repo / "b.txt").write_text("edit b\n")
    out = git_diff(GitDiffParams(path="b.txt"), ToolContext(root=repo))
    assert "+edit b" in out.text
    assert "edit a" not in out.text
    assert "Staged changes (git diff --cached): none" in out.text


def test_diff_without_changes(repo: Path) -> None:
    out = git_diff(GitDiffParams(path="a.txt"), ToolContext(root=repo))
    assert out.text == "No changes in a.txt: the files match HEAD."


def test_diff_in_a_repository_without_commits(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q")
    (root / "x.py").write_text("print(1)\n")
    git(root, "add", "x.py")
    out = git_diff(GitDiffParams(), ToolContext(root=root))
    assert "+print(1)" in out.text


def test_diff_is_capped(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(git_tools, "DIFF_SECTION_CAP", 500)
    (repo / "a.txt").write_text("".join(f"line {i}\n" for i in range(2000)))
    out = git_diff(GitDiffParams(), ToolContext(root=repo))
    assert "more characters cut" in out.text
    assert len(out.text) < 1500


def test_path_outside_the_repository_is_a_clear_error(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="outside repository"):
        git_diff(GitDiffParams(path=str(tmp_path / "elsewhere.txt")), ToolContext(root=repo))


def test_outside_a_repository(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    with pytest.raises(ToolError, match="not inside a git repository"):
        git_status(GitStatusParams(), ToolContext(root=folder))
    with pytest.raises(ToolError, match="not inside a git repository"):
        git_diff(GitDiffParams(), ToolContext(root=folder))


def test_missing_project_folder(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        git_status(GitStatusParams(), ToolContext(root=tmp_path / "gone"))


def test_no_git_binary(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ToolError, match="git is not installed"):
        git_status(GitStatusParams(), ToolContext(root=repo))
    with pytest.raises(ToolError, match="git is not installed"):
        git_diff(GitDiffParams(), ToolContext(root=repo))
