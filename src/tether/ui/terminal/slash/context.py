"""What a slash command may use of the app: the seam between the commands and the terminal app.

The app implements it; the unit tests implement it with a console on a string and scripted
answers, so every command runs without a terminal. A state change goes through a `Runtime`
method (`switch_model`, `set_auto`, `set_plan_mode`, `add_session_rule`, `reload_rules`) or
`rebuild`, never through the runtime's parts.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from rich.console import Console

from tether.core.ui_protocol import NoticeLevel
from tether.runtime import Runtime
from tether.store.config import Settings

from ..keyboard import Choices
from ..sessions import Sessions


class CommandContext(Protocol):
    console: Console
    """Where a listing goes (model text only through `terminal_ui.shown`)."""
    runtime: Runtime
    """The runtime in use now; `rebuild` replaces it."""
    sessions: Sessions
    protocol: str
    """The tool protocol the model is driven with ("native", "text"; "…" until known)."""
    deepthink: bool
    show_thinking: bool
    exiting: bool
    """Set to leave the app after this command."""

    def say(self, message: str, level: NoticeLevel = "info") -> None: ...

    async def ask_line(self, message: str, default: str = "", secret: bool = False,
                       fresh: bool = True) -> str:
        """A line typed by the user; KeyboardInterrupt or EOFError on Ctrl-C or Ctrl-D. Keys
        typed before it was asked are not part of it, unless `fresh` is False (a line that
        a key answer asked for)."""
        ...

    async def choose(self, choices: Choices) -> str | None:
        """The key (of `choices.answers`) pressed to answer; None for Ctrl-C or Ctrl-D."""
        ...

    async def confirm(self, question: str) -> bool:
        """A yes/no question answered by one key; only y is a yes."""
        ...

    async def ready(self) -> None:
        """Wait until the runtime's start (asking the provider) has finished."""
        ...

    async def turn(self, line: str, source: str = "") -> None:
        """Send `line` as the next request, as if typed; `source` names where it came from
        when the user did not write it (/mcp prompt: a server's text is outside content)."""
        ...

    async def run_cancellable(self, work: Awaitable[Any]) -> Any:
        """Run long work (a /compact) so that Ctrl-C stops it; the session is saved after."""
        ...

    async def rebuild(self, settings: Settings | None = None) -> None:
        """Replace the runtime by `Runtime.restarted(settings)`; ValueError for settings that
        cannot make one (the old runtime stays then)."""
        ...
