"""How a stdio server is started: which program, in which folder, with which environment,
and whether inside the sandbox.

A project's own server (a trusted folder's `.mcp.json`, or an `--mcp-config` file in the
project, approved by the user) starts inside the sandbox commands run in, whenever that
sandbox works (`ServerSandbox`, the runtime's `safety.sandbox.Sandbox`): it may load any
file of the project, lazily, long after its approval, and sandboxed commands may write
anywhere in the project, so what they write must never run outside the sandbox. It keeps
the network (`Sandbox.launch(network=True)`). With the sandbox off (chosen, or `auto`
without bubblewrap) it runs as the user, as the user's own servers always do. A sandbox
chosen explicitly that cannot start keeps the project's servers from starting at all.

The user's own servers run as the user, outside the sandbox, while sandboxed commands may
write anywhere in the project. So nothing they load may come from the project:

- the program is looked up in PATH without its relative entries and without the entries
  inside the project (`host.host_programs`), and the server gets that PATH too, so
  what it starts in turn (`npx` starting `node`) is found the same way;
- the user's own servers (TETHER_HOME/mcp.json, `--mcp-config`) start in the user's home
  folder, not in the project: `python3 -m pkg` imports from its working directory and
  `npx pkg` prefers the working directory's `node_modules`, so a repository could
  otherwise put its own code in the place of the user's server. They learn the project
  through the roots the protocol gives them (or `${PWD}` in their entry);
- variables inherited from tether's environment that make an interpreter load code
  (PYTHONPATH, NODE_OPTIONS, LD_PRELOAD, ...) are dropped when they point into the
  project or to a relative place (which the working directory decides).

The entry's own `env` is kept as written (the user wrote it, or approved it), PATH aside;
inside the sandbox it comes on top of the variables the sandbox lets through
(`sandbox_environment`), and PATH is still the one `host_path` gives.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..host import host_path, is_within
from ..safety.shell_session import Launch as Started
from .config import ServerConfig
from .session import McpError
from .stdio import server_environment

LOADER_PATHS = frozenset({
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "NODE_PATH",
    "PERL5LIB", "PERLLIB", "RUBYLIB", "GEM_HOME", "GEM_PATH", "BUNDLE_GEMFILE",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH", "DYLD_FRAMEWORK_PATH", "CLASSPATH", "BASH_ENV", "ENV", "ZDOTDIR",
    "VIRTUAL_ENV", "CONDA_PREFIX", "UV_PROJECT_ENVIRONMENT", "GOPATH", "CARGO_HOME",
    "RUSTUP_HOME", "NPM_CONFIG_USERCONFIG", "NPM_CONFIG_GLOBALCONFIG", "NPM_CONFIG_PREFIX",
    "NPM_CONFIG_CACHE",
})
"""Variables holding paths (lists of them) an interpreter or the dynamic loader takes code,
packages or start-up files from. npm's are matched whatever their case, as npm reads them."""
LOADER_OPTIONS = frozenset({
    "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
})
"""Variables holding command-line options, some of which name code to load (`--require x`)."""
SPACE_SEPARATED = frozenset({"LD_PRELOAD"})
"""Path lists the loader also splits at spaces."""
OPTION_SPLIT = re.compile(r"[\s=]+")


class ServerSandbox(Protocol):
    """What the manager needs of the sandbox to start a project's server in it."""

    problem: str

    @property
    def confinement(self) -> str:
        """The mode programs really run in; "off" when nothing confines them."""

    def probe(self) -> str:
        """Find out whether the sandbox works (may start bwrap: call it from a thread)."""

    def insisted_on(self) -> bool:
        """True when a sandbox was chosen explicitly and cannot run."""

    def launch(
        self, argv: list[str], env: dict[str, str], *, network: bool = False,
        own_env: Mapping[str, str] | None = None,
    ) -> AbstractContextManager[Started]: ...


@dataclass(frozen=True)
class Launch:
    program: str
    """The program's absolute path (or the entry's own path to it, when it names one)."""
    cwd: Path
    env: dict[str, str]
    own: dict[str, str] = field(default_factory=dict)
    """The entry's own variables as they are in `env` (PATH aside): what a sandbox keeps
    on top of the variables it lets through."""


def server_launch(config: ServerConfig, root: Path, base_env: Mapping[str, str]) -> Launch:
    """How to start the stdio server `config`; McpError when its program is not found."""
    env = server_environment(without_project_loaders(base_env, root), config.env)
    env["PATH"] = os.pathsep.join(host_path(root, env.get("PATH", os.defpath)))
    cwd = working_directory(config, root, base_env)
    if "PWD" in env:  # what a shell takes for its folder: the one it really starts in
        env["PWD"] = str(cwd)
    own = {name: env[name] for name in config.env if name != "PATH"}
    return Launch(find_program(config.command, env["PATH"], root), cwd, env, own)


def working_directory(config: ServerConfig, root: Path, env: Mapping[str, str]) -> Path:
    """The project for the project's own servers (their relative paths are the project's);
    for the others the user's home, or `/` when the home is in the project."""
    if config.source == "project":
        return root
    project = os.path.realpath(root)
    for candidate in (env.get("HOME") or os.path.expanduser("~"), os.sep):
        if os.path.isabs(candidate) and os.path.isdir(candidate) \
                and not is_within(os.path.realpath(candidate), project):
            return Path(candidate)
    return Path(os.sep)


def find_program(command: str, path: str, root: Path) -> str:
    """A bare name looked up in `path` (already without the project); a path as written."""
    if os.sep in command:
        return command
    found = shutil.which(command, path=path)
    if found is None:
        raise McpError(f"{command!r} was not found on PATH (folders inside the project and "
                       f"relative PATH entries are not searched: {root})")
    return found


def without_project_loaders(env: Mapping[str, str], root: Path) -> dict[str, str]:
    """`env` without the loader variables that point into `root` or somewhere relative."""
    project = os.path.realpath(root)
    return {name: value for name, value in env.items()
            if not _points_into(name, value, project)}


def _points_into(name: str, value: str, project: str) -> bool:
    upper = name.upper()
    if upper in LOADER_PATHS:
        if not value:
            return False
        spaced = value.replace(" ", os.pathsep) if upper in SPACE_SEPARATED else value
        return any(_untrusted(entry, project) for entry in spaced.split(os.pathsep))
    if upper in LOADER_OPTIONS:
        words = OPTION_SPLIT.split(value)
        return any(_untrusted(word, project) for word in words
                   if "/" in word or word.startswith("."))
    return False


def _untrusted(entry: str, project: str) -> bool:
    """Relative (the working directory decides where; an empty entry is the working
    directory itself for PYTHONPATH and LD_LIBRARY_PATH), or inside the project."""
    if not os.path.isabs(entry):
        return True
    return is_within(os.path.realpath(entry), project)
