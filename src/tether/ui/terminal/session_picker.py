"""`tether -r` without a session: this folder's sessions in a numbered list, one picked.

Up to nine are listed and one key picks; with more, a number and Enter. Esc (or an empty
line) starts a new session instead, so nothing is continued by accident.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from tether.store.session import SessionStore, SessionSummary

from .keyboard import Asker, Choices
from .shown import shown

ONE_KEY_LIMIT = 9
"""Sessions a single key can pick from."""
LISTED = 20
"""Sessions listed when there are more than one key can pick."""


def session_label(summary: SessionSummary) -> str:
    """Its title (or first request), when it was last used and how long it is."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.updated))
    name = summary.title or summary.first_request or "(untitled)"
    return f"{name} · {when} · {summary.messages} messages"


async def pick_session(console: Console, asker: Asker, store: SessionStore, root: Path) -> str | None:
    """The id of the session picked, or None to start a new one (none saved, or Esc)."""
    found = [s for s in store.list(root) if s.corrupt is None][:LISTED]
    if not found:
        console.print(shown("No saved session for this folder; starting a new one.", "notice"))
        return None
    console.print(shown("Sessions of this folder, newest first:", "bold"))
    for number, summary in enumerate(found, 1):
        console.print(shown(f"  {number:>2}  {session_label(summary)}"))
    picked = await (by_key(asker, len(found)) if len(found) <= ONE_KEY_LIMIT
                    else by_number(console, asker, len(found)))
    if picked is None:
        console.print(shown("Starting a new session.", "status"))
        return None
    return found[picked - 1].id


async def by_key(asker: Asker, count: int) -> int | None:
    keys = {str(n): f"session {n}" for n in range(1, count + 1)}
    last = f"1-{count}" if count > 1 else "1"
    choices = Choices(f"Continue which? [{last}] (Esc: a new session) ",
                      {**keys, "escape": "a new session"},
                      f"Press a number from {last}, or Esc for a new session.",
                      stopped="a new session")
    key = await asker.choose(choices)
    return int(key) if key is not None and key.isdigit() else None


async def by_number(console: Console, asker: Asker, count: int) -> int | None:
    """A number typed and Enter; an empty line, Ctrl-C or Ctrl-D start a new session."""
    while True:
        try:
            typed = (await asker.line(f"Continue which? [1-{count}] (Enter: a new session) ")).strip()
        except (KeyboardInterrupt, EOFError):
            return None
        if not typed:
            return None
        if typed.isdigit() and 1 <= int(typed) <= count:
            return int(typed)
        console.print(shown(f"{typed!r} is not a number from 1 to {count}.", "notice"))
