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
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tether.safety.git_guard import GitConfigError, HardenedGit, base_git_env, hardened_git
from tether.store.atomic import atomic_write_text

AI_TRAILER = "Tether-Ai-Commit"
GIT_TIMEOUT = 60.0
DIFF_UNAVAILABLE = "[diff unavailable"
"""How `GitOps.diff_since` starts its answer when it cannot make a diff."""
HOOK_TIMEOUT = 30.0
_SUBJECT_PATHS = 5
_TRAILER_RE = re.compile(rf"^{AI_TRAILER}:[ \t]*(\S+)[ \t]*$", re.MULTILINE)
_TOOL_RE = re.compile(r"^ai\(([^)]*)\):")
_IN_PROGRESS = {
    "MERGE_HEAD": "a merge",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase",
    "BISECT_LOG": "a bisect",
}
_DIRECTORY = ("040000", "")
"""Stands for "a directory is here now" when comparing working-tree entries."""

Entry = tuple[str, str]
"""A file as git records it: (mode, object id)."""


@dataclass
class AiCommit:
    sha: str
    tool: str
    paths: list[str]
    message: str
    when: float


@dataclass
class UndoResult:
    ok: bool
    message: str
    paths: list[str] = field(default_factory=list)


class GitCommandError(Exception):
    """A git command failed; the message is fit to show the user."""


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _split_z(raw: bytes) -> list[str]:
    return [_decode(item) for item in raw.split(b"\0") if item]


@dataclass(frozen=True)
class _CommitInfo:
    sha: str
    parents: list[str]
    when: float
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0].strip()

    @property
    def kind(self) -> str | None:
        """`ai` for an assistant's change, `pre` for a pre-edit snapshot, None for the user's."""
        match = _TRAILER_RE.search(self.message)
        if match is None:
            return None
        if match.group(1) == "1" and self.subject.startswith("ai("):
            return "ai"
        if match.group(1) == "pre" and self.subject.startswith("ai-pre("):
            return "pre"
        return None

    @property
    def parent(self) -> str | None:
        return self.parents[0] if self.parents else None


@dataclass(frozen=True)
class _Repo:
    """One repository (real or shadow) and the plumbing commands run against it."""

    toplevel: Path
    git_dir: Path
    shadow: bool
    hardened: HardenedGit
    """Every git command below starts through it: nothing the repository configures runs."""

    # -- running git ---------------------------------------------------------

    def run(
        self,
        *args: str,
        index: Path | None = None,
        stdin: bytes | None = None,
        ok: tuple[int, ...] = (0,),
        literal: bool = True,
        repository_hooks: bool = False,
    ) -> subprocess.CompletedProcess[bytes]:
        cmd = self.hardened.argv("-c", "core.quotepath=off", *args)
        env = self.hardened.env(repository_hooks=repository_hooks)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        if not literal:
            env.pop("GIT_LITERAL_PATHSPECS")
        proc = _spawn(cmd, cwd=self.toplevel, env=env, stdin=stdin)
        if proc.returncode not in ok:
            raise GitCommandError(f"git {_verb(args)} failed: {_last_line(proc.stderr)}")
        return proc

    def out(self, *args: str, index: Path | None = None, stdin: bytes | None = None) -> str:
        return _decode(self.run(*args, index=index, stdin=stdin).stdout).strip()

    @contextlib.contextmanager
    def temp_index(self, rev: str | None = None) -> Iterator[Path]:
        """A private index file (optionally loaded from `rev`), removed afterwards."""
        with tempfile.TemporaryDirectory(prefix="tether-index-") as tmp:
            index = Path(tmp) / "index"
            if rev is not None:
                self.run("read-tree", rev, index=index)
            yield index

    # -- reading -------------------------------------------------------------

    def head(self) -> str | None:
        proc = self.run("rev-parse", "-q", "--verify", "HEAD^{commit}", ok=(0, 1, 128))
        sha = _decode(proc.stdout).strip()
        return sha if proc.returncode == 0 and sha else None

    def empty_tree(self) -> str:
        return self.out("hash-object", "-t", "tree", "--stdin", stdin=b"")

    def tree_of(self, rev: str | None) -> str:
        return self.out("rev-parse", f"{rev}^{{tree}}") if rev else self.empty_tree()

    def in_progress(self) -> str | None:
        """The name of an operation (merge, rebase...) that a commit would disturb."""
        for name, what in _IN_PROGRESS.items():
            if (self.git_dir / name).exists():
                return what
        return None

    def commit_info(self, sha: str) -> _CommitInfo:
        raw = _decode(self.run("cat-file", "commit", sha).stdout)
        header, _, message = raw.partition("\n\n")
        parents = [line.split()[1] for line in header.splitlines() if line.startswith("parent ")]
        when = 0.0
        for line in header.splitlines():
            if line.startswith("committer "):
                with contextlib.suppress(ValueError, IndexError):
                    when = float(line.split()[-2])
        return _CommitInfo(sha=sha, parents=parents, when=when, message=message)

    def tree_entries(self, rev: str | None, paths: Sequence[str]) -> dict[str, Entry]:
        if rev is None or not paths:
            return {}
        raw = self.run("ls-tree", "-r", "-z", rev, "--", *paths).stdout
        wanted = set(paths)
        entries: dict[str, Entry] = {}
        for item in _split_z(raw):
            meta, _, path = item.partition("\t")
            mode, _kind, sha = meta.split()
            if path in wanted:
                entries[path] = (mode, sha)
        return entries

    def changed_paths(self, old: str | None, new: str) -> list[str]:
        raw = self.run(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", self.tree_of(old), new
        ).stdout
        return _split_z(raw)

    def ignored(self, paths: Sequence[str]) -> set[str]:
        if not paths:
            return set()
        names = b"".join(os.fsencode(path) + b"\0" for path in paths)
        # check-ignore reads plain path names and rejects pathspec magic.
        proc = self.run("check-ignore", "-z", "--stdin", stdin=names, ok=(0, 1), literal=False)
        return set(_split_z(proc.stdout))

    def staged(self, head: str | None, paths: Sequence[str]) -> set[str]:
        """Paths whose entry in the real index differs from `head`: the user's staged work."""
        if not paths:
            return set()
        if head is None:
            return set(_split_z(self.run("ls-files", "-z", "--", *paths).stdout))
        raw = self.run("diff-index", "--cached", "--name-only", "-z", head, "--", *paths).stdout
        return set(_split_z(raw))

    def worktree_entries(
        self, paths: Sequence[str], reference: str | None
    ) -> dict[str, Entry | None]:
        """What each path would be recorded as now (None: absent), via a private index.

        The index is seeded from `reference` so that, where the filesystem cannot
        be trusted for the executable bit, the recorded mode is kept as git would.
        """
        result: dict[str, Entry | None] = {}
        files: list[str] = []
        for path in paths:
            full = self.toplevel / path
            if full.is_dir() and not full.is_symlink():
                result[path] = _DIRECTORY
            elif os.path.lexists(full):
                files.append(path)
            else:
                result[path] = None
        if files:
            with self.temp_index() as index:
                self.set_entries(index, self.tree_entries(reference, files))
                self.run("add", "-f", "--", *files, index=index)
                raw = self.run("ls-files", "-s", "-z", "--", *files, index=index).stdout
            recorded = {}
            for item in _split_z(raw):
                meta, _, path = item.partition("\t")
                mode, sha, _stage = meta.split()
                recorded[path] = (mode, sha)
            for path in files:
                result[path] = recorded.get(path)
        return result

    # -- writing -------------------------------------------------------------

    def set_entries(self, index: Path, entries: Mapping[str, Entry | None]) -> None:
        """Put exact entries into a private index; None removes the path."""
        present = b"".join(
            f"{mode} {sha}\t".encode() + os.fsencode(path) + b"\0"
            for path, entry in entries.items()
            if entry is not None
            for mode, sha in [entry]
        )
        absent = [path for path, entry in entries.items() if entry is None]
        if present:
            self.run("update-index", "-z", "--index-info", index=index, stdin=present)
        if absent:
            self.run("update-index", "--force-remove", "--", *absent, index=index)

    def stage_worktree(self, index: Path, paths: Sequence[str]) -> None:
        """Record the working-tree state of `paths` (including deletions) in `index`."""
        files, dirs, missing = [], [], []
        for path in paths:
            full = self.toplevel / path
            if full.is_dir() and not full.is_symlink():
                dirs.append(path)
            elif os.path.lexists(full):
                files.append(path)
            else:
                missing.append(path)
        # The caller already filtered ignored paths; -f covers a file the user
        # staged but that is not in HEAD. A directory keeps the ignore rules.
        if files:
            self.run("add", "-f", "--", *files, index=index)
        if dirs:
            self.stage_changes(index, dirs)
        if missing:
            self.run("update-index", "--force-remove", "--", *missing, index=index)

    def stage_changes(self, index: Path, under: Sequence[str] = ()) -> None:
        """What `git add -A -- under` would record, without looking inside submodules.

        `git add -A` asks every submodule whether it is dirty by starting a git
        there, which reads the submodule's own config (and its filters). Listing
        the changed files and adding exactly those never does, and a submodule
        (a directory in the list) is left as the index has it.
        """
        spec = ["--", *under]
        changed = self.run(
            "ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard", *spec,
            index=index,
        ).stdout
        paths = [
            p for p in dict.fromkeys(_split_z(changed))
            if not p.endswith("/") and not (self.toplevel / p).is_dir()
        ]
        if paths:
            names = b"".join(os.fsencode(p) + b"\0" for p in paths)
            self.run(
                "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul",
                index=index, stdin=names,
            )

    def commit_tree(self, tree: str, parent: str | None, message: str) -> str:
        args = [*self._identity_args(), "commit-tree", "--no-gpg-sign", tree]
        if parent:
            args += ["-p", parent]
        # --no-gpg-sign: a pinentry prompt in the middle of a tool call would
        # hang it; these are local checkpoints, not the user's own commits.
        return self.out(*args, "-F", "-", stdin=message.encode("utf-8"))

    def move_head(self, new: str | None, old: str | None, reason: str) -> None:
        """Compare-and-swap HEAD from `old` to `new` (None: no commit)."""
        if new is None:
            self.run("update-ref", "-m", reason, "-d", "HEAD", old or "")
        else:
            self.run("update-ref", "-m", reason, "HEAD", new, old or "")

    def set_index_to(self, rev: str | None, paths: Sequence[str]) -> None:
        """Make the real index entries of `paths` match `rev`, leaving all others alone."""
        if not paths:
            return
        if rev is None:
            self.run("update-index", "--force-remove", "--", *paths)
        else:
            self.run("reset", "-q", rev, "--", *paths)

    def checkout(self, entries: dict[str, Entry]) -> None:
        """Write exact file contents into the working tree without touching the real index."""
        if not entries:
            return
        with self.temp_index() as index:
            self.set_entries(index, dict(entries))
            self.run("checkout-index", "-f", "--", *entries, index=index)

    def remove_files(self, paths: Sequence[str]) -> None:
        for path in paths:
            full = self.toplevel / path
            if os.path.lexists(full):
                full.unlink()
            _prune_empty_dirs(full.parent, self.toplevel)

    def hook(self, name: str) -> Path | None:
        """The repository's executable hook `name`, or None (always None in the shadow)."""
        if self.shadow:
            return None
        # The one lookup that sees the repository's own core.hooksPath: the user
        # turned this hook on, and it may live wherever the repository keeps hooks.
        raw = self.run("rev-parse", "--git-path", "hooks", repository_hooks=True).stdout
        hooks = Path(_decode(raw).strip())
        path = (hooks if hooks.is_absolute() else self.toplevel / hooks) / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
        return None

    def run_post_commit_hook(self) -> str | None:
        """Run the post-commit hook if there is one; a notice on trouble, never raises."""
        try:
            hook = self.hook("post-commit")
        except (GitCommandError, OSError):
            return None
        if hook is None:
            return None
        # The user's own script, run as git would: none of tether's overrides.
        return _run_hook(hook, cwd=self.toplevel, env=base_git_env())

    def _identity_args(self) -> list[str]:
        """A fallback identity only for what the user has not configured."""
        args: list[str] = []
        for key, default, env_vars in (
            ("user.name", "tether", ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")),
            ("user.email", "tether@localhost", ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")),
        ):
            if all(os.environ.get(var) for var in env_vars):
                continue
            if self.run("config", "--get", key, ok=(0, 1)).stdout.strip():
                continue
            args += ["-c", f"{key}={default}"]
        return args


def _spawn(
    cmd: list[str], *, cwd: Path | None, env: dict[str, str], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run git once; a timeout or a missing binary becomes a GitCommandError."""
    try:
        return subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitCommandError(f"git {_verb(cmd[1:])} timed out after {GIT_TIMEOUT:.0f}s") from exc
    except OSError as exc:
        raise GitCommandError(f"could not run git: {exc.strerror or exc}") from exc


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


def _hardened(cwd: Path, location: Sequence[str] = ()) -> HardenedGit:
    try:
        return hardened_git(cwd, location=location)
    except GitConfigError as exc:
        raise GitCommandError(str(exc)) from exc


def _verb(args: Sequence[str]) -> str:
    """The git subcommand among the arguments, for error messages."""
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg == "-c":
            skip_next = True
        elif not arg.startswith("-"):
            return arg
    return "command"


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in _decode(stderr).splitlines() if line.strip()]
    return lines[-1] if lines else "no error message"


def _prune_empty_dirs(directory: Path, stop: Path) -> None:
    """Remove directories left empty by undoing a created file, up to the root."""
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _subject(prefix: str, tool: str, paths: Sequence[str]) -> str:
    tool = re.sub(r"[()\s]+", "_", tool.strip()) or "tool"
    shown = ", ".join(paths[:_SUBJECT_PATHS])
    if len(paths) > _SUBJECT_PATHS:
        shown += f" and {len(paths) - _SUBJECT_PATHS} more"
    return f"{prefix}({tool}): {shown}"


def _message(prefix: str, tool: str, paths: Sequence[str], trailer: str) -> str:
    return f"{_subject(prefix, tool, paths)}\n\n{AI_TRAILER}: {trailer}\n"


def _names(paths: Sequence[str]) -> str:
    return ", ".join(paths)


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
            repo = self._repo(create=True)
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
                return self._undo()
        except (GitCommandError, OSError) as exc:
            return UndoResult(False, f"Undo failed: {exc}")

    def recent(self, n: int = 10) -> list[AiCommit]:
        """The AI commits reachable from HEAD, newest first, up to the first user commit."""
        if n <= 0 or not self.available():
            return []
        try:
            with self._lock:
                repo = self._repo(create=False)
                return self._recent(repo, n) if repo else []
        except (GitCommandError, OSError):
            return []

    def diff_since(self, rev: str | None) -> str:
        """The working tree against `rev` (None: against nothing, i.e. every file is new)."""
        if not self.available():
            return f"{DIFF_UNAVAILABLE}: git is not installed]"
        try:
            with self._lock:
                repo = self._repo(create=False)
                return self._diff_since(repo, rev) if repo else ""
        except (GitCommandError, OSError) as exc:
            return f"{DIFF_UNAVAILABLE}: {exc}]"

    def head(self) -> str | None:
        """The current commit (of the shadow repository outside git), or None."""
        if not self.available():
            return None
        try:
            repo = self._repo(create=False)
            return repo.head() if repo else None
        except (GitCommandError, OSError):
            return None

    # -- finding the repository ----------------------------------------------

    def _repo(self, *, create: bool) -> _Repo | None:
        """The project's own repository, else its shadow (made when `create`)."""
        root = self.root.resolve()
        hardened = _hardened(root)
        proc = _spawn(
            hardened.argv("rev-parse", "--show-toplevel", "--absolute-git-dir"),
            cwd=root,
            env=hardened.env(),
        )
        lines = _decode(proc.stdout).splitlines()
        if proc.returncode == 0 and len(lines) == 2:
            toplevel, git_dir = Path(lines[0]).resolve(), Path(lines[1]).resolve()
            return _Repo(toplevel, git_dir, shadow=False, hardened=hardened)
        shadow = self.shadow_dir
        if not (shadow / "HEAD").exists():
            if not create:
                return None
            self._init_shadow(shadow, root)
        location = (f"--git-dir={shadow}", f"--work-tree={root}")
        return _Repo(root, shadow, shadow=True, hardened=_hardened(root, location))

    def _init_shadow(self, shadow: Path, root: Path) -> None:
        shadow.parent.mkdir(parents=True, exist_ok=True)
        hardened = _hardened(shadow.parent)
        # --template=: none of the user's template hooks or config in tether's own repository.
        proc = _spawn(
            hardened.argv("init", "-q", "--bare", "--template=", str(shadow)),
            cwd=shadow.parent,
            env=hardened.env(),
        )
        if proc.returncode != 0:
            raise GitCommandError(
                f"could not create the shadow repository: {_last_line(proc.stderr)}"
            )
        # Tells a person browsing TETHER_HOME which folder this history belongs to.
        atomic_write_text(shadow / "tether-root", f"{root}\n")

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
        repo = self._repo(create=True)
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
        hook_notice = repo.run_post_commit_hook() if self.post_commit_hook else None
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

    # -- undoing -------------------------------------------------------------

    def _undo(self) -> UndoResult:
        repo = self._repo(create=False)
        head = repo.head() if repo else None
        if repo is None or head is None:
            return UndoResult(
                False, "Nothing to undo: the assistant has not changed any files here."
            )
        busy = repo.in_progress()
        if busy:
            return UndoResult(False, f"Not undone: {busy} is in progress in this repository.")
        info = repo.commit_info(head)
        if info.kind != "ai":
            return UndoResult(False, self._not_ours_message(repo, info))
        restore_rev, base = self._undo_targets(repo, info)
        paths = sorted(
            set(repo.changed_paths(restore_rev, head))
            | set(self._pre_paths(repo, restore_rev, base))
        )
        changed = self._changed_since(repo, head, paths)
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
        self._restore_worktree(repo, restore_rev, paths)
        repo.set_index_to(base, [p for p in paths if p not in users_staged])
        return UndoResult(True, f"Undid {info.subject}", paths)

    def _not_ours_message(self, repo: _Repo, info: _CommitInfo) -> str:
        if repo.shadow:
            return "Nothing to undo: the newest checkpoint is not one of the assistant's changes."
        return (
            f'Not undone: the newest commit ({info.sha[:8]} "{info.subject}") is yours, '
            "not the assistant's; undo only takes back the assistant's own commits."
        )

    def _undo_targets(self, repo: _Repo, info: _CommitInfo) -> tuple[str | None, str | None]:
        """(the revision whose content the files return to, the commit HEAD returns to)."""
        parent = info.parent
        if parent is not None:
            parent_info = repo.commit_info(parent)
            if parent_info.kind == "pre":
                return parent, parent_info.parent
        return parent, parent

    def _pre_paths(self, repo: _Repo, restore_rev: str | None, base: str | None) -> list[str]:
        if restore_rev is None or restore_rev == base:
            return []
        return repo.changed_paths(base, restore_rev)

    def _changed_since(self, repo: _Repo, head: str, paths: list[str]) -> list[str]:
        """Paths whose working-tree content no longer matches the AI commit."""
        committed = repo.tree_entries(head, paths)
        current = repo.worktree_entries(paths, head)
        return [p for p in paths if current[p] != committed.get(p)]

    def _restore_worktree(self, repo: _Repo, rev: str | None, paths: list[str]) -> None:
        targets = repo.tree_entries(rev, paths)
        repo.remove_files([p for p in paths if p not in targets])
        repo.checkout(targets)

    # -- reading history -----------------------------------------------------

    def _recent(self, repo: _Repo, n: int) -> list[AiCommit]:
        commits: list[AiCommit] = []
        sha = repo.head()
        while sha is not None and len(commits) < n:
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
        diff = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")
        if repo.shadow:
            # The shadow tracks only files the assistant touched; never the whole folder.
            return _decode(repo.run(*diff, base, "--").stdout)
        real_index = Path(repo.out("rev-parse", "--git-path", "index"))
        real_index = real_index if real_index.is_absolute() else repo.toplevel / real_index
        with repo.temp_index() as index:
            if real_index.exists():
                shutil.copyfile(real_index, index)
            # New files count as changes too, so stage everything into a private copy.
            repo.stage_changes(index)
            return _decode(repo.run(*diff, "--cached", base, "--", index=index).stdout)

    def _no_git_notice(self) -> str | None:
        if self._told_no_git:
            return None
        self._told_no_git = True
        return "git is not installed: the assistant's edits are not checkpointed and /undo is unavailable"
