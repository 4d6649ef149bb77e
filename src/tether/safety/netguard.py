"""Where the web tools may connect: no loopback, link-local or private address unless named.

The check runs where the connection is made, after DNS resolution, on the very address the
socket then connects to (`GuardedBackend.connect_tcp`): a name that resolves to 127.0.0.1,
a decimal or IPv4-mapped spelling of it, or a DNS answer that changes between a check and
the connect (rebinding) all meet the same test. Every redirect opens its connection through
the same backend, so it is checked again. Nothing is sent to a refused address: the refusal
comes before the connect.

A host is let through anyway when `may_reach(host, port)` says an allow rule names it
(`web_guard.named_hosts`): a developer's own server on localhost, or the tests' fixtures.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpcore
import httpx

Resolver = Callable[[str, int], list[str]]
"""host, port -> the IP addresses a connection may go to."""
MayReach = Callable[[str, int], bool]
"""host, port -> whether an allow rule names that host, so a private address is let through."""


class BlockedAddress(Exception):
    """A connection the guard refused; the message says which address and why."""


def address_problem(address: str) -> str | None:
    """Why a web tool may not connect to `address` ("loopback", "private", ...), or None."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 reaches 127.0.0.1
    checks = (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("unspecified", ip.is_unspecified),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("shared (carrier-grade NAT)", ip in _SHARED),
        ("reserved", ip.is_reserved),
    )
    return next((name for name, hit in checks if hit), None)


_SHARED = ipaddress.ip_network("100.64.0.0/10")


def resolve(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host` (an IP literal is its own)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def refusal(host: str, address: str, problem: str) -> str:
    shown = host if host == address else f"{host} ({address})"
    return (
        f"Refused: {shown} is a {problem} address. Web tools do not reach this machine or "
        f"private networks unless an allow rule names the host, e.g. get_url(http://{host}/*)"
    )


def checked_addresses(host: str, port: int, may_reach: MayReach, resolver: Resolver) -> list[str]:
    """The addresses of `host`, or BlockedAddress when any of them is private and no allow
    rule names the host (one private answer among public ones is enough to refuse)."""
    addresses = resolver(host, port)
    if may_reach(host.lower(), port):
        return addresses
    for address in addresses:
        problem = address_problem(address)
        if problem:
            raise BlockedAddress(refusal(host, address, problem))
    return addresses


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's socket backend, connecting only to addresses `checked_addresses` passed.
    TLS still verifies the certificate against the host name (httpcore passes it to
    start_tls), since only the TCP connect is given the address."""

    def __init__(self, may_reach: MayReach, resolver: Resolver = resolve) -> None:
        self._inner = httpcore.SyncBackend()
        self._may_reach = may_reach
        self._resolver = resolver

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None,
        local_address: str | None = None, socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = checked_addresses(host, port, self._may_reach, self._resolver)
        if not addresses:
            raise httpcore.ConnectError(f"{host} has no address")
        last: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        raise BlockedAddress("Refused: web tools do not connect to Unix sockets")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore connection pool whose every connection goes
    through `GuardedBackend` (httpx's own transport takes no network backend, so the pool
    is built here through httpcore's public constructor). No proxy: a proxy would resolve
    names where the guard cannot see."""

    def __init__(self, may_reach: MayReach, resolver: Resolver = resolve) -> None:
        self.pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=20, max_keepalive_connections=10, keepalive_expiry=5.0,
            network_backend=GuardedBackend(may_reach, resolver),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme, host=request.url.raw_host,
                port=request.url.port, target=request.url.raw_path,
            ),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions,
        )
        with _as_httpx_errors():
            answer = self.pool.handle_request(sent)
        assert isinstance(answer.stream, Iterable)
        return httpx.Response(
            status_code=answer.status, headers=answer.headers,
            stream=_BodyStream(answer.stream), extensions=answer.extensions,
        )

    def close(self) -> None:
        self.pool.close()


class _BodyStream(httpx.SyncByteStream):
    def __init__(self, parts: Iterable[bytes]) -> None:
        self._parts = parts

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._parts

    def close(self) -> None:
        close = getattr(self._parts, "close", None)
        if close is not None:
            close()


_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    # The more specific first: the first match is raised.
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """httpcore's errors as httpx's (what the callers catch); BlockedAddress passes as it is."""
    try:
        yield
    except Exception as exc:
        mapped = next((theirs for ours, theirs in _HTTPX_ERRORS if isinstance(exc, ours)), None)
        if mapped is None:
            raise
        raise mapped(str(exc)) from exc
