"""Nudges that write out a call for the model, or a choice: the next guess of a game, the
values a question's answer may be, the file steps told the user to open; and the cue after
a call written out at the end of a message.

Kept apart from nudges.py, whose TurnWatch they read and call back (offer, once).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..tools._paths import is_inside_root
from .messages import Message
from .reply_shapes import NUMBERED_STEPS

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

SEND_CUE = "Send that call now."
_STEP_NOTE = re.compile(r"\s*\(Note: \d+ of \d+ tool round trips used\.[^()]*\)\s*")
"""The step budget's note (loop.pressure_note), which may follow the call: the cue goes before it."""
"""After a call written out at the very end of a message, the 1.5B model answered with nothing
(it ended its turn at the first token); with this line after the call it sent the call (two of
three replayed requests). A message that goes on after the call needs no cue."""

UNSEEN_NUMBER = (
    "Your answer says {number}, but no tool result showed {number}. Check it with the tools "
    "(search for where it is set, read that file), then answer."
)

OPEN_IT_YOURSELF = (
    "Your reply tells the user to open {path} and look: do it yourself. Read it with read_file, "
    "then answer from what it shows."
)
_BACKTICKED = re.compile(r"`([\w./-]+\.\w{1,5})`")




def unseen_number_nudge(watch: TurnWatch, number: str) -> str | None:
    """UNSEEN_NUMBER, once per turn: the answer states a number no result showed."""
    return UNSEEN_NUMBER.format(number=number) if watch.once("unseen") else None


def told_to_open(watch: TurnWatch, text: str) -> str | None:
    """The nudge for steps that tell the user to open a project file and look (once per
    turn), naming the first such file the model has not read."""
    if watch.root is None or watch.show_call is None or "read_file" not in watch.tools:
        return None
    if watch.acted:  # steps after the change are a summary ("1. Read the file ..."), not a task
        return None
    if not NUMBERED_STEPS.search(text + "\n"):
        return None
    for match in _BACKTICKED.finditer(text):
        path = (watch.root / match.group(1)).resolve()
        if is_inside_root(path, watch.root) and path.is_file() and path not in watch.read_paths:
            if not watch.once("open"):
                return None
            return OPEN_IT_YOURSELF.format(path=match.group(1))
    return None


def with_send_cue(request: list[Message], watch: TurnWatch | None) -> list[Message]:
    """`request` with SEND_CUE after the call last written out for the model when the last
    message (a user message, as the text protocol sends results and notes) ends with that call,
    or with it and then only the step budget's note; unchanged otherwise."""
    if watch is None or not watch.offered or not request or request[-1].role != "user":
        return request
    last = request[-1]
    text, call = last.text.rstrip(), watch.offered.rstrip()
    at = text.rfind(call)
    rest = text[at + len(call):] if at >= 0 else ""
    if last.tool_results or at < 0 or (rest.strip() and not _STEP_NOTE.fullmatch(rest)):
        return request
    return [*request[:-1], Message.user(text[: at + len(call)] + "\n" + SEND_CUE + rest)]
