"""Where a project keeps what tether reads as its own configuration: the one table.

The loaders take their paths from here (the rules file, the hooks file, the MCP server
list, the skill and agent folders) and the sandbox keeps every entry read-only inside a
writable project (`sandbox_paths`), so a loader added with its path in this table cannot
be forgotten by the sandbox. The instruction files (AGENTS.md and the names that stand in
for it) are the one list that is a setting: their names are here (`instruction_names`), the
sandbox keeps them read-only and `engine.instructions` reads them.

This module imports nothing of tether: loaders in every package can use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal["file", "dir"]

RULES_FILE = ".permissions.json"
"""Allow and deny rules for tools (safety/permissions.py)."""
HOOKS_FILE = ".tether/settings.json"
"""The hooks table: commands tether runs around tool calls (hooks/config.py)."""
MCP_FILE = ".mcp.json"
"""MCP servers: programs tether starts (a project's stdio ones inside the sandbox; mcp/config.py)."""
SKILL_FOLDERS = ("skills", ".tether/skills", ".agents/skills", ".claude/skills")
"""Skills bring instructions and script tools (skills/catalog.py), in search order."""
AGENT_FOLDERS = (".claude/agents", ".tether/agents")
"""Sub-agent definitions (store/agent_defs.py); a later folder wins a name clash."""
INSTRUCTIONS_FILE = "AGENTS.md"
OVERRIDE_FILE = "AGENTS.override.md"
DEFAULT_FALLBACKS = ("CLAUDE.md",)
"""The names a folder's instructions may have when it has no AGENTS.md (a setting)."""
RUNS_NAMED_FILES = (MCP_FILE, HOOKS_FILE)
"""The files whose entries name programs tether starts: the project files those name are
kept read-only too (`config_programs`)."""


@dataclass(frozen=True)
class ConfigPath:
    name: str
    """Relative to the project root."""
    kind: Kind
    stand_in: bytes = b""
    """What a placeholder file holds while the real one does not exist: what the loader
    reads as "nothing configured"."""


PROJECT_CONFIG: tuple[ConfigPath, ...] = (
    ConfigPath(RULES_FILE, "file", b"{}\n"),
    ConfigPath(HOOKS_FILE, "file", b"{}\n"),
    ConfigPath(MCP_FILE, "file", b'{"mcpServers": {}}\n'),
    # an empty placeholder folder is invisible to git status
    *(ConfigPath(folder, "dir") for folder in (*SKILL_FOLDERS, *AGENT_FOLDERS)),
)
"""Every path in a project that tether reads as its own configuration, instructions aside."""


def instruction_names(fallbacks: Sequence[str]) -> tuple[str, ...]:
    """The names a folder's instructions file may have, the one that wins first."""
    return (OVERRIDE_FILE, INSTRUCTIONS_FILE, *fallbacks)
