"""The note for an empty reply right after a write or edit that worked."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .nudges import TurnWatch

CHANGE_MADE = (
    "Your last call worked: {path} is changed (its result is above). If that is all the request "
    "asks, reply with one short sentence saying what you changed; if not, make the next tool call."
)


def change_made(watch: TurnWatch) -> str:
    """CHANGE_MADE when the turn's last call was a write or an edit that worked ("" otherwise):
    an empty reply right after one is often the end of the job, and "continue" sent the model
    on to rewrite the file it had just fixed."""
    last = watch.last_call
    if last is None or last.name not in ("write_file", "edit_file"):
        return ""
    return CHANGE_MADE.format(path=last.arguments.get("filepath", "the file"))
