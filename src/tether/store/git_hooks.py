"""The repository's post-commit hook, run after an AI commit when the user turned it on."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from tether.host import base_git_env

from .git_repo import GitCommandError, _decode, _last_line, _Repo

HOOK_TIMEOUT = 30.0


def _run_hook(hook: Path, *, cwd: Path, env: dict[str, str]) -> str | None:
    """Run one hook with stdin closed and output captured; a notice if it fails."""
    name = hook.name
    try:
        # Its own process group, so a timeout also stops anything the hook started.
        proc = subprocess.Popen(
            [str(hook)],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=os.name == "posix",
        )
    except OSError as exc:
        return f"the {name} hook could not run: {exc.strerror or exc}"
    try:
        _out, err = proc.communicate(timeout=HOOK_TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        return f"the {name} hook was stopped after {HOOK_TIMEOUT:.0f}s"
    if proc.returncode != 0:
        return f"the {name} hook failed (exit {proc.returncode}): {_last_line(err)}"
    return None


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Kill a hook and its process group, then reap it without waiting forever."""
    with contextlib.suppress(OSError):
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        proc.communicate(timeout=5)


def _hook(repo: _Repo, name: str) -> Path | None:
    """The repository's executable hook `name`, or None (always None in the shadow)."""
    if repo.shadow:
        return None
    # The one lookup that sees the repository's own core.hooksPath: the user
    # turned this hook on, and it may live wherever the repository keeps hooks.
    raw = repo.run("rev-parse", "--git-path", "hooks", repository_hooks=True).stdout
    hooks = Path(_decode(raw).strip())
    path = (hooks if hooks.is_absolute() else repo.toplevel / hooks) / name
    if path.is_file() and os.access(path, os.X_OK):
        return path
    return None


def run_post_commit_hook(repo: _Repo) -> str | None:
    """Run the post-commit hook if there is one; a notice on trouble, never raises."""
    try:
        hook = _hook(repo, "post-commit")
    except (GitCommandError, OSError):
        return None
    if hook is None:
        return None
    # The user's own script, run as git would: none of tether's overrides.
    return _run_hook(hook, cwd=repo.toplevel, env=base_git_env())
