"""Waiting for something a test cannot be told about directly (a process to end, a file to
appear): poll until it holds, and fail loudly, naming what never came, when it does not.

The bound only catches a hang: it is generous, so a loaded machine never fails a test, and
running out raises instead of letting the test carry on as if the wait had succeeded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

HANG = 60.0
"""Seconds only a real hang exceeds."""
POLL = 0.02


class Deadline:
    """The moment a wait gives up; `check` raises, naming what never came."""

    def __init__(self, what: str, timeout: float) -> None:
        self.what, self.timeout = what, timeout
        self.end = time.monotonic() + timeout

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise AssertionError(f"timed out after {self.timeout:g}s waiting for {self.what}")


def wait_until(condition: Callable[[], T], what: str, timeout: float = HANG) -> T:
    """`condition()`'s first truthy value; AssertionError naming `what` after `timeout`."""
    deadline = Deadline(what, timeout)
    while not (value := condition()):
        deadline.check()
        time.sleep(POLL)
    return value


async def until(condition: Callable[[], T], what: str, timeout: float = HANG) -> T:
    """`wait_until` for a test running in the event loop: the loop keeps running meanwhile."""
    deadline = Deadline(what, timeout)
    while not (value := condition()):
        deadline.check()
        await asyncio.sleep(POLL)
    return value
