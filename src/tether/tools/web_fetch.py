"""HTTP for the web tools: every connection guarded, redirects one by one, bodies capped.

Redirects are never left to httpx: each hop is a request of its own, so its connection
meets the address guard (`safety.netguard`) again. A redirect to another host is followed
only when the caller says so (search_web's result pages); get_url and call_api report it
instead, so an allow rule for one site never carries a call to another.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from ..core.toolspec import ToolError

if TYPE_CHECKING:  # httpx and the guard load at the first fetch: a start never needs them
    import httpx

    from ..safety.netguard import MayReach, Resolver

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
USER_AGENT = "tether (terminal assistant; +https://pypi.org/project/tether/)"


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int = 2_000_000
    """Bytes of body read (after decompression); the rest is not downloaded."""
    timeout: float = 15.0
    """Seconds for the connect and for each read; the whole request gets twice that."""


@dataclass
class Fetched:
    """One response, after the redirects that were followed."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool = False
    unfollowed: str = ""
    """Where a redirect pointed that was not followed (another host)."""
    hops: list[str] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    def text(self) -> str:
        charset = "utf-8"
        for piece in self.content_type.split(";")[1:]:
            key, _, value = piece.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip("\"' ")
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", errors="replace")


def checked_url(url: str) -> str:
    """`url` if the web tools may ask for it (http or https, a host, no credentials in it)."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ToolError(f"Not a valid URL ({exc}): {url!r}.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"Only http:// and https:// URLs with a host can be fetched, not {url!r}.")
    if parts.username or parts.password:
        raise ToolError("A URL with a user name or password in it is refused; use headers instead.")
    return url.strip()


def same_host(a: str, b: str) -> bool:
    return (urlsplit(a).hostname or "").lower() == (urlsplit(b).hostname or "").lower()


class Fetcher:
    """The web tools' HTTP client (one per runtime, shared by their threads)."""

    def __init__(self, may_reach: MayReach, limits: FetchLimits | None = None,
                 resolver: Resolver | None = None) -> None:
        """`resolver` stands in for the system's (`netguard.resolve`) in tests."""
        self.limits = limits or FetchLimits()
        self._may_reach = may_reach
        self._resolver = resolver
        self._made: httpx.Client | None = None
        self._making = threading.Lock()

    @property
    def _client(self) -> httpx.Client:
        """Made at the first fetch: loading the certificate store for TLS took a tenth of the
        chat's start, in every run, for tools most runs never call."""
        import httpx

        from ..safety.netguard import GuardedTransport, resolve

        with self._making:
            if self._made is None:
                self._made = httpx.Client(
                    transport=GuardedTransport(self._may_reach, self._resolver or resolve),
                    follow_redirects=False, trust_env=False,
                    timeout=httpx.Timeout(self.limits.timeout), headers={"User-Agent": USER_AGENT},
                )
            return self._made

    def close(self) -> None:
        with self._making:
            if self._made is not None:
                self._made.close()

    def fetch(
        self, url: str, *, method: str = "GET", headers: Mapping[str, str] | None = None,
        body: bytes | None = None, other_hosts: bool = False, max_bytes: int | None = None,
        timeout: float | None = None,
    ) -> Fetched:
        """The response to `method url`, redirects followed on the same host (on any host
        with `other_hosts`, each hop checked); ToolError for every failure. `timeout`
        replaces the limits' one for this request (a search source has its own)."""
        current, hops = checked_url(url), list[str]()
        cap, seconds = max_bytes or self.limits.max_bytes, timeout or self.limits.timeout
        for _ in range(MAX_REDIRECTS + 1):
            fetched = self._one(method, current, headers, body, cap, seconds)
            target = fetched.headers.get("location", "")
            if fetched.status not in REDIRECTS or not target:
                fetched.hops = hops
                return fetched
            target = urljoin(current, target)
            if not other_hosts and not same_host(current, target):
                fetched.unfollowed, fetched.hops = target, hops
                return fetched
            hops.append(current)
            current = checked_url(target)
            if fetched.status == 303 or (fetched.status in (301, 302) and method == "POST"):
                method, body = "GET", None
        raise ToolError(f"Too many redirects (more than {MAX_REDIRECTS}) from {url}.")

    def _one(self, method: str, url: str, headers: Mapping[str, str] | None,
             body: bytes | None, max_bytes: int, timeout: float) -> Fetched:
        import httpx

        from ..safety.netguard import BlockedAddress

        try:
            request = self._client.build_request(
                method, url, headers=dict(headers or {}), content=body, timeout=timeout
            )
            response = self._client.send(request, stream=True)
        except BlockedAddress as exc:
            raise ToolError(str(exc)) from None
        except (httpx.InvalidURL, UnicodeError) as exc:
            raise ToolError(f"Not a URL that can be fetched ({exc}): {url!r}.") from None
        except httpx.TimeoutException:
            raise ToolError(f"{url} did not answer within {timeout:g}s.") from None
        except httpx.HTTPError as exc:
            raise ToolError(f"Could not fetch {url}: {type(exc).__name__}: {exc or 'failed'}.") from None
        try:
            data, cut = self._read_capped(response, max_bytes, timeout)
        finally:
            response.close()
        return Fetched(url, response.status_code, {k.lower(): v for k, v in response.headers.items()},
                       data, cut)

    def _read_capped(self, response: httpx.Response, max_bytes: int,
                     timeout: float) -> tuple[bytes, bool]:
        """At most `max_bytes` of body; a server that trickles past the deadline is cut off
        there (the per-read timeout alone would let it go on forever)."""
        deadline = time.monotonic() + 2 * timeout
        import httpx

        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes or time.monotonic() > deadline:
                    return b"".join(chunks)[:max_bytes], True
        except httpx.HTTPError as exc:
            if not chunks:
                raise ToolError(f"Reading {response.url} failed: {type(exc).__name__}.") from None
            return b"".join(chunks), True
        return b"".join(chunks), False
