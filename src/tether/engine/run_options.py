"""Per-run choices that are not settings (from flags and the session), in a module of their
own: the chat reads them before its prompt is drawn, and importing the wiring (`runtime.py`)
would bring in all of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..safety.sandbox import Sandbox
    from ..tools.ask import Asker
    from ..tools.plan import ApprovePlan


@dataclass
class RunOptions:
    """Per-run choices that are not settings: they come from flags or the session."""

    root: Path
    home: Path
    auto: bool = False
    allow: Sequence[str] = ()
    deny: Sequence[str] = ()
    trusted: bool = False
    asker: Asker | None = None
    """How get_user_input reaches a person; None in one-shot mode."""
    on_output: Callable[[str], None] | None = None
    """Sees command output as it appears (the terminal shows it live)."""
    approve_plan: ApprovePlan | None = None
    """How plan mode asks the user to approve a plan; None: nobody can."""
    sandbox: Sandbox | None = None
    """A ready sandbox to use instead of the one the `sandbox` setting describes."""
    mcp_config: Sequence[Path] = ()
    """--mcp-config files: MCP servers for this run."""
    mcp_approve: Sequence[str] = ()
    """--mcp-approve names: project MCP servers approved for this run."""
