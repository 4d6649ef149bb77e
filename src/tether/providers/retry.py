"""When to try a request again, and how long to wait first.

Only answers that say "not now" are retried: 429 (rate limited) and 503/529
(overloaded). The wait grows exponentially with random jitter, so many clients
that failed together do not all come back at the same instant, and a
`Retry-After` from the server wins over our own guess. A wait longer than
`max_wait` is not sat out: the error goes to the user at once, saying when to
come back. Retrying happens only while a request is being opened, before any
part of an answer reached the caller, so nothing is ever sent twice.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from .base import ProviderError

RETRYABLE_KINDS = frozenset({"rate_limit", "overloaded"})
RETRYABLE_STATUSES = frozenset({429, 503, 529})

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transport retries. `sleep` is injectable for tests."""

    max_retries: int = 4
    base_delay: float = 1.0
    """The first wait in seconds; each further retry doubles it."""
    max_delay: float = 30.0
    """Our own backoff never waits longer than this."""
    max_wait: float = 120.0
    """A server asking for a longer wait than this is not retried."""
    jitter: float = 0.25
    """Up to this fraction of each wait is added at random."""
    sleep: Sleep = field(default=asyncio.sleep, compare=False)
    random: Callable[[], float] = field(default=random.random, compare=False)

    def wait_before_retry(self, error: ProviderError, retries_done: int) -> float | None:
        """Seconds to wait before the next attempt, or None when it should not be retried."""
        if error.kind == "dropped":
            # A connection closed before any answer: a keep-alive connection the server had
            # just dropped (llama.cpp's server closes idle ones after 5 s). Sent again at
            # once, one time; a server that keeps dropping requests is reported.
            return 0.0 if retries_done == 0 and self.max_retries > 0 else None
        if not is_retryable(error) or retries_done >= self.max_retries:
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_wait else None
        backoff = min(self.max_delay, self.base_delay * 2**retries_done)
        return backoff * (1 + self.jitter * self.random())


NO_RETRIES = RetryPolicy(max_retries=0)


def is_retryable(error: ProviderError) -> bool:
    return error.kind in RETRYABLE_KINDS or error.status in RETRYABLE_STATUSES


def retry_notice(label: str, error: ProviderError, wait: float, attempt: int, limit: int) -> str:
    """The line shown while waiting: "Anthropic is overloaded (529); retrying in 2 s (1/4)."."""
    what = "is rate limiting requests" if error.kind == "rate_limit" else "is overloaded"
    status = f" ({error.status})" if error.status else ""
    return f"{label} {what}{status}; retrying in {wait:.3g} s ({attempt}/{limit})."


def gave_up(error: ProviderError, retries: int) -> ProviderError:
    """The final error after the last retry, saying that retrying already happened."""
    if retries == 0:
        return error
    tries = "retry" if retries == 1 else "retries"
    return ProviderError(
        f"{error} Gave up after {retries} {tries}.", error.kind, error.status, error.retry_after
    )


# ---------------------------------------------------------------- Retry-After


_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A `Retry-After` value in seconds: either a number of seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def retry_after_from(headers: Mapping[str, str], body: str = "") -> float | None:
    """How long the server asked us to wait: `Retry-After`, `retry-after-ms`, or Google's
    `retryDelay` in the error body."""
    seconds = retry_after_seconds(headers.get("retry-after"))
    if seconds is not None:
        return seconds
    millis = retry_after_seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    match = _DELAY.search(body)
    return float(match.group(1)) if match else None
