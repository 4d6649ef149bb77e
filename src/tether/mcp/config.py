"""MCP server entries: read from `.mcp.json`, `TETHER_HOME/mcp.json` and `--mcp-config` files.

The format is the one other tools use: `{"mcpServers": {"NAME": {...}}}` with a stdio
entry (`command`, `args`, `env`) or an HTTP one (`type` "http" or "sse", `url`,
`headers`), plus `disabled`, `timeout`, `autoApprove`, `trusted` and `roots`. `${VAR}`
and `${VAR:-default}` are expanded in command, args, env, url and headers; a variable
that is not set disables the server with an error naming it, so the literal text is
never sent anywhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from ..host import is_within, read_file_bytes, read_json_file, resolve_path
from ..safety.project_config import MCP_FILE

PROJECT_FILE = MCP_FILE
USER_FILE = "mcp.json"
MAX_SERVERS_FILE_BYTES = 1024 * 1024
"""A servers file bigger than this is refused (a real one is a few kilobytes)."""
Source = Literal["project", "user", "flag"]
Transport = Literal["stdio", "http", "sse"]
DEFAULT_START_TIMEOUT = 30.0
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class ServerConfig:
    """One server entry, expanded; `problem` says why it cannot start ("" when it can)."""

    name: str
    source: Source
    transport: Transport = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    disabled: bool = False
    timeout: float = DEFAULT_START_TIMEOUT
    auto_approve: frozenset[str] = frozenset()
    trusted: bool = False
    """Read-only tools (readOnlyHint) of this server run without asking."""
    roots: bool = True
    """Whether the server is told the project root when it asks (`roots/list`); false
    keeps a server that works in the roots it is given (server-filesystem) in its own."""
    raw: Mapping[str, Any] = field(default_factory=dict)
    """The entry as written (before expansion): what an approval is keyed by."""
    problem: str = ""
    approved_files: Mapping[str, str] | None = None
    """A project server's: the project files it runs as they were when approved
    (`entry_files`); it does not start once they differ. None for the others."""

    @property
    def fingerprint(self) -> str:
        """A hash of the entry as written: a changed entry needs a new approval."""
        text = json.dumps(self.raw, sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> str:
        """One line saying what starting it does (for an approval question)."""
        if self.transport == "stdio":
            return " ".join([self.command, *self.args])
        return f"{self.transport} {self.url}"


@dataclass
class LoadedServers:
    servers: list[ServerConfig] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Files that could not be read, entries that make no sense: one line each."""


def load_servers(
    root: Path, home: Path, extra: tuple[Path, ...], env: Mapping[str, str]
) -> LoadedServers:
    """Every server entry: personal ones, then the project's, then `--mcp-config` files (which
    win over both; one inside the project counts as the project's). A project entry never takes the name of a personal one: the server name is
    the prefix of its tools' names (`mcp__<name>__...`), so it would inherit every rule and
    hook you wrote for your own server's tools. It is left out with a problem saying so."""
    loaded = LoadedServers()
    by_name: dict[str, ServerConfig] = {}
    layers: list[tuple[Path, Source, bool]] = [
        (home / USER_FILE, "user", False), (root / PROJECT_FILE, "project", False)]
    layers += [(path, flag_source(path, root), True) for path in extra]
    for path, source, must_exist in layers:
        for config in read_servers_file(path, source, env, loaded.problems, must_exist=must_exist):
            mine = by_name.get(config.name)
            if source == "project" and mine is not None and mine.source != "project":
                loaded.problems.append(
                    f"MCP server {config.name!r} in {path} has the name of one of your own servers "
                    f"and is not used: rename it there to use it")
                continue
            by_name[config.name] = config
    loaded.servers = list(by_name.values())
    return loaded


def flag_source(path: Path, root: Path) -> Source:
    """An `--mcp-config` file is yours, unless it lies in the project (as the kernel resolves
    it): a command may rewrite a file there, and the next run would start what it wrote
    outside the sandbox. Such a file counts as the project's: trust and approval needed."""
    try:
        inside = is_within(resolve_path(str(path), os.getcwd()), resolve_path(str(root), "/"))
    except (OSError, ValueError):
        return "flag"
    return "project" if inside else "flag"


def read_servers_file(
    path: Path, source: Source, env: Mapping[str, str], problems: list[str], *, must_exist: bool
) -> list[ServerConfig]:
    file = read_json_file(path, reader=partial(read_file_bytes, limit=MAX_SERVERS_FILE_BYTES))
    if file.problem:
        problems.append(f"{file.problem}; its MCP servers are not used")
        return []
    if not file.exists:
        if must_exist:
            problems.append(f"--mcp-config: {path} does not exist")
        return []
    servers = file.data.get("mcpServers") if isinstance(file.data, dict) else None
    if not isinstance(servers, dict):
        problems.append(f"{path}: expected an object with \"mcpServers\"; its MCP servers are not used")
        return []
    return [parse_entry(str(name), entry, source, env, path) for name, entry in servers.items()]


def parse_entry(
    name: str, entry: Any, source: Source, env: Mapping[str, str], path: Path
) -> ServerConfig:
    """The entry as a ServerConfig; a bad one comes back with its `problem` set."""
    where = f"MCP server {name!r} in {path}"
    if not isinstance(entry, dict):
        return ServerConfig(name, source, problem=f"{where}: the entry must be an object")
    raw = dict(entry)
    try:
        fields = _entry_fields(entry, env)
    except EntryError as exc:
        return ServerConfig(name, source, raw=raw, problem=f"{where}: {exc}")
    return ServerConfig(name, source, raw=raw, **fields)


class EntryError(ValueError):
    """An entry that cannot be used; the message says which field and why."""


def _entry_fields(entry: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    kind = entry.get("type", "stdio" if "command" in entry else "http")
    if kind == "streamable-http" or kind == "streamableHttp":
        kind = "http"
    if kind not in ("stdio", "http", "sse"):
        raise EntryError(f"unknown type {kind!r} (stdio, http or sse)")
    disabled = entry.get("disabled", False)
    timeout = entry.get("timeout", DEFAULT_START_TIMEOUT)
    if not isinstance(disabled, bool):
        raise EntryError("\"disabled\" must be true or false")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise EntryError("\"timeout\" must be a positive number of seconds")
    if timeout > 1000:  # other tools write milliseconds here
        timeout = timeout / 1000
    fields: dict[str, Any] = {
        "transport": kind, "disabled": disabled, "timeout": float(timeout),
        "auto_approve": frozenset(_strings(entry, "autoApprove")),
        "trusted": entry.get("trusted") is True,
        "roots": entry.get("roots") is not False,
    }
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise EntryError("\"command\" must be a non-empty string")
        fields["command"] = expand(command, env, "command")
        fields["args"] = tuple(expand(a, env, "args") for a in _strings(entry, "args"))
        fields["env"] = _expanded_map(entry, "env", env)
    else:
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://", "${")):
            raise EntryError("\"url\" must be an http:// or https:// URL")
        fields["url"] = expand(url, env, "url")
        fields["headers"] = _expanded_map(entry, "headers", env)
    return fields


def _strings(entry: dict[str, Any], key: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EntryError(f"\"{key}\" must be a list of strings")
    return value


def _expanded_map(entry: dict[str, Any], key: str, env: Mapping[str, str]) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise EntryError(f"\"{key}\" must be an object of strings")
    return {str(k): expand(v, env, f"{key}.{k}") for k, v in value.items()}


def expand(text: str, env: Mapping[str, str], where: str) -> str:
    """`${VAR}` and `${VAR:-default}` replaced from `env`; an unset variable without a
    default raises EntryError naming it (the server is then not started)."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = env.get(name)
        if found is not None and (found or default is None):
            return found
        if default is not None:
            return default
        raise EntryError(f"the variable {name} (in {where}) is not set; the server is disabled")

    return VARIABLE.sub(value, text)
