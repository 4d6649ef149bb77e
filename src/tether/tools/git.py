"""Read-only git tools: what changed in the project, and how.

Both run git as a subprocess in the project root, under a timeout, without
taking git's optional locks (so they never collide with the user's own git
commands), and turn every failure into a clear error result. Git starts
through `git_guard`, so no filter, diff driver, hook, fsmonitor or pager the
repository configures runs, and submodules are not looked into (a git started
inside one would read its own config).
"""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING

from tether.core.toolspec import Tool, ToolContext, ToolError, ToolOutput
from tether.host import GitConfigError, run_hardened

from .limits import params_named

if TYPE_CHECKING:
    from .params import GitDiffParams, GitStatusParams

GIT_TOOL_TIMEOUT = 20.0
DIFF_SECTION_CAP = 20_000
"""Characters kept of each of the staged and unstaged diffs."""
UNTRACKED_LIST_CAP = 50
STATUS_CAP = 20_000


class _ConfigUnreadable(ToolError):
    """The repository's git config could not be read, so git was not started there."""


def _run_git(ctx: ToolContext, *args: str) -> str:
    """Run one git command in the project root; any failure becomes a ToolError."""
    try:
        proc = run_hardened(
            ctx.root, "-c", "core.quotepath=off", "-c", "color.ui=false", *args,
            timeout=GIT_TOOL_TIMEOUT, extra_env={"GIT_OPTIONAL_LOCKS": "0"},
        )
    except GitConfigError as exc:
        raise _ConfigUnreadable(f"git {args[0]} was not run: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"git {args[0]} timed out after {GIT_TOOL_TIMEOUT:.0f}s") from exc
    except OSError as exc:
        raise ToolError(f"could not run git in {ctx.root}: {exc.strerror or exc}") from exc
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ToolError(f"git {args[0]} failed: {message[-1] if message else 'no error message'}")
    return proc.stdout.decode("utf-8", "replace")


def _require_repository(ctx: ToolContext) -> None:
    if not ctx.root.is_dir():
        raise ToolError(f"the project folder {ctx.root} does not exist")
    if shutil.which("git") is None:
        raise ToolError("git is not installed (not found on PATH)")
    try:
        inside = _run_git(ctx, "rev-parse", "--is-inside-work-tree").strip()
    except _ConfigUnreadable:
        raise
    except ToolError:
        inside = "false"
    if inside != "true":
        raise ToolError(f"{ctx.root} is not inside a git repository")


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return f"{cut}\n[... {len(text) - limit} more characters cut; ask about one path at a time]\n"


def git_status(params: GitStatusParams, ctx: ToolContext) -> ToolOutput:
    _require_repository(ctx)
    out = _run_git(
        ctx, "status", "--short", "--branch", "--untracked-files=normal", "--ignore-submodules=dirty"
    )
    lines = out.splitlines()
    branch = lines[0].removeprefix("## ") if lines and lines[0].startswith("## ") else ""
    changes = [line for line in lines if not line.startswith("## ")]
    text = out.rstrip("\n")
    if not changes:
        text += "\n(working tree clean)"
    summary = f"{len(changes)} changed path(s)" + (f" on {branch}" if branch else "")
    return ToolOutput(text=_cap(text, STATUS_CAP), summary=summary)


def git_diff(params: GitDiffParams, ctx: ToolContext) -> ToolOutput:
    _require_repository(ctx)
    pathspec = ["--", str(ctx.resolve(params.path))] if params.path else ["--"]
    # No external diff programs or textconv filters: both come from repository config.
    diff = ("diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")
    staged = _run_git(ctx, *diff, "--cached", *pathspec)
    unstaged = _run_git(ctx, *diff, *pathspec)
    untracked = _run_git(ctx, "ls-files", "--others", "--exclude-standard", *pathspec).splitlines()
    where = f" in {params.path}" if params.path else ""
    if not (staged or unstaged or untracked):
        return ToolOutput(text=f"No changes{where}: the files match HEAD.", summary="no changes")
    sections = [
        _section("Staged changes (git diff --cached)", staged),
        _section("Unstaged changes (git diff)", unstaged),
    ]
    if untracked:
        shown = untracked[:UNTRACKED_LIST_CAP]
        more = len(untracked) - len(shown)
        listing = "\n".join(shown) + (f"\n[... {more} more]" if more else "")
        sections.append(f"Untracked files (not in git yet):\n{listing}")
    summary = (
        f"{_count_files(staged)} staged, {_count_files(unstaged)} unstaged, "
        f"{len(untracked)} untracked"
    )
    return ToolOutput(text="\n\n".join(sections), summary=summary)


def _section(title: str, diff: str) -> str:
    if not diff:
        return f"{title}: none"
    return f"{title}:\n{_cap(diff, DIFF_SECTION_CAP).rstrip()}"


def _count_files(diff: str) -> int:
    return sum(1 for line in diff.splitlines() if line.startswith("diff --git "))


GIT_TOOLS: list[Tool] = [
    Tool(
        name="git_status",
        description="Show the git branch and which files are staged, modified or untracked.",
        params=params_named("GitStatusParams"),
        handler=git_status,
        reads=True,
        timeout=GIT_TOOL_TIMEOUT + 5,
    ),
    Tool(
        name="git_diff",
        description=(
            "Show uncommitted changes: the staged diff, the unstaged diff and untracked "
            "files, optionally for one path."
        ),
        params=params_named("GitDiffParams"),
        handler=git_diff,
        reads=True,
        main_arg="path",
        path_params=("path",),
        timeout=GIT_TOOL_TIMEOUT * 3 + 5,
        result_cap=2 * DIFF_SECTION_CAP + 4_000,
    ),
]
