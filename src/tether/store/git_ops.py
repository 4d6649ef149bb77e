"""Auto-commit and undo for every file the assistant changes.

Each successful file tool call becomes one commit, `ai(<tool>): <paths>`, with
the trailer `Tether-Ai-Commit: 1`. The commit is built in a temporary index
from HEAD plus only the named paths, so whatever the user has staged or left
unstaged elsewhere stays exactly as it was. Plumbing (`commit-tree`,
`update-ref` with compare-and-swap) is used instead of `git commit`, and the
user's config is never changed.

Every git command starts through `git_guard.hardened_git`, so nothing the
repository configures runs: no hooks (reference-transaction included, which
`update-ref` would otherwise start), filters, textconv or diff drivers,
fsmonitor, pager or signing program. Commands that would start a git inside
each submodule to ask whether it is dirty (`git add -A`, `git diff` of the
working tree) are replaced by listing the changed files or passed
`--ignore-submodules=dirty`, because that inner git reads the submodule's own
configuration.

The post-commit hook is the one exception, and only when the user turns the
`git_post_commit_hook` setting on: a hook from the repository is a program
the repository chose, so by default it never runs for an AI commit. When on,
once an AI commit has landed the repository's post-commit hook (found through
`git rev-parse --git-path hooks`, which honours core.hooksPath) runs if it is
executable: from the top of the work tree, stdin closed, output captured, at
most HOOK_TIMEOUT seconds, with the user's environment as git would give it.
A failure or a timeout comes back as a notice; the commit stands either way.
pre-commit, prepare-commit-msg and commit-msg never run (a lint failure must
not stop a checkpoint, and commit-msg must not rewrite the trailer undo
relies on). The shadow repository has no user hooks, so nothing runs there.

Outside a git repository the same commits go to a shadow repository under
`TETHER_HOME/shadow/<hash of the folder>`, used with `--git-dir/--work-tree`,
so the user's folder never gets a `.git`.

Keeping the user's own uncommitted work safe
--------------------------------------------
Undo restores each file to the content it had before the assistant's edit.
If a file had uncommitted changes (or was untracked) when the assistant
touched it, HEAD does not hold that content. So `snapshot_before` records the
file's current content just before a file tool runs, and `commit_paths` then
lands two commits at once: `ai-pre(<tool>): <paths>` (trailer
`Tether-Ai-Commit: pre`) holding the user's pre-edit content, and the AI
commit on top of it, which therefore shows only the assistant's own change.
Undo restores the files to the pre commit's content and moves HEAD back to
the commit *before* the pre commit, so the user's work is back where it came
from: uncommitted in the working tree, exactly as before. A pre commit is
made only when the recorded content differs from HEAD; `recent()` hides it.
The dispatcher must call `snapshot_before` before a file tool runs, or undo
can only restore what HEAD (or the shadow repository) already held.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .git_commit import commit_everything, require_real
from .git_hooks import run_post_commit_hook
from .git_repo import (
    _DIRECTORY,
    AI_TRAILER,
    Entry,
    GitCommandError,
    _decode,
    _Repo,
    find_repo,
)
from .git_undo import UndoResult, undo_newest

DIFF_UNAVAILABLE = "[diff unavailable"
DIFF_FLAGS = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")
"""Every diff tether asks of git: plain text, no program the repository names."""
_REVISION = re.compile(r"^[\w./@^~{}-]+$")
"""What a revision in a range may look like: no option, no space, no pathspec magic."""
"""How `GitOps.diff_since` starts its answer when it cannot make a diff."""
_SUBJECT_PATHS = 5
_TOOL_RE = re.compile(r"^ai\(([^)]*)\):")


@dataclass
class AiCommit:
    sha: str
    tool: str
    paths: list[str]
    message: str
    when: float


def _subject(prefix: str, tool: str, paths: Sequence[str]) -> str:
    tool = re.sub(r"[()\s]+", "_", tool.strip()) or "tool"
    shown = ", ".join(paths[:_SUBJECT_PATHS])
    if len(paths) > _SUBJECT_PATHS:
        shown += f" and {len(paths) - _SUBJECT_PATHS} more"
    return f"{prefix}({tool}): {shown}"


def _message(prefix: str, tool: str, paths: Sequence[str], trailer: str) -> str:
    return f"{_subject(prefix, tool, paths)}\n\n{AI_TRAILER}: {trailer}\n"


class GitOps:
    """Checkpoints and undo for the assistant's file changes in one project root."""

    def __init__(
        self, root: Path, home: Path, *, enabled: bool = True, post_commit_hook: bool = False
    ) -> None:
        self.root = Path(root)
        self.home = Path(home)
        self.enabled = enabled
        self.post_commit_hook = post_commit_hook
        """Run the repository's post-commit hook after an AI commit (the user's setting)."""
        self._lock = threading.RLock()
        # Pre-edit content recorded by snapshot_before, consumed by commit_paths.
        self._pending: dict[tuple[Path, str], Entry | None] = {}
        self._told_no_git = False

    # -- public API ----------------------------------------------------------

    def available(self) -> bool:
        """Whether a git binary is on PATH."""
        return shutil.which("git") is not None

    @property
    def shadow_dir(self) -> Path:
        digest = hashlib.sha256(str(self.root.resolve()).encode("utf-8", "surrogateescape"))
        return self.home / "shadow" / digest.hexdigest()[:16]

    def snapshot_before(self, paths: Sequence[Path]) -> None:
        """Record the paths' current content so undo can bring it back. Never raises."""
        if not self.enabled or not paths or not self.available():
            return
        with self._lock, contextlib.suppress(GitCommandError, OSError):
            repo = find_repo(self.root, self.shadow_dir, create=True)
            if repo is None:
                return
            rels, _ = self._select(repo, paths)
            current = repo.worktree_entries(rels, repo.head())
            for rel in rels:
                if current[rel] != _DIRECTORY:
                    self._pending[(repo.git_dir, rel)] = current[rel]

    def commit_paths(self, tool: str, paths: Sequence[Path]) -> str | None:
        """Commit exactly `paths` as the assistant's change; a notice on trouble, never raises."""
        if not self.enabled or not paths:
            return None
        if not self.available():
            return self._no_git_notice()
        try:
            with self._lock:
                return self._commit(tool, paths)
        except (GitCommandError, OSError) as exc:
            return f"auto-commit skipped: {exc}"

    def undo(self) -> UndoResult:
        """Put the newest AI change back, refusing whenever that could lose someone's work."""
        if not self.available():
            return UndoResult(
                False, "Undo needs git, and git is not installed (not found on PATH)."
            )
        try:
            with self._lock:
                return undo_newest(find_repo(self.root, self.shadow_dir, create=False), self.enabled)
        except (GitCommandError, OSError) as exc:
            return UndoResult(False, f"Undo failed: {exc}")

    def recent(self, n: int = 10, stop_at: str | None = None) -> list[AiCommit]:
        """The AI commits reachable from HEAD, newest first, up to the first user commit
        (or up to `stop_at`: the head before a run, for what the run committed)."""
        if n <= 0 or not self.available():
            return []
        try:
            with self._lock:
                repo = find_repo(self.root, self.shadow_dir, create=False)
                return self._recent(repo, n, stop_at) if repo else []
        except (GitCommandError, OSError):
            return []

    def diff_since(self, rev: str | None) -> str:
        """The working tree against `rev` (None: against nothing, i.e. every file is new)."""
        if not self.available():
            return f"{DIFF_UNAVAILABLE}: git is not installed]"
        try:
            with self._lock:
                repo = find_repo(self.root, self.shadow_dir, create=False)
                return self._diff_since(repo, rev) if repo else ""
        except (GitCommandError, OSError) as exc:
            return f"{DIFF_UNAVAILABLE}: {exc}]"

    def uncommitted(self) -> str:
        """The project repository's uncommitted changes, staged or not, new files included,
        as one diff against HEAD; GitCommandError outside a git repository."""
        if not self.available():
            raise GitCommandError("git is not installed (not found on PATH)")
        with self._lock:
            repo = require_real(find_repo(self.root, self.shadow_dir, create=False), self.root)
            return self._diff_since(repo, repo.head())

    def range_diff(self, spec: str) -> str:
        """The diff a commit range names: `A..B`, `A...B` (from their merge base) or `A`
        (that commit alone). GitCommandError outside a repository or for a revision git
        cannot resolve, ValueError for one that is not a revision."""
        if not self.available():
            raise GitCommandError("git is not installed (not found on PATH)")
        with self._lock:
            repo = require_real(find_repo(self.root, self.shadow_dir, create=False), self.root)
            old, new = _range_ends(repo, spec)
            return _decode(repo.run(*DIFF_FLAGS, old, new, "--").stdout)

    def commit_uncommitted(self, message: str) -> str:
        """Commit every uncommitted change as the user's own commit (`git_commit`); its sha.
        GitCommandError outside a repository, with nothing to commit, or mid-merge."""
        if not self.available():
            raise GitCommandError("git is not installed (not found on PATH)")
        with self._lock:
            repo = require_real(find_repo(self.root, self.shadow_dir, create=False), self.root)
            return commit_everything(repo, message)

    def head(self) -> str | None:
        """The current commit (of the shadow repository outside git), or None."""
        if not self.available():
            return None
        try:
            repo = find_repo(self.root, self.shadow_dir, create=False)
            return repo.head() if repo else None
        except (GitCommandError, OSError):
            return None

    # -- choosing the paths --------------------------------------------------

    def _select(self, repo: _Repo, paths: Sequence[Path]) -> tuple[list[str], list[str]]:
        """Repository-relative paths to commit, and notices for the ones skipped."""
        rels: list[str] = []
        notices: list[str] = []
        for path in paths:
            rel = self._relative(repo, Path(path))
            if rel is None:
                notices.append(f"auto-commit skipped {path}: outside the repository")
            elif rel not in rels:
                rels.append(rel)
        ignored = repo.ignored(rels)
        for rel in [r for r in rels if r in ignored]:
            notices.append(f"auto-commit skipped {rel}: ignored by .gitignore")
        return [r for r in rels if r not in ignored], notices

    def _relative(self, repo: _Repo, path: Path) -> str | None:
        full = Path(os.path.abspath(path if path.is_absolute() else self.root / path))
        # Resolve the directory but not the name: a symlink is committed as itself.
        full = full.parent.resolve() / full.name
        try:
            rel = full.relative_to(repo.toplevel)
        except ValueError:
            return None
        if (
            not rel.parts
            or rel.parts[0] == ".git"
            or full == repo.git_dir
            or repo.git_dir in full.parents
        ):
            return None
        return rel.as_posix()

    # -- committing ----------------------------------------------------------

    def _commit(self, tool: str, paths: Sequence[Path]) -> str | None:
        repo = find_repo(self.root, self.shadow_dir, create=True)
        if repo is None:
            return None
        busy = repo.in_progress()
        if busy:
            return f"auto-commit skipped: {busy} is in progress in this repository"
        rels, notices = self._select(repo, paths)
        if not rels:
            return "; ".join(notices) or None
        old = repo.head()
        users_staged = repo.staged(old, rels)
        pre_state = {
            r: self._pending.pop((repo.git_dir, r))
            for r in rels
            if (repo.git_dir, r) in self._pending
        }
        new = self._build_commits(repo, tool, rels, old, pre_state)
        if new is None:
            return "; ".join(notices) or None
        repo.move_head(new, old, _subject("tether: ai", tool, rels))
        try:
            repo.set_index_to(new, [r for r in rels if r not in users_staged])
        except GitCommandError as exc:
            notices.append(f"committed {new[:8]}, but git's index was not updated ({exc})")
        hook_notice = run_post_commit_hook(repo) if self.post_commit_hook else None
        if hook_notice:
            notices.append(f"committed {new[:8]}, but {hook_notice}")
        return "; ".join(notices) or None

    def _build_commits(
        self,
        repo: _Repo,
        tool: str,
        rels: list[str],
        old: str | None,
        pre_state: dict[str, Entry | None],
    ) -> str | None:
        """The pre-snapshot commit (if needed) and the AI commit on top; None if nothing changed."""
        with repo.temp_index(old) as index:
            parent = old
            if pre_state:
                repo.set_entries(index, pre_state)
                pre_tree = repo.out("write-tree", index=index)
                if pre_tree != repo.tree_of(old):
                    message = _message("ai-pre", tool, sorted(pre_state), "pre")
                    parent = repo.commit_tree(pre_tree, old, message)
            repo.stage_worktree(index, rels)
            tree = repo.out("write-tree", index=index)
        if tree == repo.tree_of(parent):
            return None
        return repo.commit_tree(tree, parent, _message("ai", tool, rels, "1"))

    # -- reading history -----------------------------------------------------

    def _recent(self, repo: _Repo, n: int, stop_at: str | None = None) -> list[AiCommit]:
        commits: list[AiCommit] = []
        sha = repo.head()
        while sha is not None and sha != stop_at and len(commits) < n:
            info = repo.commit_info(sha)
            if info.kind is None:
                break
            if info.kind == "ai":
                match = _TOOL_RE.match(info.subject)
                commits.append(
                    AiCommit(
                        sha=sha,
                        tool=match.group(1) if match else "",
                        paths=repo.changed_paths(info.parent, sha),
                        message=info.subject,
                        when=info.when,
                    )
                )
            sha = info.parent
        return commits

    def _diff_since(self, repo: _Repo, rev: str | None) -> str:
        base = repo.tree_of(rev) if rev else repo.empty_tree()
        diff = DIFF_FLAGS
        if repo.shadow:
            # The shadow tracks only files the assistant touched; never the whole folder.
            return _decode(repo.run(*diff, base, "--").stdout)
        real_index = Path(repo.out("rev-parse", "--git-path", "index"))
        real_index = real_index if real_index.is_absolute() else repo.toplevel / real_index
        with repo.temp_index() as index:
            if real_index.exists():
                # copy2 keeps the mtime: git trusts an entry as clean only when it is older
                # than its index file, so a fresh mtime would hide a same-size change made
                # within the same second as the last commit (racy git).
                shutil.copy2(real_index, index)
            # New files count as changes too, so stage everything into a private copy.
            repo.stage_changes(index)
            return _decode(repo.run(*diff, "--cached", base, "--", index=index).stdout)

    def _no_git_notice(self) -> str | None:
        if self._told_no_git:
            return None
        self._told_no_git = True
        return "git is not installed: the assistant's edits are not checkpointed and /undo is unavailable"


def _range_ends(repo: _Repo, spec: str) -> tuple[str, str]:
    """The two trees (as commits) a range's diff runs between."""
    old, dots, new = spec.partition("...") if "..." in spec else spec.partition("..")
    if not dots:  # one commit: against its parent (the empty tree for a first commit)
        commit = _commit_of(repo, spec)
        parent = repo.commit_info(commit).parent
        return parent or repo.empty_tree(), commit
    old_sha, new_sha = _commit_of(repo, old or "HEAD"), _commit_of(repo, new or "HEAD")
    if dots == "...":
        old_sha = repo.out("merge-base", old_sha, new_sha)
    return old_sha, new_sha


def _commit_of(repo: _Repo, revision: str) -> str:
    if not _REVISION.match(revision) or revision.startswith("-"):
        raise ValueError(f"{revision!r} is not a revision (use A..B, A...B or one commit)")
    proc = repo.run("rev-parse", "-q", "--verify", f"{revision}^{{commit}}", ok=(0, 1, 128))
    sha = _decode(proc.stdout).strip()
    if proc.returncode != 0 or not sha:
        raise GitCommandError(f"no commit named {revision!r} in this repository")
    return sha
