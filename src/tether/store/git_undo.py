"""Undo: the newest AI commit taken back, refused whenever that could lose someone's work.

A file changed after the assistant's edit is not undone, and neither is a commit that is
not the assistant's; a pre commit under the AI commit is undone with it, so the user's
uncommitted work comes back uncommitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .git_repo import GitCommandError, _CommitInfo, _Repo


@dataclass
class UndoResult:
    ok: bool
    message: str
    paths: list[str] = field(default_factory=list)


def _names(paths: Sequence[str]) -> str:
    return ", ".join(paths)


AUTOCOMMIT_OFF = (
    "Nothing of tether's to undo: auto-commit is off, so the assistant's edits were not "
    "committed and cannot be undone (git diff shows them; /autocommit on records the next ones)."
)


def undo_newest(repo: _Repo | None, autocommit: bool = True) -> UndoResult:
    """Put the newest AI commit's files back and move HEAD before it, or say why not
    (with `autocommit` off, that the assistant's edits were never committed)."""
    head = repo.head() if repo else None
    if repo is None or head is None:
        if not autocommit:
            return UndoResult(False, AUTOCOMMIT_OFF)
        return UndoResult(False, "Nothing to undo: the assistant has not changed any files here.")
    busy = repo.in_progress()
    if busy:
        return UndoResult(False, f"Not undone: {busy} is in progress in this repository.")
    info = repo.commit_info(head)
    if info.kind != "ai":
        return UndoResult(False, _not_ours_message(repo, info) if autocommit else AUTOCOMMIT_OFF)
    restore_rev, base = _undo_targets(repo, info)
    paths = sorted(
        set(repo.changed_paths(restore_rev, head)) | set(_pre_paths(repo, restore_rev, base))
    )
    changed = _changed_since(repo, head, paths)
    if changed:
        return UndoResult(
            False,
            f"Not undone: {_names(changed)} changed after the assistant's edit "
            f"({info.subject}); undoing would discard that work.",
            changed,
        )
    users_staged = repo.staged(head, paths)
    try:
        repo.move_head(base, head, f"tether: undo {info.subject}")
    except GitCommandError as exc:
        # Usually the compare-and-swap lost: someone committed in the meantime.
        return UndoResult(False, f"Not undone: HEAD could not be moved back ({exc}).")
    _restore_worktree(repo, restore_rev, paths)
    repo.set_index_to(base, [p for p in paths if p not in users_staged])
    return UndoResult(True, f"Undid {info.subject}", paths)


def _not_ours_message(repo: _Repo, info: _CommitInfo) -> str:
    if repo.shadow:
        return "Nothing to undo: the newest checkpoint is not one of the assistant's changes."
    return (
        f'Not undone: the newest commit ({info.sha[:8]} "{info.subject}") is yours, '
        "not the assistant's; undo only takes back the assistant's own commits."
    )


def _undo_targets(repo: _Repo, info: _CommitInfo) -> tuple[str | None, str | None]:
    """(the revision whose content the files return to, the commit HEAD returns to)."""
    parent = info.parent
    if parent is not None:
        parent_info = repo.commit_info(parent)
        if parent_info.kind == "pre":
            return parent, parent_info.parent
    return parent, parent


def _pre_paths(repo: _Repo, restore_rev: str | None, base: str | None) -> list[str]:
    if restore_rev is None or restore_rev == base:
        return []
    return repo.changed_paths(base, restore_rev)


def _changed_since(repo: _Repo, head: str, paths: list[str]) -> list[str]:
    """Paths whose working-tree content no longer matches the AI commit."""
    committed = repo.tree_entries(head, paths)
    current = repo.worktree_entries(paths, head)
    return [p for p in paths if current[p] != committed.get(p)]


def _restore_worktree(repo: _Repo, rev: str | None, paths: list[str]) -> None:
    targets = repo.tree_entries(rev, paths)
    repo.remove_files([p for p in paths if p not in targets])
    repo.checkout(targets)
