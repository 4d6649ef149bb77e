"""Which MCP servers may start: a project's servers only in a trusted folder, each approved once.

A `.mcp.json` in a cloned repository is a list of programs to run on the user's machine,
so it gets the same suspicion as a project's allow rules: nothing of it starts until the
folder is trusted and the user approved that exact entry. Approvals are kept in
`TETHER_HOME/mcp-approvals.json`, keyed by the folder and the server's name, holding a hash
of the entry as written: a changed entry asks again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..store.statefile import StateFileError, read_json_file, write_json_state
from .config import ServerConfig

APPROVALS_FILE = "mcp-approvals.json"


class ApprovalStore:
    """Project servers the user approved, per folder: {folder: {name: fingerprint}}."""

    def __init__(self, home: Path) -> None:
        self.path = home / APPROVALS_FILE

    def _load(self) -> tuple[dict[str, dict[str, str]], str]:
        loaded = read_json_file(self.path)
        data = loaded.data if isinstance(loaded.data, dict) else {}
        return {k: v for k, v in data.items() if isinstance(v, dict)}, loaded.problem

    def is_approved(self, root: Path, server: ServerConfig) -> bool:
        data, _ = self._load()
        return data.get(str(root), {}).get(server.name) == server.fingerprint

    def approve(self, root: Path, server: ServerConfig) -> None:
        """Raises StateFileError for a broken approvals file (it is kept), OSError."""
        loaded = read_json_file(self.path)
        data, _ = self._load()
        data.setdefault(str(root), {})[server.name] = server.fingerprint
        write_json_state(self.path, data, loaded)


@dataclass
class Admission:
    """The servers to start now, those waiting for the user's approval, and why others wait."""

    start: list[ServerConfig] = field(default_factory=list)
    ask: list[ServerConfig] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def admit(
    servers: Iterable[ServerConfig], root: Path, store: ApprovalStore, *, trusted: bool,
    can_ask: bool, approve: Iterable[str] = (),
) -> Admission:
    """Sort the servers: personal and `--mcp-config` ones start; a project one starts in a
    trusted folder once approved (`approve` names servers approved for this run), is asked
    about where a person can answer, and is skipped with a notice otherwise."""
    admission = Admission()
    approved_now = set(approve)
    for server in servers:
        if server.problem:
            admission.notices.append(server.problem)
        elif server.disabled:
            continue
        elif server.source != "project":
            admission.start.append(server)
        elif not trusted:
            admission.notices.append(
                f"MCP server {server.name!r} from the project's .mcp.json was not started: "
                "this folder is not trusted" + ("" if can_ask else " (use --trust)"))
        elif server.name in approved_now or store.is_approved(root, server):
            admission.start.append(_without_own_grants(server, admission.notices))
        elif can_ask:
            admission.ask.append(_without_own_grants(server, admission.notices))
        else:
            admission.notices.append(
                f"MCP server {server.name!r} from the project's .mcp.json was not started: it "
                f"was never approved (approve it in the chat, or pass --mcp-approve {server.name})")
    return admission


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
