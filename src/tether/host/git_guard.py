"""Git that runs nothing a repository configures, and the files that configure git.

A repository's own configuration (`.git/config`, the files it includes, and the
`.gitattributes` that attach drivers to paths) can name programs that git then
runs by itself: clean/smudge filters, textconv and external diff drivers,
merge drivers, hooks, fsmonitor, a pager, an editor, credential helpers, ssh
commands, gpg programs. tether runs git on its own (git_status, git_diff, the
auto-commit's plumbing, undo, the shadow repository, file completion, search),
so a hostile repository must not be able to run anything through it.

`hardened_git` is the one way tether starts git. It reads the names of every
filter, diff and merge driver, remote and protocol that the repository's own
configuration sets (`git config -z --list --show-scope`, which follows includes
and runs nothing; the local and worktree scopes, and files they include), and
overrides each one after every config file has been read:

* `filter.NAME.clean/smudge/process` set to "" (git then filters nothing) and
  `filter.NAME.required` to false (so an unfiltered file is not an error);
* `diff.NAME.command`, `diff.NAME.textconv`, `diff.external` and
  `merge.NAME.driver` set to "" (an empty program is never started; callers
  also pass --no-ext-diff / --no-textconv so diffs work);
* fixed settings for everything else (`NEUTRAL_CONFIG`): fsmonitor off,
  hooks looked up in os.devnull (a "directory" nothing can ever be created
  in), pager `cat` (and --no-pager), editors `:` (which git never starts),
  no credential helper or askpass, no ssh command, no gpg program or signing,
  no automatic gc, submodules never recursed into, every protocol refused.

The overrides travel in `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`
rather than `-c`, because `-c` splits `key=value` at the first `=` and a
subsection name may contain one; git reads them after every config file, and
they are appended after any the user set the same way. A `core.worktree` the
repository sets is refused unless it names the folder holding the `.git` git was
found through (see `refuse_foreign_worktree`). The environment also
loses the user's GIT_SSH*, GIT_EXTERNAL_DIFF and askpass programs, sets
GIT_ALLOW_PROTOCOL to nothing (no transport at all: no lazy fetch, no
remote-helper, whatever `protocol.NAME.allow` says) and GIT_TERMINAL_PROMPT=0.

`writes_git_files` says whether a file tool's write would land in git's own
files (`.git/config`, hooks, `info/attributes`, a `.git` gitdir file, a
worktree's or a separate git dir): the approval policy always asks before
such a write, whatever the rules or --auto say.

Drivers defined only in the user's own global or system config (Git LFS, for
instance) are the user's programs and keep working: a repository can attach
one to its files with `.gitattributes`, as it can for plain git, but it cannot
define or redefine one, since any name its config sets is overridden. (Diffs
pass --no-ext-diff and --no-textconv whatever the scope.)

What this does not cover: a git command the user or the model runs through
run_cmd (an allow rule for `run_cmd(git status)` runs git with the
repository's configuration as it is); a child git that git itself starts in a
submodule reads that submodule's own config (tether's calls avoid those: see
`git_ops`); and the repository's config could change between the reading and
the run, which only something that can already write `.git/` can do.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .filereads import read_file_bytes
from .host_programs import host_program

REPO_ENV_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
)
"""Variables that would point git at some other repository, index or work tree."""

PROGRAM_ENV_VARS = (
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "SSH_ASKPASS",
)
"""Programs the environment may name; tether's git has no use for any of them."""

HOOKS_PATH = "core.hooksPath"
NO_HOOKS = os.devnull
"""Where hooks are looked up: `/dev/null/<hook>` can never exist."""

NEUTRAL_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    (HOOKS_PATH, NO_HOOKS),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("credential.helper", ""),  # an empty helper empties the list read so far
    ("core.sshCommand", ""),
    ("core.alternateRefsCommand", ""),
    ("diff.external", ""),
    ("diff.ignoreSubmodules", "dirty"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", ""),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.allow", "never"),
)
"""Settings that name a program or start one, forced off for every git tether runs."""

NEUTRAL_ENV: tuple[tuple[str, str], ...] = (
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_ASKPASS", ""),  # set but empty: git neither asks core.askPass nor SSH_ASKPASS
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", ":"),
    ("GIT_SEQUENCE_EDITOR", ":"),
    ("GIT_ALLOW_PROTOCOL", ""),  # an allow-list naming no protocol refuses every transport
    ("GIT_NO_LAZY_FETCH", "1"),
)

_PER_NAME: dict[str, tuple[tuple[str, str], ...]] = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("command", ""), ("textconv", "")),
    "merge": (("driver", ""),),
    "remote": (("uploadpack", ""), ("receivepack", ""), ("vcs", "")),
    "protocol": (("allow", "never"),),
    "gpg": (("program", ""),),
}
"""For each section whose subsections name something that can run a program, the
settings that turn every such NAME off."""
_ALWAYS_NAMED = {"protocol": ("ext", "file", "git", "ssh", "http", "https"), "gpg": ("openpgp", "x509", "ssh")}
"""Names overridden even when no config mentions them (git knows them anyway)."""

CONFIG_TIMEOUT = 20.0
MAX_POINTER_BYTES = 64 * 1024
"""A `.git` or `commondir` file holds one path; anything larger is not one."""


class GitConfigError(Exception):
    """The repository's configuration could not be read, so git is not run there."""


@dataclass(frozen=True)
class HardenedGit:
    """How to start git for one repository so that nothing it configures runs."""

    git: str
    location: tuple[str, ...]
    """Global options that pick the repository (`--git-dir`, `--work-tree`, `-C`)."""
    overrides: tuple[tuple[str, str], ...]

    def argv(self, *args: str) -> list[str]:
        return [self.git, "--no-pager", *self.location, *args]

    def env(self, *, repository_hooks: bool = False) -> dict[str, str]:
        """The environment for the process; `repository_hooks` leaves core.hooksPath as
        the repository set it (only for finding the post-commit hook the user turned on)."""
        env = base_git_env()
        for name in PROGRAM_ENV_VARS:
            env.pop(name, None)
        env.update(NEUTRAL_ENV)
        env["GIT_LITERAL_PATHSPECS"] = "1"  # a file named `*.py` means that file only
        pairs = [p for p in self.overrides if not (repository_hooks and p[0] == HOOKS_PATH)]
        append_config(env, pairs)
        return env


def base_git_env() -> dict[str, str]:
    """The user's environment minus anything that points git at another repository."""
    return {k: v for k, v in os.environ.items() if k not in REPO_ENV_VARS}


def hardened_git(
    cwd: Path | None, *, location: Sequence[str] = (), git: str | None = None
) -> HardenedGit:
    """The one builder of every git invocation tether makes.

    Reads the configuration git would use when run in `cwd` with `location`,
    and overrides every program it names. Raises GitConfigError when git is
    missing or the configuration cannot be read (git would refuse it too).
    """
    binary = git or host_program("git", Path(cwd or os.getcwd()))
    if binary is None:
        raise GitConfigError("git is not installed (not found on PATH)")
    names = configured_names(binary, cwd, tuple(location))
    hardened = HardenedGit(binary, tuple(location), (*NEUTRAL_CONFIG, *name_overrides(names)))
    if WORKTREE_KEY in (name.lower() for name in names):
        refuse_foreign_worktree(hardened, Path(cwd or os.getcwd()))
    return hardened


WORKTREE_KEY = "core.worktree"


def refuse_foreign_worktree(git: HardenedGit, cwd: Path) -> None:
    """Raise GitConfigError when the repository's `core.worktree` points git at another
    folder than the one holding the `.git` it was found through.

    A hostile repository can set it to a folder above the project (the home folder,
    with TETHER_HOME in it) and list `.tether/credentials.json` in its index: `git diff`
    would then print the keys, and undo would write files there. A submodule's own
    setting, which names the folder holding its `.git` file, is left alone; so is an
    explicit `--work-tree` (the shadow repository)."""
    if any(arg.startswith("--work-tree") for arg in git.location):
        return
    try:
        proc = subprocess.run(
            git.argv("rev-parse", "--show-toplevel"), cwd=cwd, env=git.env(),
            stdin=subprocess.DEVNULL, capture_output=True, timeout=CONFIG_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitConfigError(f"could not check {WORKTREE_KEY}: {exc}") from exc
    toplevel = os.fsdecode(proc.stdout).strip()
    holder = _holder_of_dot_git(cwd)
    if proc.returncode != 0 or holder is None or os.path.realpath(toplevel) != os.path.realpath(holder):
        raise GitConfigError(
            f"the repository's config sets {WORKTREE_KEY}, which points git at "
            f"{toplevel or 'another folder'} instead of the folder holding its .git; tether "
            "runs no git there (remove the setting to use git in this folder)"
        )


def _holder_of_dot_git(start: Path) -> Path | None:
    """The nearest folder from `start` upward that holds a `.git` (directory or file)."""
    here = Path(os.path.abspath(start))
    for folder in (here, *here.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


USER_SCOPES = frozenset({"system", "global", "command"})
"""Config scopes that are the user's, not the repository's."""


def configured_names(git: str, cwd: Path | None, location: tuple[str, ...]) -> list[str]:
    """Every config key the repository at `cwd` sets itself (any scope but the user's),
    includes followed; runs nothing."""
    env = base_git_env()
    env.update(NEUTRAL_ENV)
    try:
        proc = subprocess.run(
            [git, "--no-pager", *location, "config", "-z", "--list", "--show-scope"],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=CONFIG_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitConfigError("reading the git configuration timed out") from exc
    except OSError as exc:
        raise GitConfigError(f"could not run git: {exc.strerror or exc}") from exc
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"exit {proc.returncode}"
        raise GitConfigError(f"the git configuration could not be read: {why}")
    # Records come in pairs: the scope, then "key\nvalue" (or "key" alone).
    fields = proc.stdout.split(b"\0")
    pairs = zip(fields[0::2], fields[1::2], strict=False)  # the last field is empty
    return [
        os.fsdecode(entry.split(b"\n", 1)[0])
        for scope, entry in pairs
        if os.fsdecode(scope) not in USER_SCOPES
    ]


def name_overrides(keys: Sequence[str]) -> list[tuple[str, str]]:
    """The overrides for every driver, remote, protocol or gpg format the keys name."""
    named: dict[str, dict[str, None]] = {s: dict.fromkeys(_ALWAYS_NAMED.get(s, ())) for s in _PER_NAME}
    for key in keys:
        section, dot, rest = key.partition(".")
        subsection, dot2, _variable = rest.rpartition(".")
        section = section.lower()
        if dot and dot2 and subsection and section in named:
            named[section][subsection] = None
    return [
        (f"{section}.{name}.{variable}", value)
        for section, names in named.items()
        for name in names
        for variable, value in _PER_NAME[section]
    ]


def append_config(env: dict[str, str], pairs: Sequence[tuple[str, str]]) -> None:
    """Add config entries after any the user already set through GIT_CONFIG_COUNT."""
    try:
        count = max(int(env.get("GIT_CONFIG_COUNT", "0")), 0)
    except ValueError:  # git itself refuses a bogus count, so there is nothing to keep
        count = 0
    for key, value in pairs:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)


def run_hardened(
    cwd: Path,
    *args: str,
    timeout: float,
    extra_env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run one hardened git command in `cwd` (stdin closed, output captured).

    Raises GitConfigError, OSError or subprocess.TimeoutExpired like subprocess.run."""
    git = hardened_git(cwd)
    env = git.env()
    env.update(extra_env or {})
    return subprocess.run(
        git.argv(*args), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, timeout=timeout,
    )


# --- git's own files -------------------------------------------------------------


def writes_git_files(root: Path, path: str) -> bool:
    """Whether `path` (relative to `root`, or absolute) is git's own file or lies in a git dir.

    Judged on the path as written (normalized) and as the kernel resolves it, so
    neither a symlink nor `..` hides `.git/hooks`: a `.git` component, a directory
    shaped like a git dir (HEAD and objects or commondir), or the git dir a
    `.git` file of the project points to.
    """
    try:
        candidate = Path(os.path.expanduser(path))
        full = candidate if candidate.is_absolute() else Path(root) / candidate
        forms = {Path(os.path.normpath(os.path.abspath(full))), Path(os.path.realpath(full))}
        git_dirs = [Path(os.path.realpath(d)) for d in linked_git_dirs(Path(root))]
        return any(
            _names_git(form) or any(_is_under(form, d) for d in git_dirs) for form in forms
        )
    except (ValueError, OSError):  # a path the OS cannot represent: the careful answer
        return True


def _names_git(path: Path) -> bool:
    if any(part.lower() == ".git" for part in path.parts):
        return True
    return any(_looks_like_git_dir(folder) for folder in path.parents)


def _looks_like_git_dir(folder: Path) -> bool:
    if not (folder / "HEAD").is_file():
        return False
    return (folder / "objects").is_dir() or (folder / "commondir").is_file()


def _is_under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def linked_git_dirs(root: Path) -> list[Path]:
    """Git dirs that `.git` files from `root` upward point to (worktrees, separate git dirs)."""
    found: list[Path] = []
    for folder in (Path(os.path.abspath(root)), *Path(os.path.abspath(root)).parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            break
        if not dot_git.is_file():
            continue
        target = _gitdir_of(dot_git)
        if target is not None:
            found.append(target)
            common = _gitdir_of(target / "commondir", prefix="")
            if common is not None:
                found.append(common)
        break
    return found


def _gitdir_of(pointer: Path, prefix: str = "gitdir:") -> Path | None:
    """The directory a `.git` file (`gitdir: X`) or a `commondir` file names, if readable."""
    try:
        raw = read_file_bytes(pointer, MAX_POINTER_BYTES)  # a FIFO `.git` must not hang
    except OSError:
        return None
    text = raw.decode("utf-8", errors="surrogateescape").strip()
    if not text.startswith(prefix):
        return None
    named = Path(text[len(prefix):].strip())
    return named if named.is_absolute() else pointer.parent / named
