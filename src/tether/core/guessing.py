"""The range a guessing program has narrowed to, after each answer it gave.

A small model playing "guess my number" sends 25, reads "Too low.", sends 40, reads "Too
high." and then replies with nothing: it cannot keep the bounds in mind and halve them.
After an answer that says too low or too high, send_input's
result gets one line with what the answers so far allow and the middle of that range. It says
where the number is; the model still sends every guess itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .messages import Evidence

GUESS_RANGE = "\n[So far the number is {bounds}. The middle of that range is {middle}.]"
_HIGHER = re.compile(r"\b(?:too\s+(?:low|small)|higher|go\s+up|bigger|greater|larger)\b", re.I)
_LOWER = re.compile(r"\b(?:too\s+(?:high|big|large)|lower|go\s+down|smaller|less)\b", re.I)
_RANGE = re.compile(r"\bbetween\s+(-?\d+)\s+and\s+(-?\d+)", re.I)
_WHOLE = re.compile(r"\s*(-?\d+)\s*")


def guess_range_note(earlier: Sequence[Evidence], latest: Evidence) -> str:
    """The note for `latest` (a send_input) from the guesses sent to its session so far (the
    turn's `earlier` calls, then `latest`); "" when its answer said neither too low nor too
    high, or the bounds do not make a range."""
    session = latest.command.session if latest.command is not None else None
    if latest.call.name != "send_input" or session is None or not _direction(latest.result):
        return ""
    if not _WHOLE.fullmatch(str(latest.call.arguments.get("text", ""))):
        return ""  # an answer to something other than a guess
    evidence = [*earlier, latest]  # built only for a guess's answer, not for every call
    low, high = _start_range(evidence, session)
    for item in evidence:
        if item.call.name != "send_input" or item.call.arguments.get("session") != session:
            continue
        guess = _WHOLE.fullmatch(str(item.call.arguments.get("text", "")))
        direction = _direction(item.result)
        if guess is None or not direction:
            continue
        number = int(guess.group(1))
        if direction == "higher":
            low = number + 1 if low is None else max(low, number + 1)
        else:
            high = number - 1 if high is None else min(high, number - 1)
    if low is None or high is None or low > high:
        return ""
    bounds = f"{low}" if low == high else f"from {low} to {high}"
    return GUESS_RANGE.format(bounds=bounds, middle=(low + high) // 2)


def _direction(output: str) -> str:
    """"higher" when the answer says the number is higher, "lower" for lower, "" for neither
    or both (the first line that says one counts)."""
    for line in output.splitlines():
        up, down = bool(_HIGHER.search(line)), bool(_LOWER.search(line))
        if up != down:
            return "higher" if up else "lower"
    return ""


def _start_range(evidence: Sequence[Evidence], session: str) -> tuple[int | None, int | None]:
    """The range the program announced ("between 1 and 50") when it started in `session`."""
    for item in evidence:
        if item.call.name == "run_cmd" and item.command is not None and item.command.session == session:
            announced = _announced(item.result)
            if announced is not None:
                return announced
    return None, None


def _announced(output: str) -> tuple[int, int] | None:
    """The range a program announced ("between 1 and 50" -> (1, 50)), or None."""
    found = _RANGE.search(output)
    if found is None:
        return None
    low, high = sorted((int(found.group(1)), int(found.group(2))))
    return low, high


def announced_middle(output: str) -> int | None:
    """The middle of the range a program announced ("between 1 and 50" -> 25), or None."""
    announced = _announced(output)
    return None if announced is None else sum(announced) // 2
