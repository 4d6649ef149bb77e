"""The user's own commit of everything uncommitted (/diff shows it, /commit records it).

Plumbing through the hardened git of `git_repo._Repo`, as for the assistant's commits: the
changes are staged as `git add -A` would (`_Repo.stage_changes`, which never starts a git
inside a submodule), the tree is written and committed with `commit-tree`, and HEAD moves by
compare-and-swap. No hook, filter, signing program or editor the repository configures runs.
Only a real repository counts: the shadow history of a folder without git is tether's own.
"""

from __future__ import annotations

import re

from .git_repo import GitCommandError, _Repo

_FILE_HEADER = re.compile(r"^diff --git a/(.*) b/(.*)$", re.MULTILINE)


def changed_files(diff: str) -> list[str]:
    """The files a diff touches, in its order (the new name of a renamed one)."""
    return [match.group(2) for match in _FILE_HEADER.finditer(diff)]


def require_real(repo: _Repo | None, root: object) -> _Repo:
    """`repo` when it is the project's own git repository; GitCommandError otherwise."""
    if repo is None or repo.shadow:
        raise GitCommandError(f"{root} is not inside a git repository")
    return repo


def commit_everything(repo: _Repo, message: str) -> str:
    """Stage every change into the real index and commit it with `message`; the new sha.
    GitCommandError when there is nothing to commit or a merge or rebase is under way."""
    busy = repo.in_progress()
    if busy:
        raise GitCommandError(f"{busy} is in progress; finish it with git first")
    old = repo.head()
    repo.stage_changes(None)  # the real index, as `git add -A` leaves it
    tree = repo.out("write-tree")
    if tree == repo.tree_of(old):
        raise GitCommandError("there is nothing to commit")
    text = message.strip()
    new = repo.commit_tree(tree, old, text + "\n")
    repo.move_head(new, old, "commit: " + text.splitlines()[0])
    return new
