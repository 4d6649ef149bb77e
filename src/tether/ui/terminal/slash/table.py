"""The slash-command table: one entry per command drives /help, completion and dispatch."""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import CommandContext

Handler = Callable[["CommandContext", str], Awaitable[None]]


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    handler: Handler


class CommandTable:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}

    def command(self, name: str, usage: str, help_text: str) -> Callable[[Handler], Handler]:
        """Decorator: register a handler under `/name`."""

        def register(handler: Handler) -> Handler:
            self._commands[name] = Command(name, usage, help_text, handler)
            return handler

        return register

    @classmethod
    def joined(cls, *tables: CommandTable) -> CommandTable:
        """One table holding every table's commands, in order; a name defined twice is a bug."""
        whole = cls()
        for table in tables:
            for c in table.all():
                if c.name in whole._commands:
                    raise ValueError(f"/{c.name} is defined twice")
                whole._commands[c.name] = c
        return whole

    def names(self) -> list[tuple[str, str]]:
        return [("/" + c.name, c.help) for c in self._commands.values()]

    def all(self) -> list[Command]:
        return list(self._commands.values())

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def suggest(self, name: str) -> str | None:
        close = difflib.get_close_matches(name, list(self._commands), n=1, cutoff=0.5)
        if close:
            return close[0]
        prefixed = [c for c in self._commands if c.startswith(name[:2])]
        return prefixed[0] if len(prefixed) == 1 else None

    async def run(self, ctx: CommandContext, line: str) -> None:
        name, _, arg = line[1:].strip().partition(" ")
        command = self.get(name)
        if command is None:
            hint = self.suggest(name)
            ctx.say(f"Unknown command /{name}." + (f" Did you mean /{hint}?" if hint else " Type /help."),
                    "warning")
            return
        await command.handler(ctx, arg.strip())


def on_off(arg: str, current: bool) -> bool | None:
    """Parse `on`/`off` (empty toggles); None when the argument is neither."""
    value = arg.lower()
    if value in ("", "toggle"):
        return not current
    if value in ("on", "yes", "true", "1"):
        return True
    if value in ("off", "no", "false", "0"):
        return False
    return None
