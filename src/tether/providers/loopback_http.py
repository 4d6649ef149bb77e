"""One HTTP/1.1 request to a server on this machine over plain http://, on asyncio's streams.

The chat is ready once the provider was asked what the model can do (`GET /models`,
`POST /api/show`), and httpx's import (with httpcore, h11 and anyio's backend) took about
45 ms of CPU before that first question could go out. A model server on a loopback address
needs none of it: no TLS, no proxy, no pool. This asks that one question without httpx.

It is deliberately not a general client: one request a connection (closed afterwards), a JSON
or empty body, an answer framed by Content-Length, chunks or the end of the connection, no
redirects, no compression. Anything else raises `LoopbackFailure` (the request may or may not
have reached the server) and the caller asks again with its full client, which then behaves
and words its errors as it always did. Only a server that took the request and said nothing
within the time allowed is told apart (`LoopbackTimeout`): asking again would double the wait.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit
from urllib.request import getproxies

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
HEAD_LIMIT = 64 * 1024
"""Bytes of the answer's status line and headers, and of one chunk-size line."""
BODY_LIMIT = 64 * 1024 * 1024
"""Bytes of body read; a longer answer is left to the full client."""
READ_SIZE = 64 * 1024
OWN_HEADERS = frozenset({"host", "connection", "content-length", "transfer-encoding"})
"""Headers this module writes itself: a caller's would contradict how the request is framed."""

_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-9][0-9][0-9])(?: [^\r\n]*)?\r?\n")
_REQUEST_TARGET = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*")
"""A path and query that go on the request line as they are (RFC 3986's characters): httpx
would percent-encode anything else."""
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|\?|$)")
"""A `.` or `..` segment, which httpx would resolve first."""
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")
"""What a header value may hold here: printable ASCII and tabs (httpx sends values as ASCII)."""

T = TypeVar("T")


class LoopbackFailure(Exception):
    """Not a clean HTTP answer, or a request this module does not send: ask with the full client."""


class LoopbackTimeout(LoopbackFailure):
    """The request went out and the server sent nothing (or nothing more) in the time allowed."""


@dataclass(frozen=True)
class Endpoint:
    """Where a request goes: the address to connect to and what the request line names."""

    host: str
    port: int
    authority: str
    """The Host header: the host (IPv6 in brackets) with any port the URL gave."""
    target: str
    """The path and query, as the request line sends them."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    """Names in lower case; a repeated header's values joined with ", "."""
    body: bytes


def loopback_endpoint(url: str) -> Endpoint | None:
    """The endpoint of `url` when this module may ask it: plain http:// to a loopback host,
    no user name in the URL, no proxy configured for http (the full client would use it),
    and a path that goes on the request line as it is. None otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname or ""
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if parts.scheme != "http" or host not in LOOPBACK_HOSTS or not parts.netloc.isascii():
        return None
    if "@" in parts.netloc or not _REQUEST_TARGET.fullmatch(target) or _DOT_SEGMENT.search(target):
        return None
    if proxy_configured():
        return None
    return Endpoint(host, 80 if port is None else port, parts.netloc.lower(), target)


def proxy_configured() -> bool:
    """Whether a proxy is set for http (HTTP_PROXY, ALL_PROXY, ...). No exception list
    (NO_PROXY) is read: with any proxy set, the full client decides where the request goes."""
    proxies = getproxies()
    return "http" in proxies or "all" in proxies


async def exchange(
    endpoint: Endpoint,
    method: str,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    connect_timeout: float,
    read_timeout: float,
) -> Answer:
    """Send one request and read its whole answer, whatever its status; the connection is
    closed afterwards. `read_timeout` bounds each wait for more of the answer.

    LoopbackTimeout when the answer did not come in time; LoopbackFailure for anything else
    that is not a clean answer (refused, closed early, framing this module does not read)."""
    head = request_head(method, endpoint, headers, body)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(endpoint.host, endpoint.port, limit=HEAD_LIMIT), connect_timeout
        )
    except (OSError, asyncio.TimeoutError) as exc:
        raise LoopbackFailure(f"no connection: {exc!r}") from exc
    try:
        writer.write(head + (body or b""))
        await _within(writer.drain(), read_timeout, LoopbackFailure)
        return await read_answer(reader, read_timeout)
    except (OSError, ValueError) as exc:  # reset, broken pipe; a line over the limit
        raise LoopbackFailure(f"the exchange failed: {exc!r}") from exc
    finally:
        writer.close()
        with suppress(OSError):
            await writer.wait_closed()


def request_head(method: str, endpoint: Endpoint, headers: Mapping[str, str],
                 body: bytes | None) -> bytes:
    """The request line and headers: the caller's, and what framing the request takes.
    LoopbackFailure (before anything is sent) for a header that may not go out as it is."""
    given = {name.lower(): (name, value) for name, value in headers.items()}
    if OWN_HEADERS & given.keys():
        raise LoopbackFailure("a header this module writes itself was given")
    fields = {"accept": ("Accept", "*/*"), "accept-encoding": ("Accept-Encoding", "identity")}
    fields |= given
    fields["connection"] = ("Connection", "close")
    if body is not None:
        fields["content-length"] = ("Content-Length", str(len(body)))
    lines = [f"{method} {endpoint.target} HTTP/1.1", f"Host: {endpoint.authority}"]
    for name, value in fields.values():
        if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
            raise LoopbackFailure("a header that cannot be sent as it is")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


async def read_answer(reader: asyncio.StreamReader, timeout: float) -> Answer:
    """The status, headers and body of one answer, read to its end."""
    status = await read_status(reader, timeout)
    headers = await read_headers(reader, timeout)
    if headers.get("content-encoding", "identity").lower() != "identity":
        raise LoopbackFailure("a compressed answer")
    return Answer(status, headers, await read_body(reader, status, headers, timeout))


async def read_status(reader: asyncio.StreamReader, timeout: float) -> int:
    line = await _within(reader.readline(), timeout)
    found = _STATUS_LINE.fullmatch(line)
    if found is None:
        raise LoopbackFailure("no HTTP status line" if line else "closed without answering")
    status = int(found.group(1))
    if status < 200:  # an interim answer (100 Continue, ...): the full client reads those
        raise LoopbackFailure(f"an interim answer ({status})")
    return status


async def read_headers(reader: asyncio.StreamReader, timeout: float) -> dict[str, str]:
    """The header fields up to the blank line, decoded as Latin-1 as HTTP/1.1 defines them."""
    headers: dict[str, str] = {}
    size = 0
    while True:
        line = await _within(reader.readline(), timeout)
        size += len(line)
        if not line.endswith(b"\n") or size > HEAD_LIMIT:
            raise LoopbackFailure("the headers were cut off or too long")
        text = line.decode("latin-1").rstrip("\r\n")
        if not text:
            return headers
        name, colon, value = text.partition(":")
        if not colon or not _TOKEN.fullmatch(name):  # also a folded line (it starts with a space)
            raise LoopbackFailure("a header line that is not `name: value`")
        key, value = name.lower(), value.strip(" \t")
        headers[key] = f"{headers[key]}, {value}" if key in headers else value


async def read_body(reader: asyncio.StreamReader, status: int, headers: Mapping[str, str],
                    timeout: float) -> bytes:
    """The body as its headers frame it: chunks, a length, or up to the connection's end."""
    if status in (204, 304):
        return b""
    coding = headers.get("transfer-encoding")
    if coding is not None:
        if coding.strip().lower() != "chunked":
            raise LoopbackFailure(f"a transfer coding this module does not read ({coding})")
        return await read_chunked(reader, timeout)
    length = headers.get("content-length")
    if length is None:
        return await read_to_end(reader, timeout)
    return await read_exactly(reader, content_length(length), timeout)


def content_length(value: str) -> int:
    """The length a Content-Length header states (repeated, all its values must agree)."""
    values = {piece.strip() for piece in value.split(",")}
    if len(values) != 1 or not (length := values.pop()).isdigit():
        raise LoopbackFailure(f"an unreadable Content-Length ({value})")
    if int(length) > BODY_LIMIT:
        raise LoopbackFailure("a body longer than this module reads")
    return int(length)


async def read_exactly(reader: asyncio.StreamReader, size: int, timeout: float) -> bytes:
    pieces: list[bytes] = []
    left = size
    while left:
        piece = await _within(reader.read(min(left, READ_SIZE)), timeout)
        if not piece:
            raise LoopbackFailure("closed in the middle of the answer")
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


async def read_to_end(reader: asyncio.StreamReader, timeout: float) -> bytes:
    pieces: list[bytes] = []
    size = 0
    while piece := await _within(reader.read(READ_SIZE), timeout):
        pieces.append(piece)
        size += len(piece)
        if size > BODY_LIMIT:
            raise LoopbackFailure("a body longer than this module reads")
    return b"".join(pieces)


async def read_chunked(reader: asyncio.StreamReader, timeout: float) -> bytes:
    """A chunked body: each chunk's size line (extensions after `;` ignored), its bytes and
    line end, up to the empty chunk, then the trailer fields (read and dropped)."""
    pieces: list[bytes] = []
    size = 0
    while chunk := await chunk_size(reader, timeout):
        size += chunk
        if size > BODY_LIMIT:
            raise LoopbackFailure("a body longer than this module reads")
        pieces.append(await read_exactly(reader, chunk, timeout))
        if await _within(reader.readline(), timeout) not in (b"\r\n", b"\n"):
            raise LoopbackFailure("a chunk longer than its size said")
    await read_headers(reader, timeout)
    return b"".join(pieces)


async def chunk_size(reader: asyncio.StreamReader, timeout: float) -> int:
    line = await _within(reader.readline(), timeout)
    digits = line.split(b";", 1)[0].strip()
    if not line.endswith(b"\n") or not digits or digits.strip(b"0123456789abcdefABCDEF"):
        raise LoopbackFailure("an unreadable chunk size" if line else "closed in the middle of the answer")
    return int(digits, 16)


async def _within(step: Awaitable[T], seconds: float,
                  failure: type[LoopbackFailure] = LoopbackTimeout) -> T:
    """`step`'s result, or `failure` when it takes longer than `seconds`."""
    try:
        return await asyncio.wait_for(step, seconds)
    except asyncio.TimeoutError:
        raise failure(f"nothing within {seconds:g} s") from None
