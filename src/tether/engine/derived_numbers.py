"""Whether a number an answer states could have come from the numbers a turn saw.

The unseen-number nudge and the answer check flag a number no tool result showed, as made
up. A number worked out from what was seen is no invention: "It is 2 hours." for a TTL of
7200 seconds, "50%" for 3 of 6 tests, "4 files" counted from a listing. So a number counts
as possibly derived, and is never flagged, when it is:

- a small whole number (SMALL_NUMBER or less): a count of a few things listed;
- a year;
- a seen number converted by a unit factor (×/÷ 60, 24, 1000, 1024, ...), as the answer
  rounds it;
- written as a percentage, one seen number as a share of another.

Sums and products of any two seen numbers are not counted: with a few dozen numbers seen,
they would explain almost any number, and the check would say nothing ever.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable

SMALL_NUMBER = 10
YEARS = (1900, 2100)
UNIT_FACTORS = (1, 7, 24, 60, 100, 1000, 1024, 3600, 86400, 604800, 1_000_000, 1024 * 1024, 1024 ** 3)
"""1 (the number itself), days in a week, hours, minutes, percent or cents, k, Ki, an hour, a
day and a week in seconds, M, Mi, Gi."""
_PLAIN = re.compile(r"-?\d+(?:\.\d+)?")
_PERCENT = re.compile(r"\s?(?:%|per ?cent\b)", re.I)


def value_of(text: str) -> float | None:
    """`1,000` -> 1000.0, `2.5` -> 2.5; None for a version (`2.4.1`) or no number."""
    plain = text.replace(",", "").replace("_", "")
    return float(plain) if _PLAIN.fullmatch(plain) else None


def _decimals(text: str) -> int:
    return len(text.partition(".")[2])


class SeenNumbers:
    """The numbers a turn saw, asked whether a stated number can be derived from them."""

    def __init__(self, seen: Iterable[str]) -> None:
        self.values = sorted({v for v in map(value_of, seen) if v is not None})

    def explains(self, stated: str, after: str = "") -> bool:
        """Whether `stated` (as the answer wrote it; `after`: the text that follows it) may be
        derived from the numbers seen. A version (`2.5.0`) is no arithmetic: only the same
        version seen explains it, which the caller checks."""
        value = value_of(stated)
        if value is None:
            return False
        if value.is_integer() and (abs(value) <= SMALL_NUMBER or YEARS[0] <= value <= YEARS[1]):
            return True
        slack = 0.5 * 10 ** -_decimals(stated.replace(",", "")) + abs(value) * 1e-9
        if any(self._within(value * f, slack * f) or self._within(value / f, slack / f) for f in UNIT_FACTORS):
            return True
        return bool(_PERCENT.match(after)) and self._share(value, slack)

    def _share(self, percent: float, slack: float) -> bool:
        """Some seen a and b with a / b * 100 within `slack` of `percent`."""
        if percent - slack <= 0:
            return False
        return any(self._between((percent - slack) * b / 100, (percent + slack) * b / 100)
                   for b in self.values if b > 0)

    def _within(self, target: float, slack: float) -> bool:
        return self._between(target - slack, target + slack)

    def _between(self, low: float, high: float) -> bool:
        at = bisect.bisect_left(self.values, low)
        return at < len(self.values) and self.values[at] <= high
