"""A hostile repository configures programs everywhere git could run one; none may run.

Every program the repository names is `evil.sh ROLE`, which appends ROLE to a
marker file. The first test proves the repository really is hostile (plain git
runs it); the others drive every way tether starts git and find no marker.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from test_cli import openai_args, run_cli

from tether.core.messages import ToolCall
from tether.core.toolspec import ToolContext, ToolError, ToolTable
from tether.host.git_guard import hardened_git, name_overrides
from tether.safety.approval import ApprovalPolicy
from tether.safety.permissions import Rule, RuleSet
from tether.store.git_ops import GitOps
from tether.tools import builtin_tools
from tether.tools.file_search import search_in_file
from tether.tools.git import git_diff, git_status
from tether.tools.params import GitDiffParams, GitStatusParams, SearchInFileParams
from tether.ui.terminal.prompt import ProjectFiles

pytestmark = [
    pytest.mark.skipif(
        subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
        reason="git is not installed",
    ),
    pytest.mark.skipif(os.name != "posix", reason="shell-script programs"),
]

HOOKS = (
    "reference-transaction", "post-index-change", "pre-commit", "commit-msg", "post-commit",
    "post-checkout", "pre-auto-gc", "post-rewrite",
)


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def new_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    return path


class Evil:
    """A program that records that it ran, and the marker it leaves."""

    def __init__(self, tmp_path: Path) -> None:
        self.marker = tmp_path / "ran"
        self.script = tmp_path / "evil.sh"
        self.script.write_text(f'#!/bin/sh\necho "$1" >> {shlex.quote(str(self.marker))}\ncat\n')
        self.script.chmod(0o755)

    def command(self, role: str) -> str:
        return f"{shlex.quote(str(self.script))} {role}"

    def ran(self) -> list[str]:
        return self.marker.read_text().split() if self.marker.exists() else []

    def hooks_in(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in HOOKS:
            hook = folder / name
            hook.write_text(f"#!/bin/sh\n{self.command('hook-' + name)}\n")
            hook.chmod(0o755)


def hostile_files(repo: Path, evil: Evil) -> None:
    """What a repository can carry in its tree: attributes, an included config, hooks."""
    (repo / "extra.gitconfig").write_text(
        f'[filter "inc"]\n\tclean = {evil.command("included-clean")}\n'
    )
    evil.hooks_in(repo / "hostile-hooks")
    (repo / ".gitattributes").write_text(
        "* filter=x diff=x merge=x\n*.dat filter=a=b.c\n*.inc filter=inc\n*.proc filter=p\n"
    )


def configure_everything(repo: Path, evil: Evil, git_dir: Path) -> None:
    """Every program-running setting we know of, pointed at the marker."""
    settings = {
        "filter.x.clean": evil.command("clean"),
        "filter.x.smudge": evil.command("smudge"),
        "filter.x.required": "true",
        "filter.p.process": evil.command("process"),
        "filter.a=b.c.clean": evil.command("clean-odd-name"),
        "diff.x.textconv": evil.command("textconv"),
        "diff.x.command": evil.command("diff-command"),
        "diff.external": evil.command("diff-external"),
        "merge.x.driver": evil.command("merge"),
        "core.fsmonitor": evil.command("fsmonitor"),
        "core.pager": evil.command("pager"),
        "pager.status": evil.command("pager-status"),
        "core.editor": evil.command("editor"),
        "sequence.editor": evil.command("sequence-editor"),
        "core.sshCommand": evil.command("ssh"),
        "core.askPass": evil.command("askpass"),
        "credential.helper": f"!{evil.command('credential')}",
        "gpg.program": evil.command("gpg"),
        "commit.gpgSign": "true",
        "log.showSignature": "true",
        "core.hooksPath": str(repo / "hostile-hooks"),
        "include.path": str(repo / "extra.gitconfig"),
    }
    for key, value in settings.items():
        git(repo, "config", key, value)
    evil.hooks_in(git_dir / "hooks")


def make_stat_dirty(repo: Path, *names: str) -> None:
    """Same content, another mtime: git must read the file again (through its filter)."""
    for name in names:
        path = repo / name
        stamp = path.stat().st_mtime - 1000
        os.utime(path, (stamp, stamp))


@pytest.fixture
def evil(tmp_path: Path) -> Evil:
    return Evil(tmp_path)


@pytest.fixture
def hostile(tmp_path: Path, evil: Evil) -> Path:
    repo = new_repo(tmp_path / "repo")
    for name in ("a.txt", "b.dat", "c.inc", "d.proc"):
        (repo / name).write_text(f"{name} v1\n")
    hostile_files(repo, evil)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    configure_everything(repo, evil, repo / ".git")
    make_stat_dirty(repo, "a.txt", "b.dat", "c.inc", "d.proc")
    return repo


def test_the_fixture_is_hostile_plain_git_runs_its_programs(hostile: Path, evil: Evil) -> None:
    subprocess.run(["git", "status", "--short"], cwd=hostile, capture_output=True)
    ran = evil.ran()
    assert "fsmonitor" in ran and "clean" in ran and "process" in ran
    assert "clean-odd-name" in ran and "included-clean" in ran
    evil.marker.unlink()
    git(hostile, "update-ref", "refs/heads/probe", "HEAD")
    assert "hook-reference-transaction" in evil.ran()


def test_git_status_runs_nothing_the_repository_configures(hostile: Path, evil: Evil) -> None:
    (hostile / "a.txt").write_text("a.txt v2\n")
    out = git_status(GitStatusParams(), ToolContext(root=hostile))
    assert "a.txt" in out.text
    assert evil.ran() == []


def test_the_project_map_and_file_list_run_nothing_the_repository_configures(
    hostile: Path, evil: Evil
) -> None:
    from tether.engine.projectmap import project_map
    from tether.host.project_files import ProjectFiles

    assert "a.txt" in project_map(hostile, 2_000)
    assert hostile / "a.txt" in ProjectFiles(hostile).paths()
    assert evil.ran() == []


def test_git_diff_runs_nothing_the_repository_configures(hostile: Path, evil: Evil) -> None:
    (hostile / "a.txt").write_text("a.txt v2\n")
    (hostile / "b.dat").write_text("b.dat v2\n")
    out = git_diff(GitDiffParams(), ToolContext(root=hostile))
    assert "+a.txt v2" in out.text and "+b.dat v2" in out.text
    out = git_diff(GitDiffParams(path="a.txt"), ToolContext(root=hostile))
    assert "+a.txt v2" in out.text
    assert evil.ran() == []


def test_auto_commit_undo_and_diff_since_run_nothing(
    hostile: Path, evil: Evil, tmp_path: Path
) -> None:
    ops = GitOps(hostile, tmp_path / "home")
    head = ops.head()
    target = hostile / "b.dat"
    ops.snapshot_before([target])
    target.write_text("b.dat by the assistant\n")
    assert ops.commit_paths("write_file", [target]) is None
    assert git(hostile, "log", "-1", "--format=%s").strip() == "ai(write_file): b.dat"
    assert "+b.dat by the assistant" in ops.diff_since(head)
    new_dir = hostile / "pkg"
    new_dir.mkdir()
    (new_dir / "m.txt").write_text("new\n")
    ops.snapshot_before([new_dir])
    assert ops.commit_paths("create_dir", [new_dir]) is None
    assert ops.undo().ok
    assert ops.undo().ok
    assert target.read_text() == "b.dat v1\n"
    assert evil.ran() == []


def test_the_post_commit_hook_runs_only_when_the_setting_turns_it_on(
    hostile: Path, evil: Evil, tmp_path: Path
) -> None:
    target = hostile / "a.txt"
    target.write_text("off\n")
    assert GitOps(hostile, tmp_path / "home").commit_paths("write_file", [target]) is None
    assert evil.ran() == []
    target.write_text("on\n")
    GitOps(hostile, tmp_path / "home", post_commit_hook=True).commit_paths("write_file", [target])
    # Only the hook the user turned on, from where the repository keeps its hooks.
    assert evil.ran() == ["hook-post-commit"]


def test_file_listing_and_search_run_nothing(hostile: Path, evil: Evil) -> None:
    assert "a.txt" in ProjectFiles(hostile).names()
    out = search_in_file(SearchInFileParams(pattern="v1", path="."), ToolContext(root=hostile))
    assert "a.txt:1:" in out.text
    assert evil.ran() == []


def test_the_shadow_repository_runs_no_program_a_folder_can_reach(
    tmp_path: Path, evil: Evil
) -> None:
    """Outside git, the folder's .gitattributes meets the user's global config: its
    hooks, fsmonitor and diff drivers do not run for tether's checkpoints either."""
    evil.hooks_in(tmp_path / "global-hooks")
    (tmp_path / "global-gitconfig").write_text(
        f'[diff "x"]\n\ttextconv = {evil.command("textconv")}\n'
        f'\tcommand = {evil.command("diff-command")}\n'
        f"[core]\n\tfsmonitor = {evil.command('fsmonitor')}\n"
        f"\thooksPath = {tmp_path / 'global-hooks'}\n"
    )
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / ".gitattributes").write_text("* diff=x\n")
    target = folder / "notes.txt"
    target.write_text("mine\n")
    ops = GitOps(folder, tmp_path / "home")
    ops.snapshot_before([target])
    target.write_text("assistant\n")
    assert ops.commit_paths("write_file", [target]) is None
    assert "+assistant" in ops.diff_since(None)
    assert ops.undo().ok
    assert target.read_text() == "mine\n"
    assert not (folder / ".git").exists()
    assert evil.ran() == []


def test_a_users_own_filter_works_but_the_repository_cannot_redefine_one(
    tmp_path: Path, evil: Evil
) -> None:
    """Filters from the user's global config (Git LFS, say) are the user's programs."""
    (tmp_path / "global-gitconfig").write_text('[filter "up"]\n\tclean = tr a-z A-Z\n')
    repo = new_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_text("*.up filter=up\n")
    (repo / "own.up").write_text("shout\n")
    ops = GitOps(repo, tmp_path / "home")
    assert ops.commit_paths("write_file", [repo / "own.up"]) is None
    assert git(repo, "show", "HEAD:own.up") == "SHOUT\n"
    git(repo, "config", "filter.up.clean", evil.command("redefined"))
    (repo / "own.up").write_text("again\n")
    assert ops.commit_paths("write_file", [repo / "own.up"]) is None
    assert git(repo, "show", "HEAD:own.up") == "again\n"  # neither program ran
    assert evil.ran() == []


def test_a_submodule_with_its_own_filter_is_not_looked_into(
    tmp_path: Path, evil: Evil
) -> None:
    """`git status` would start a git inside the submodule, which reads the submodule's config."""
    repo = new_repo(tmp_path / "super")
    (repo / "top.txt").write_text("top\n")
    sub = new_repo(repo / "sub")
    (sub / "s.txt").write_text("inner\n")
    (sub / ".gitattributes").write_text("* filter=y\n")
    git(sub, "add", ".")
    git(sub, "commit", "-q", "-m", "inner")
    git(sub, "config", "filter.y.clean", evil.command("submodule-clean"))
    git(repo, "add", "top.txt", "sub")
    git(repo, "commit", "-q", "-m", "outer")
    evil.marker.unlink(missing_ok=True)
    make_stat_dirty(sub, "s.txt")
    (repo / "top.txt").write_text("top v2\n")
    ctx = ToolContext(root=repo)
    assert "top.txt" in git_status(GitStatusParams(), ctx).text
    assert "+top v2" in git_diff(GitDiffParams(), ctx).text
    ops = GitOps(repo, tmp_path / "home")
    assert "+top v2" in ops.diff_since("HEAD")
    (repo / "newdir").mkdir()
    (repo / "newdir" / "n.txt").write_text("n\n")
    assert ops.commit_paths("create_dir", [repo / "newdir"]) is None
    assert evil.ran() == []
    # and the submodule really was hostile
    git(repo, "status", "--short")
    assert "submodule-clean" in evil.ran()


def test_every_named_driver_gets_its_own_override() -> None:
    keys = [
        "filter.lfs.clean", "filter.a.b.smudge", "diff.pdf.textconv", "merge.ours.driver",
        "remote.origin.url", "protocol.ext.allow", "core.fsmonitor", "merge.ff",
    ]
    overrides = dict(name_overrides(keys))
    assert overrides["filter.lfs.clean"] == "" and overrides["filter.lfs.required"] == "false"
    assert overrides["filter.a.b.process"] == ""  # a subsection may hold dots
    assert overrides["diff.pdf.command"] == "" and overrides["diff.pdf.textconv"] == ""
    assert overrides["merge.ours.driver"] == ""
    assert overrides["remote.origin.uploadpack"] == ""
    assert overrides["protocol.ext.allow"] == "never"
    assert not any(key.startswith("merge.ff.") for key in overrides)  # no subsection: no driver


def test_hardened_git_reads_the_names_from_included_config(hostile: Path) -> None:
    overrides = dict(hardened_git(hostile).overrides)
    assert overrides["filter.inc.clean"] == ""
    assert overrides["filter.a=b.c.clean"] == ""
    assert overrides["core.hooksPath"] == os.devnull


def test_an_unreadable_config_means_git_is_not_run(tmp_path: Path, evil: Evil) -> None:
    repo = new_repo(tmp_path / "broken")
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(f"[core]\n\tfsmonitor = {evil.command('fsmonitor')}\n[broken\n")
    with pytest.raises(ToolError, match="configuration could not be read"):
        git_status(GitStatusParams(), ToolContext(root=repo))
    assert evil.ran() == []


# --- writes into git's own files ----------------------------------------------------------


@pytest.fixture
def table(tmp_path: Path) -> ToolTable:
    tools, _ = builtin_tools(ToolContext(root=tmp_path))
    return tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = new_repo(tmp_path / "project")
    (root / "src").mkdir()
    return root


def gate(root: Path, table: ToolTable, name: str, *, allow=(), auto=False, can_ask=True, **args):  # noqa: ANN001, ANN003
    rules = RuleSet([Rule.parse(r, "test") for r in allow], [])
    policy = ApprovalPolicy(root, rules, auto=auto, can_ask=can_ask)
    return policy.check(ToolCall("c1", name, dict(args)), table.get(name))


@pytest.mark.parametrize("path", [
    ".git/config", "./.git/hooks/post-commit", "src/../.git/info/attributes", ".GIT/config",
    "link-to-git/config", "{root}/.git/config", "sub-wt/.git", "{separate}/config",
])
def test_writes_into_git_files_ask_even_with_allow_rules_and_auto(
    project: Path, table: ToolTable, tmp_path: Path, path: str
) -> None:
    os.symlink(project / ".git", project / "link-to-git")
    separate = tmp_path / "separate-gitdir"
    git(tmp_path, "init", "-q", f"--separate-git-dir={separate}", str(tmp_path / "linked"))
    (project / "sub-wt").mkdir()
    path = path.format(root=project, separate=separate)
    root = tmp_path / "linked" if "separate" in path else project
    verdict = gate(root, table, "write_file", allow=["write_file"], auto=True,
                   filepath=path, content="[filter]\n")
    assert verdict.action == "ask"
    assert "git's own files" in verdict.reason


def test_every_file_tool_that_writes_is_covered_and_reads_are_not(
    project: Path, table: ToolTable
) -> None:
    everything = dict(allow=["*"], auto=True)
    assert gate(project, table, "edit_file", **everything, filepath=".git/config",
                old_text="a", new_text="b").action == "ask"
    assert gate(project, table, "copy_file", **everything, source="src/x",
                destination=".git/hooks/pre-commit").action == "ask"
    assert gate(project, table, "delete_file", **everything, filepath=".git/index").action == "ask"
    assert gate(project, table, "create_dir", **everything, path=".git/hooks/new").action == "ask"
    assert gate(project, table, "copy_file", **everything, source=".git/config",
                destination="src/config.txt").action == "allow"
    assert gate(project, table, "read_file", filepath=".git/config").action == "allow"
    assert gate(project, table, "write_file", **everything, filepath="src/.gitattributes",
                content="* filter=x\n").action == "allow"


def test_one_shot_refuses_git_file_writes_unless_a_rule_names_that_exact_path(
    project: Path, table: ToolTable
) -> None:
    def one_shot(path: str, *allow: str) -> str:
        return gate(project, table, "write_file", allow=allow, auto=True, can_ask=False,
                    filepath=path, content="x").action

    assert one_shot(".git/config", "write_file") == "deny"
    assert one_shot(".git/config", "write_file(.git/*)") == "deny"
    assert one_shot(".git/config", "write_file(.git/config)") == "allow"
    assert one_shot("./.git/config", "write_file(.git/config)") == "allow"
    assert one_shot(".git/hooks/post-commit", "write_file(.git/config)") == "deny"


def test_one_shot_with_allow_write_file_cannot_plant_a_filter(
    project: Path, home: Path, evil: Evil
) -> None:
    """The issue's example, end to end: a clean filter in .git/config, then .gitattributes,
    then a write whose auto-commit would run the filter, then git_status."""
    config_before = (project / ".git" / "config").read_text()
    filter_config = f'[filter "x"]\n\tclean = {evil.command("clean")}\n'
    script = [
        Reply(tool_calls=[("write_file", {"filepath": ".git/config", "content": filter_config})]),
        Reply(tool_calls=[("write_file", {"filepath": ".gitattributes", "content": "* filter=x\n"})]),
        Reply(tool_calls=[("write_file", {"filepath": "src/a.txt", "content": "hello\n"})]),
        Reply(tool_calls=[("git_status", {})]),
        Reply(text="done"),
    ]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "go", "--allow", "write_file", *openai_args(server)], project, home)
    assert proc.returncode == 0, proc.stderr
    assert (project / ".git" / "config").read_text() == config_before
    assert (project / "src" / "a.txt").read_text() == "hello\n"
    assert "git's own files" in json.dumps([body for _, body in server.requests])
    assert evil.ran() == []


# --- core.worktree pointing git elsewhere ------------------------------------------------


@pytest.fixture
def worktree_above(tmp_path: Path, home: Path) -> Path:
    """A repository whose config makes the folder above it (which holds TETHER_HOME) its
    work tree, with the keys file listed in its index: plain `git diff` prints the key."""
    home.mkdir()
    (home / "credentials.json").write_text('{"keys": {"openai": "sk-worktree-leak"}}')
    root = new_repo(tmp_path / "project")
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, input="x\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    git(root, "config", "core.worktree", str(tmp_path))
    git(root, "update-index", "--add", "--cacheinfo",
        f"100644,{blob},{home.relative_to(tmp_path)}/credentials.json")
    assert "sk-worktree-leak" in git(root, "diff")  # the repository really is hostile
    return root


def test_git_tools_refuse_a_work_tree_outside_the_repository_folder(worktree_above, home):
    ctx = ToolContext(root=worktree_above)
    for tool, params in ((git_diff, GitDiffParams()), (git_status, GitStatusParams())):
        with pytest.raises(ToolError, match="core.worktree") as caught:
            tool(params, ctx)
        assert "sk-worktree-leak" not in str(caught.value)


def test_undo_and_auto_commit_never_reach_a_work_tree_outside(worktree_above, home, tmp_path):
    """The repository's history claims an AI commit deleted `TETHER_HOME/config.toml`
    (a file that does not exist): undo in the foreign work tree would create it."""
    planted = home / "config.toml"
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=worktree_above,
                          input="sandbox = 'off'\n", capture_output=True, text=True,
                          check=True).stdout.strip()
    name = f"{home.relative_to(tmp_path)}/config.toml"
    commit = ("-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m")
    git(worktree_above, "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}")
    git(worktree_above, *commit, "user's commit")
    git(worktree_above, "update-index", "--force-remove", os.path.relpath(planted, worktree_above))
    git(worktree_above, *commit, "ai(delete_file): config.toml\n\nTether-Ai-Commit: 1")
    ops = GitOps(worktree_above, home)
    result = ops.undo()
    assert not planted.exists()
    assert not result.ok
    assert "core.worktree" in result.message
    (worktree_above / "a.txt").write_text("a\n")
    assert "core.worktree" in (ops.commit_paths("write_file", [worktree_above / "a.txt"]) or "")


def test_a_submodule_whose_work_tree_is_its_own_folder_still_works(tmp_path):
    inner = new_repo(tmp_path / "inner")
    (inner / "f.txt").write_text("f\n")
    git(inner, "add", "f.txt")
    git(inner, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "f")
    outer = new_repo(tmp_path / "outer")
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    sub = outer / "sub"
    assert (sub / ".git").is_file()
    assert git(sub, "config", "core.worktree").strip()  # git itself sets it for a submodule
    (sub / "f.txt").write_text("changed\n")
    assert "changed" in git_diff(GitDiffParams(), ToolContext(root=sub)).text
