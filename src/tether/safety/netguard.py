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

import ipaddress
import socket
from collections.abc import Callable, Iterable
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


def guarded_transport(may_reach: MayReach, resolver: Resolver = resolve) -> httpx.HTTPTransport:
    """An httpx transport whose every connection goes through `GuardedBackend`; no proxy
    from the environment (a proxy would resolve names where the guard cannot see)."""
    transport = httpx.HTTPTransport(trust_env=False)
    # httpx builds its pool without a way to pass a backend; the pool is replaced whole,
    # with the settings httpx's defaults give (a failing SSRF test catches a change here).
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False),
        max_connections=20, max_keepalive_connections=10, keepalive_expiry=5.0,
        network_backend=GuardedBackend(may_reach, resolver),
    )
    return transport
