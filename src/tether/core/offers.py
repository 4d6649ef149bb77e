"""Nudges that write out a call for the model, or a choice: the next guess of a game, the
values a question's answer may be, the file steps told the user to open; and the cue after
a call written out at the end of a message.

Kept apart from nudges.py, whose TurnWatch they read and call back (offer, once).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..tools._paths import is_inside_root
from .guessing import announced_middle
from .messages import Message
from .reply_shapes import NUMBERED_STEPS
from .seen_values import seen_values

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
UNSEEN_AGAIN = (
    "Your answer says {number} again, but no tool result showed {number}. The results showed "
    "these values; answer with the one the question asks about:\n{values}"
)
VALUES_SEEN = "\nValues the results showed so far:\n{values}"

NEXT_GUESS = " Its answers so far leave a range; to send its middle, reply with only:\n{call}"
_MIDDLE = re.compile(r"The middle of that range is (-?\d+)\.\]")

OPEN_IT_YOURSELF = (
    "Your reply tells the user to open {path} and look: do it yourself. To read it, reply with "
    "only:\n{call}\nThen answer from what it shows."
)
_BACKTICKED = re.compile(r"`([\w./-]+\.\w{1,5})`")


def next_guess(watch: TurnWatch) -> str:
    """For a guessing program still waiting, the send_input call of the middle its last
    answer's range note gave ("" when the last result has none): told to go on, the model sent
    a guess of its own or nothing, and stopped with the game half played."""
    if watch.waiting is None or watch.show_call is None or "send_input" not in watch.tools:
        return ""
    middle = _MIDDLE.findall(watch.last_note)
    if not middle and watch.seen and (start := announced_middle(watch.seen[-1])) is not None:
        middle = [str(start)]  # no guess yet: the middle of the range the game announced
    if not middle:
        return ""
    return NEXT_GUESS.format(call=watch.offer("send_input", {"session": watch.waiting, "text": middle[-1]}))


def unseen_number_nudge(watch: TurnWatch, number: str) -> str | None:
    """UNSEEN_NUMBER once; once more, with the values the results showed that share words with
    the request, when the same kind of answer comes back after more calls (told that no result
    showed its number, a model may read the file that shows the right one and repeat its own)."""
    values = "\n".join(f"  {v}" for v in seen_values(watch.seen, watch.request))
    if "unseen" not in watch.sent:
        watch.once("unseen")
        watch.unseen_at = watch.calls
        return UNSEEN_NUMBER.format(number=number) + (VALUES_SEEN.format(values=values) if values else "")
    if values and watch.calls > watch.unseen_at and watch.once("unseen_again"):
        return UNSEEN_AGAIN.format(number=number, values=values)
    return None


def told_to_open(watch: TurnWatch, text: str) -> str | None:
    """The nudge for steps that tell the user to open a project file and look (once per
    turn), with the read_file call for the first such file the model has not read."""
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
            call = watch.offer("read_file", {"filepath": match.group(1)})
            return OPEN_IT_YOURSELF.format(path=match.group(1), call=call)
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
