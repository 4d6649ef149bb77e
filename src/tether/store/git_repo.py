"""One repository, real or shadow, and the plumbing run against it.

Every command starts through `git_guard.hardened_git`, so nothing the repository
configures runs; a failure, a timeout or a missing git becomes a `GitCommandError`
whose message is fit to show the user.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.host import GitConfigError, HardenedGit, atomic_write_text, hardened_git, make_parents

AI_TRAILER = "Tether-Ai-Commit"
GIT_TIMEOUT = 60.0
_TRAILER_RE = re.compile(rf"^{AI_TRAILER}:[ \t]*(\S+)[ \t]*$", re.MULTILINE)
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

    def stage_changes(self, index: Path | None, under: Sequence[str] = ()) -> None:
        """What `git add -A -- under` would record (in `index`, None: the real index),
        without looking inside submodules.

        `git add -A` asks every submodule whether it is dirty by starting a git
        there, which reads the submodule's own config (and its filters). Listing
        the changed files and adding exactly those never does, and a submodule
        (a directory in the list) is left as the index has it.
        """
        spec = ["--", *under]
        changed = self.run(
            "ls-files",
            "-z",
            "--modified",
            "--deleted",
            "--others",
            "--exclude-standard",
            *spec,
            index=index,
        ).stdout
        paths = [
            p
            for p in dict.fromkeys(_split_z(changed))
            if not p.endswith("/") and not (self.toplevel / p).is_dir()
        ]
        if paths:
            names = b"".join(os.fsencode(p) + b"\0" for p in paths)
            self.run(
                "add",
                "-A",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                index=index,
                stdin=names,
            )

    def commit_tree(self, tree: str, parent: str | None, message: str) -> str:
        args = [*_identity_args(self), "commit-tree", "--no-gpg-sign", tree]
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


def _identity_args(repo: _Repo) -> list[str]:
    """A fallback identity only for what the user has not configured."""
    args: list[str] = []
    for key, default, env_vars in (
        ("user.name", "tether", ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")),
        ("user.email", "tether@localhost", ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")),
    ):
        if all(os.environ.get(var) for var in env_vars):
            continue
        if repo.run("config", "--get", key, ok=(0, 1)).stdout.strip():
            continue
        args += ["-c", f"{key}={default}"]
    return args


def find_repo(root: Path, shadow: Path, *, create: bool) -> _Repo | None:
    """The repository `root` is in, else its shadow at `shadow` (made when `create`)."""
    root = root.resolve()
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
    if not (shadow / "HEAD").exists():
        if not create:
            return None
        _init_shadow(shadow, root)
    location = (f"--git-dir={shadow}", f"--work-tree={root}")
    return _Repo(root, shadow, shadow=True, hardened=_hardened(root, location))


def _init_shadow(shadow: Path, root: Path) -> None:
    # the snapshots are copies of the project's files: their folder is owner-only
    make_parents(shadow, private=True)
    hardened = _hardened(shadow.parent)
    # --template=: none of the user's template hooks or config in tether's own repository.
    proc = _spawn(
        hardened.argv("init", "-q", "--bare", "--template=", str(shadow)),
        cwd=shadow.parent,
        env=hardened.env(),
    )
    if proc.returncode != 0:
        raise GitCommandError(f"could not create the shadow repository: {_last_line(proc.stderr)}")
    # Tells a person browsing TETHER_HOME which folder this history belongs to.
    atomic_write_text(shadow / "tether-root", f"{root}\n")
