from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tether.store.git_ops import AI_TRAILER, GitOps

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
    reason="git is not installed",
)


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def head_subject(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%s").strip()


def head_files(repo: Path) -> list[str]:
    return git(repo, "show", "--name-only", "--format=", "HEAD").split()


def staged(repo: Path) -> list[str]:
    return git(repo, "diff", "--cached", "--name-only").split()


def unstaged(repo: Path) -> list[str]:
    return git(repo, "diff", "--name-only").split()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "base.txt").write_text("base v1\n")
    (root / "other.txt").write_text("other v1\n")
    git(root, "add", "base.txt", "other.txt")
    git(root, "commit", "-q", "-m", "user: initial")
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "tether-home"


def ai_edit(ops: GitOps, tool: str, files: dict[Path, str | None]) -> str | None:
    """What the dispatcher does around a file tool: snapshot, change, commit."""
    ops.snapshot_before(list(files))
    for path, content in files.items():
        if content is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
    return ops.commit_paths(tool, list(files))


def test_commit_takes_only_the_named_path_and_leaves_user_work_alone(
    repo: Path, home: Path
) -> None:
    (repo / "staged.txt").write_text("user staged\n")
    git(repo, "add", "staged.txt")
    (repo / "other.txt").write_text("user unstaged edit\n")
    ops = GitOps(repo, home)

    assert ai_edit(ops, "write_file", {repo / "a.py": "print('hi')\n"}) is None

    assert head_subject(repo) == "ai(write_file): a.py"
    assert f"{AI_TRAILER}: 1" in git(repo, "log", "-1", "--format=%B")
    assert head_files(repo) == ["a.py"]
    assert staged(repo) == ["staged.txt"]
    assert unstaged(repo) == ["other.txt"]
    assert (repo / "other.txt").read_text() == "user unstaged edit\n"
    status = git(repo, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M other.txt", "A  staged.txt"]
    assert "staged.txt" not in git(repo, "ls-tree", "--name-only", "HEAD").split()


def test_several_paths_in_one_commit_and_relative_paths(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    (repo / "a.py").write_text("a\n")
    (repo / "b.py").write_text("b\n")
    assert ops.commit_paths("edit_files", [Path("a.py"), Path("b.py")]) is None
    assert head_subject(repo) == "ai(edit_files): a.py, b.py"
    assert sorted(head_files(repo)) == ["a.py", "b.py"]


def test_nothing_changed_makes_no_commit(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    before = ops.head()
    assert ai_edit(ops, "write_file", {repo / "base.txt": "base v1\n"}) is None
    assert ops.head() == before


def test_undo_restores_content_and_deletes_created_files(repo: Path, home: Path) -> None:
    user_head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "staged.txt").write_text("user staged\n")
    git(repo, "add", "staged.txt")
    (repo / "other.txt").write_text("user unstaged\n")
    ops = GitOps(repo, home)
    ai_edit(ops, "write_file", {repo / "base.txt": "ai rewrite\n", repo / "pkg" / "new.py": "x\n"})
    assert ops.head() != user_head

    result = ops.undo()

    assert result.ok, result.message
    assert result.message == "Undid ai(write_file): base.txt, pkg/new.py"
    assert sorted(result.paths) == ["base.txt", "pkg/new.py"]
    assert (repo / "base.txt").read_text() == "base v1\n"
    assert not (repo / "pkg").exists()
    assert git(repo, "rev-parse", "HEAD").strip() == user_head
    assert sorted(git(repo, "status", "--porcelain").splitlines()) == [
        " M other.txt",
        "A  staged.txt",
    ]


def test_undo_takes_back_changes_one_at_a_time(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    ai_edit(ops, "write_file", {repo / "base.txt": "first\n"})
    ai_edit(ops, "edit_file", {repo / "base.txt": "second\n"})
    assert ops.undo().message == "Undid ai(edit_file): base.txt"
    assert (repo / "base.txt").read_text() == "first\n"
    assert ops.undo().ok
    assert (repo / "base.txt").read_text() == "base v1\n"
    refused = ops.undo()
    assert not refused.ok
    assert "yours" in refused.message


def test_undo_of_a_deletion_brings_the_file_back(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    ai_edit(ops, "delete_file", {repo / "other.txt": None})
    assert "other.txt" not in git(repo, "ls-tree", "--name-only", "HEAD").split()
    assert git(repo, "status", "--porcelain") == ""
    assert ops.undo().ok
    assert (repo / "other.txt").read_text() == "other v1\n"
    assert git(repo, "status", "--porcelain") == ""


def test_undo_refuses_when_a_file_changed_since(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    ai_edit(ops, "write_file", {repo / "base.txt": "ai\n", repo / "other.txt": "ai too\n"})
    ai_head = ops.head()
    (repo / "other.txt").write_text("the user kept working\n")

    result = ops.undo()

    assert not result.ok
    assert result.message.startswith("Not undone: other.txt changed after the assistant's edit")
    assert result.paths == ["other.txt"]
    assert ops.head() == ai_head
    assert (repo / "other.txt").read_text() == "the user kept working\n"
    assert (repo / "base.txt").read_text() == "ai\n"


def test_undo_refuses_when_a_created_file_was_removed_since(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    ai_edit(ops, "write_file", {repo / "new.txt": "x\n"})
    (repo / "new.txt").unlink()
    result = ops.undo()
    assert not result.ok
    assert "new.txt" in result.message


def test_undo_refuses_when_head_is_a_user_commit(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    ai_edit(ops, "write_file", {repo / "a.py": "ai\n"})
    (repo / "mine.txt").write_text("mine\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-q", "-m", "user: my own work")
    user_head = ops.head()

    result = ops.undo()

    assert not result.ok
    assert "newest commit" in result.message and "yours" in result.message
    assert "user: my own work" in result.message
    assert ops.head() == user_head
    assert (repo / "a.py").read_text() == "ai\n"


def test_user_dirty_file_edited_by_ai_then_undone_returns_to_dirty_content(
    repo: Path, home: Path
) -> None:
    user_head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "base.txt").write_text("user work in progress\n")
    ops = GitOps(repo, home)

    ai_edit(ops, "edit_file", {repo / "base.txt": "assistant version\n"})

    # The AI commit shows only the assistant's change; the user's work sits in its pre commit.
    assert head_subject(repo) == "ai(edit_file): base.txt"
    assert "-user work in progress" in git(repo, "show", "--format=", "HEAD")
    assert git(repo, "log", "-1", "--format=%s", "HEAD~1").strip() == "ai-pre(edit_file): base.txt"
    assert git(repo, "status", "--porcelain") == ""
    assert [c.message for c in ops.recent()] == ["ai(edit_file): base.txt"]

    result = ops.undo()

    assert result.ok, result.message
    assert (repo / "base.txt").read_text() == "user work in progress\n"
    assert git(repo, "rev-parse", "HEAD").strip() == user_head
    assert staged(repo) == []
    assert unstaged(repo) == ["base.txt"]


def test_untracked_user_file_edited_by_ai_is_restored_not_deleted(repo: Path, home: Path) -> None:
    (repo / "notes.md").write_text("my notes\n")
    ops = GitOps(repo, home)
    ai_edit(ops, "edit_file", {repo / "notes.md": "rewritten\n"})
    assert ops.undo().ok
    assert (repo / "notes.md").read_text() == "my notes\n"
    assert git(repo, "status", "--porcelain") == "?? notes.md\n"


def test_user_staged_version_of_the_same_path_is_left_alone(repo: Path, home: Path) -> None:
    (repo / "base.txt").write_text("user staged\n")
    git(repo, "add", "base.txt")
    ops = GitOps(repo, home)

    ai_edit(ops, "edit_file", {repo / "base.txt": "assistant\n"})
    assert git(repo, "show", ":base.txt") == "user staged\n"

    assert ops.undo().ok
    assert (repo / "base.txt").read_text() == "user staged\n"
    assert git(repo, "show", ":base.txt") == "user staged\n"
    assert git(repo, "status", "--porcelain") == "M  base.txt\n"


def test_empty_repository_gets_a_root_commit_and_undo_empties_it_again(
    tmp_path: Path, home: Path
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q")
    ops = GitOps(root, home)
    assert ops.head() is None

    assert ai_edit(ops, "write_file", {root / "main.py": "print(1)\n"}) is None

    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(root, "log", "-1", "--format=%P").strip() == ""
    assert head_subject(root) == "ai(write_file): main.py"
    assert git(root, "status", "--porcelain") == ""

    assert ops.undo().ok
    assert ops.head() is None
    assert not (root / "main.py").exists()
    assert git(root, "status", "--porcelain") == ""


def test_ignored_and_outside_paths_are_skipped_with_a_notice(
    repo: Path, home: Path, tmp_path: Path
) -> None:
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "user: ignore logs")
    (repo / "debug.log").write_text("noise\n")
    (repo / "kept.txt").write_text("kept\n")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x\n")
    ops = GitOps(repo, home)

    notice = ops.commit_paths("write_file", [repo / "debug.log", repo / "kept.txt", outside])

    assert notice is not None
    assert "debug.log" in notice and "ignored" in notice
    assert "elsewhere.txt" in notice and "outside" in notice
    assert head_files(repo) == ["kept.txt"]
    assert "debug.log" not in git(repo, "ls-tree", "--name-only", "HEAD").split()


def test_only_ignored_paths_makes_no_commit(repo: Path, home: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("x")
    ops = GitOps(repo, home)
    before = ops.head()
    notice = ops.commit_paths("write_file", [repo / "build" / "out.bin"])
    assert notice is not None and "ignored" in notice
    assert ops.head() == before


def test_recent_lists_ai_commits_newest_first_and_stops_at_the_user(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    ai_edit(ops, "write_file", {repo / "old.txt": "x\n"})
    (repo / "mine.txt").write_text("mine\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-q", "-m", "user: mine")
    ai_edit(ops, "write_file", {repo / "a.txt": "a\n"})
    (repo / "base.txt").write_text("user dirty\n")  # forces a hidden pre commit next
    ai_edit(ops, "edit_file", {repo / "base.txt": "ai\n", repo / "b.txt": "b\n"})

    commits = ops.recent()

    assert [c.tool for c in commits] == ["edit_file", "write_file"]
    assert [sorted(c.paths) for c in commits] == [["b.txt", "base.txt"], ["a.txt"]]
    assert commits[0].sha == ops.head()
    assert commits[0].message == "ai(edit_file): base.txt, b.txt"
    assert commits[0].when > 0
    assert len(ops.recent(1)) == 1


def test_diff_since_shows_committed_and_uncommitted_changes(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    start = ops.head()
    ai_edit(ops, "write_file", {repo / "base.txt": "ai changed\n"})
    (repo / "untracked.txt").write_text("brand new\n")

    diff = ops.diff_since(start)

    assert "+ai changed" in diff and "-base v1" in diff
    assert "+brand new" in diff
    assert "other.txt" not in diff
    assert git(repo, "status", "--porcelain") == "?? untracked.txt\n"  # real index untouched
    everything = ops.diff_since(None)
    assert "+ai changed" in everything and "+other v1" in everything


def test_interleaved_snapshots_each_keep_their_pre_state(repo: Path, home: Path) -> None:
    """Calls from one reply may run concurrently: snapshot, snapshot, commit, commit."""
    (repo / "base.txt").write_text("dirty base\n")
    (repo / "other.txt").write_text("dirty other\n")
    ops = GitOps(repo, home)
    ops.snapshot_before([repo / "base.txt"])
    ops.snapshot_before([repo / "other.txt"])
    (repo / "base.txt").write_text("ai base\n")
    (repo / "other.txt").write_text("ai other\n")
    assert ops.commit_paths("edit_file", [repo / "base.txt"]) is None
    assert ops.commit_paths("edit_file", [repo / "other.txt"]) is None

    assert ops.undo().ok
    assert (repo / "other.txt").read_text() == "dirty other\n"
    assert ops.undo().ok
    assert (repo / "base.txt").read_text() == "dirty base\n"
    assert sorted(unstaged(repo)) == ["base.txt", "other.txt"]


def test_autocommit_off_commits_nothing(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home, enabled=False)
    before = ops.head()
    assert ai_edit(ops, "write_file", {repo / "a.txt": "a\n"}) is None
    assert ops.head() == before
    ops.enabled = True
    assert ops.commit_paths("write_file", [repo / "a.txt"]) is None
    assert head_subject(repo) == "ai(write_file): a.txt"


def test_merge_in_progress_is_left_alone(repo: Path, home: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / ".git" / "MERGE_HEAD").write_text(head + "\n")
    ops = GitOps(repo, home)
    notice = ai_edit(ops, "write_file", {repo / "a.txt": "a\n"})
    assert notice is not None and "merge" in notice
    assert ops.head() == head


def test_missing_identity_uses_a_fallback_without_touching_config(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var)
    ops = GitOps(repo, home)
    assert ai_edit(ops, "write_file", {repo / "a.txt": "a\n"}) is None
    assert git(repo, "log", "-1", "--format=%an <%ae>").strip() == "tether <tether@localhost>"
    proc = subprocess.run(["git", "config", "user.email"], cwd=repo, capture_output=True)
    assert proc.returncode == 1  # still unset


def test_configured_identity_is_used(repo: Path, home: Path) -> None:
    ops = GitOps(repo, home)
    ai_edit(ops, "write_file", {repo / "a.txt": "a\n"})
    assert git(repo, "log", "-1", "--format=%an").strip() == "Test User"


def test_shadow_repository_outside_git(tmp_path: Path, home: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("original\n")
    ops = GitOps(folder, home)
    assert ops.head() is None
    assert ops.undo().ok is False

    notice = ai_edit(
        ops, "write_file", {folder / "notes.txt": "ai edit\n", folder / "sub" / "new.py": "n\n"}
    )

    assert notice is None
    assert not (folder / ".git").exists()
    assert ops.shadow_dir.parent == home / "shadow"
    assert (ops.shadow_dir / "HEAD").exists()
    commits = ops.recent()
    assert len(commits) == 1
    assert sorted(commits[0].paths) == ["notes.txt", "sub/new.py"]
    assert "+ai edit" in ops.diff_since(None)

    result = ops.undo()

    assert result.ok, result.message
    assert (folder / "notes.txt").read_text() == "original\n"
    assert not (folder / "sub").exists()
    assert not (folder / ".git").exists()
    assert not ops.undo().ok


def test_shadow_undo_refuses_when_file_changed_since(tmp_path: Path, home: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    ops = GitOps(folder, home)
    ai_edit(ops, "write_file", {folder / "a.txt": "ai\n"})
    ai_edit(ops, "write_file", {folder / "a.txt": "ai again\n"})
    (folder / "a.txt").write_text("user\n")
    result = ops.undo()
    assert not result.ok and "a.txt" in result.message
    (folder / "a.txt").write_text("ai again\n")
    assert ops.undo().ok
    assert (folder / "a.txt").read_text() == "ai\n"
    assert ops.undo().ok
    assert not (folder / "a.txt").exists()


def test_user_edit_between_ai_edits_in_shadow_is_kept(tmp_path: Path, home: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    ops = GitOps(folder, home)
    ai_edit(ops, "write_file", {folder / "a.txt": "ai\n"})
    (folder / "a.txt").write_text("user touch\n")
    ai_edit(ops, "edit_file", {folder / "a.txt": "ai second\n"})
    assert ops.undo().ok
    assert (folder / "a.txt").read_text() == "user touch\n"


def test_no_git_binary_breaks_nothing(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "")
    ops = GitOps(repo, home)
    assert not ops.available()
    ops.snapshot_before([repo / "a.txt"])
    (repo / "a.txt").write_text("a\n")
    first = ops.commit_paths("write_file", [repo / "a.txt"])
    assert first is not None and "git is not installed" in first
    assert ops.commit_paths("write_file", [repo / "a.txt"]) is None  # said once
    result = ops.undo()
    assert not result.ok and "git" in result.message
    assert ops.recent() == []
    assert ops.head() is None
    assert "unavailable" in ops.diff_since(None)


def test_project_root_below_the_repository_top(repo: Path, home: Path) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    ops = GitOps(sub, home)
    (sub / "mod.py").write_text("m\n")
    assert ops.commit_paths("write_file", [Path("mod.py")]) is None
    assert head_subject(repo) == "ai(write_file): pkg/mod.py"
    assert ops.undo().ok
    assert not (sub / "mod.py").exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_undo_restores_the_executable_bit(repo: Path, home: Path) -> None:
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-q", "-m", "user: script")
    ops = GitOps(repo, home)
    ai_edit(ops, "write_file", {script: "#!/bin/sh\necho changed\n"})
    script.chmod(0o644)
    ops.commit_paths("chmod", [script])
    assert ops.undo().ok
    assert script.stat().st_mode & 0o111
    assert ops.undo().ok
    assert script.read_text() == "#!/bin/sh\n"
    assert git(repo, "status", "--porcelain") == ""


def write_hook(repo: Path, name: str, body: str, hooks_dir: str = ".git/hooks") -> None:
    path = repo / hooks_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


@pytest.mark.skipif(os.name != "posix", reason="shell-script hooks")
def test_post_commit_hook_runs_after_an_ai_commit_but_blocking_hooks_do_not(
    repo: Path, home: Path, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    write_hook(repo, "pre-commit", f"touch '{ran}.pre-commit'\nexit 1")
    write_hook(repo, "commit-msg", f"touch '{ran}.commit-msg'\nexit 1")
    write_hook(
        repo,
        "post-commit",
        f"git log -1 --format=%s > '{ran}.post-commit'\npwd >> '{ran}.post-commit'",
    )
    ops = GitOps(repo, home, post_commit_hook=True)
    assert ai_edit(ops, "write_file", {repo / "base.txt": "ai\n"}) is None
    assert head_subject(repo) == "ai(write_file): base.txt"
    assert not Path(f"{ran}.pre-commit").exists()
    assert not Path(f"{ran}.commit-msg").exists()
    subject, cwd = Path(f"{ran}.post-commit").read_text().splitlines()
    assert subject == "ai(write_file): base.txt"  # it saw the commit that had just landed
    assert Path(cwd).resolve() == repo.resolve()


@pytest.mark.skipif(os.name != "posix", reason="shell-script hooks")
def test_post_commit_hook_honours_core_hooks_path(repo: Path, home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    git(repo, "config", "core.hooksPath", "my-hooks")
    write_hook(repo, "post-commit", f"touch '{marker}'", hooks_dir="my-hooks")
    ai_edit(GitOps(repo, home, post_commit_hook=True), "write_file", {repo / "base.txt": "ai\n"})
    assert marker.exists()


@pytest.mark.skipif(os.name != "posix", reason="shell-script hooks")
def test_a_failing_post_commit_hook_is_a_notice_and_the_commit_stands(
    repo: Path, home: Path
) -> None:
    write_hook(repo, "post-commit", "echo 'deploy step broke' >&2\nexit 3")
    notice = ai_edit(GitOps(repo, home, post_commit_hook=True), "write_file", {repo / "base.txt": "ai\n"})
    assert notice is not None
    assert "post-commit hook failed (exit 3): deploy step broke" in notice
    assert head_subject(repo) == "ai(write_file): base.txt"


@pytest.mark.skipif(os.name != "posix", reason="shell-script hooks")
def test_a_hung_post_commit_hook_is_stopped_with_a_notice(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tether.store.git_hooks as git_hooks

    monkeypatch.setattr(git_hooks, "HOOK_TIMEOUT", 0.5)
    write_hook(repo, "post-commit", "sleep 30 &\nsleep 30")
    notice = ai_edit(GitOps(repo, home, post_commit_hook=True), "write_file", {repo / "base.txt": "ai\n"})
    assert notice is not None and "post-commit hook was stopped" in notice
    assert head_subject(repo) == "ai(write_file): base.txt"


@pytest.mark.skipif(os.name != "posix", reason="shell-script hooks")
def test_a_post_commit_hook_that_is_not_executable_is_ignored(
    repo: Path, home: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    write_hook(repo, "post-commit", f"touch '{marker}'")
    (repo / ".git/hooks/post-commit").chmod(0o644)
    assert ai_edit(GitOps(repo, home, post_commit_hook=True), "write_file", {repo / "base.txt": "ai\n"}) is None
    assert not marker.exists()
