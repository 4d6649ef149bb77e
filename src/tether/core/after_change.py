"""The note for an empty reply right after a write or edit that worked."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

CHANGE_MADE = (
    "Your last call worked: {path} is changed (its result is above). If that is all the request "
    "asks, reply with one short sentence saying what you changed; if not, make the next tool call."
)


CHANGE_WARNED = (
    "Your last call changed {path}, but its result warns that something is wrong with it (the "
    "Warning above). Fix that with the next tool call before you answer."
)


def change_made(watch: TurnWatch) -> str:
    """CHANGE_MADE when the turn's last call was a write or an edit that worked ("" otherwise):
    an empty reply right after one is often the end of the job, and "continue" sent the model
    on to rewrite the file it had just fixed. A change whose result warns (the file no longer
    parses, imports a name nowhere defined) gets CHANGE_WARNED instead: asked for its summary,
    the model may call the broken import "the correct import"."""
    last = watch.last_call
    if last is None or last.name not in ("write_file", "edit_file"):
        return ""
    path = last.arguments.get("filepath", "the file")
    return (CHANGE_WARNED if watch.last_warned else CHANGE_MADE).format(path=path)
