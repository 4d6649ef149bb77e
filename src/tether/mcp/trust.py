"""Which MCP servers may start: a project's servers only in a trusted folder, each approved once.

A `.mcp.json` in a cloned repository is a list of programs to run on the user's machine,
so it gets the same suspicion as a project's allow rules: nothing of it starts until the
folder is trusted and the user approved that exact entry. Approvals are kept in
`TETHER_HOME/mcp-approvals.json`, keyed by the folder and the server's name, holding a hash
of the entry as written and the state of the project files it runs (`entry_files`): a
changed entry, or a changed file, asks again and says what changed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..host import StateFileError, read_file_bytes, read_json_file, write_json_state
from .config import ServerConfig
from .entry_files import changes, entry_files
from .tools import names_ruled_server, server_label

APPROVALS_FILE = "mcp-approvals.json"
MAX_APPROVALS_BYTES = 8 * 1024 * 1024
NEVER_APPROVED = ""


class ApprovalStore:
    """Project servers the user approved, per folder:
    {folder: {name: {"entry": fingerprint, "files": {word: state}}}}."""

    def __init__(self, home: Path) -> None:
        self.path = home / APPROVALS_FILE

    def _load(self) -> tuple[dict[str, dict[str, Any]], str]:
        loaded = read_json_file(self.path, reader=partial(read_file_bytes, limit=MAX_APPROVALS_BYTES))
        data = loaded.data if isinstance(loaded.data, dict) else {}
        return {k: v for k, v in data.items() if isinstance(v, dict)}, loaded.problem

    def problem(self) -> str:
        """Why the approvals file cannot be read ("" when it can, or is absent)."""
        return self._load()[1]

    def why_not_approved(self, root: Path, server: ServerConfig, files: Mapping[str, str]) -> str | None:
        """None when `server` was approved as it is, with its project files in the states
        `files`; otherwise why not: NEVER_APPROVED, or what changed since."""
        data, _ = self._load()
        record = data.get(str(root), {}).get(server.name)
        if record is None:
            return NEVER_APPROVED
        if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
            return "it was approved before tether recorded the files it runs"
        if record.get("entry") != server.fingerprint:
            return "its entry in .mcp.json changed since it was approved"
        changed = changes(record["files"], files)
        return f"{', '.join(changed)} since it was approved" if changed else None

    def is_approved(self, root: Path, server: ServerConfig) -> bool:
        return self.why_not_approved(root, server, entry_files(server, root)) is None

    def approve(self, root: Path, server: ServerConfig) -> None:
        """Record `server` with its files as the user saw them (`approved_files`, else as
        they are now). Raises StateFileError for a broken approvals file (it is kept), OSError."""
        loaded = read_json_file(self.path, reader=partial(read_file_bytes, limit=MAX_APPROVALS_BYTES))
        data, _ = self._load()
        files = server.approved_files
        data.setdefault(str(root), {})[server.name] = {
            "entry": server.fingerprint,
            "files": dict(files if files is not None else entry_files(server, root)),
        }
        write_json_state(self.path, data, loaded)


@dataclass
class Admission:
    """The servers to start now, those waiting for the user's approval, and why others wait."""

    start: list[ServerConfig] = field(default_factory=list)
    ask: list[ServerConfig] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    asked_because: dict[str, str] = field(default_factory=dict)
    """Why a server approved before is asked about again (what changed), by name."""


def admit(
    servers: Iterable[ServerConfig], root: Path, store: ApprovalStore, *, trusted: bool,
    can_ask: bool, approve: Iterable[str] = (), reserved: Collection[str] = (),
) -> Admission:
    """Sort the servers: personal and `--mcp-config` ones start; a project one starts in a
    trusted folder once approved (`approve` names servers approved for this run), is asked
    about where a person can answer, and is skipped with a notice otherwise. A project server
    let through carries its files' states (`approved_files`): it does not start once they
    change, /mcp reload included. A project server whose label the server parts in `reserved`
    match (`ruled_servers` of your own allow rules: `mcp__<name>__...`) is left out: it would
    inherit them."""
    admission = Admission()
    approved_now = set(approve)
    unapproved = False
    for server in servers:
        if server.problem:
            admission.notices.append(server.problem)
        elif server.disabled:
            continue
        elif server.source != "project":
            admission.start.append(server)
        elif server.source == "project" and names_ruled_server(server_label(server.name), reserved):
            admission.notices.append(
                f"MCP server {server.name!r} from the project was not started: your own rules "
                f"allow tools named mcp__{server.name}__..., which it would get; rename it there")
        elif not trusted:
            admission.notices.append(
                f"MCP server {server.name!r} from the project's .mcp.json was not started: "
                "this folder is not trusted" + ("" if can_ask else " (use --trust)"))
        else:
            why = _admit_project_server(server, root, store, admission, can_ask=can_ask,
                                        approved_now=server.name in approved_now)
            unapproved = unapproved or why is not None
    if unapproved and store.problem():
        admission.notices.append(f"{store.problem()}; the approvals in it cannot be used")
    return admission


def _admit_project_server(
    server: ServerConfig, root: Path, store: ApprovalStore, admission: Admission, *,
    can_ask: bool, approved_now: bool,
) -> str | None:
    """Start, ask about or skip one project server; returns why it is not approved (None
    when it is)."""
    files = entry_files(server, root)
    why = None if approved_now else store.why_not_approved(root, server, files)
    if why is not None and not can_ask:
        admission.notices.append(
            f"MCP server {server.name!r} from the project's .mcp.json was not started: "
            f"{why or 'it was never approved'} (approve it in the chat, or pass "
            f"--mcp-approve {server.name})")
        return why
    admitted = replace(_without_own_grants(server, admission.notices), approved_files=files)
    (admission.start if why is None else admission.ask).append(admitted)
    if why:
        admission.asked_because[server.name] = why
        admission.notices.append(f"MCP server {server.name!r}: {why}; it is asked about again")
    return why


def _without_own_grants(server: ServerConfig, notices: list[str]) -> ServerConfig:
    """A project entry cannot let its own tools run unasked: `autoApprove` and `trusted`
    count only in the user's own files."""
    if not (server.auto_approve or server.trusted):
        return server
    notices.append(f"MCP server {server.name!r}: autoApprove and trusted are ignored in a "
                   "project's .mcp.json (set them in TETHER_HOME/mcp.json)")
    return replace(server, auto_approve=frozenset(), trusted=False)


def remember_approval(store: ApprovalStore, root: Path, server: ServerConfig) -> str:
    """Save an approval; "" when saved, else why not (the approval holds for this run)."""
    try:
        store.approve(root, server)
    except StateFileError as exc:
        return f"Could not save the approval: {exc}"
    except OSError as exc:
        return f"Could not save the approval in {store.path} ({exc.strerror or exc})."
    return ""
