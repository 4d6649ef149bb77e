"""How a failed request reads: one line, no secret in it, the reason a connection
failed, and the wording for each kind of failure of one endpoint."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import urlsplit, urlunsplit

from ..core.textclip import clip_words
from .base import ProviderError
from .retry import retry_after_from

SERVER_MESSAGE_LIMIT = 300
UNREADABLE_SHOWN = 60
"""How much of an unreadable line of an answer an error quotes."""


_SECRET_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_*.\-]{6,}"),  # OpenAI-style keys, even when partly masked
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),  # Google-style keys
    re.compile(r"Bearer\s+\S+", re.IGNORECASE),
)


# A shorter "key" is a placeholder such as the "x" local servers accept; hiding
# every occurrence of it would garble the message ("does not e[redacted]ist").
REDACT_MIN_SECRET = 8


def redact(text: str, secret: str | None = None) -> str:
    """Remove anything that looks like a key: servers sometimes echo part of one."""
    if secret and len(secret) >= REDACT_MIN_SECRET:
        text = _redact_cut_secret(text.replace(secret, "[redacted]"), secret)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub("[redacted]", text)
    return text


_CUT_WORD = re.compile(r"(\S+)…")
_CUT_SECRET_MIN = 4


def _redact_cut_secret(text: str, secret: str) -> str:
    """Remove the start of `secret` where `one_line` cut the text off in the middle of it."""

    def cut(match: re.Match[str]) -> str:
        word = match.group(1)
        for start in range(max(0, len(word) - len(secret)), len(word) - _CUT_SECRET_MIN + 1):
            if secret.startswith(word[start:]):
                return word[:start] + "[redacted]…"
        return match.group(0)

    return _CUT_WORD.sub(cut, text)


def one_line(text: str, limit: int = SERVER_MESSAGE_LIMIT) -> str:
    """`text` on one line, cut at a word when longer than `limit`."""
    return clip_words(" ".join(text.split()), limit)


def display_url(url: str) -> str:
    """The URL as shown to the user: no credentials, query or fragment. Never raises."""
    try:
        parts = urlsplit(url)
    except ValueError:  # malformed (an unclosed IPv6 bracket): cut the same parts by hand
        head = re.split(r"[?#]", url, maxsplit=1)[0]
        return re.sub(r"(?<=//)[^/]*@", "", head, count=1)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")) or url


def server_error_message(body: str) -> str:
    """The human part of an error body: `error.message`, an `error` string, or one line of
    a body that is not JSON (an HTML error page: its title)."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        return text_body_line(body)
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, dict):
        return body.strip()
    error = data.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))
    if isinstance(error, str):
        return error
    return str(data.get("message") or data.get("detail") or body.strip())


_HTML_START = re.compile(r"\s*(<!doctype html|<html|<head|<body|<\?xml|<h1|<title)", re.IGNORECASE)
_HTML_TITLE = re.compile(r"<(title|h1)[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
_HTML_HIDDEN = re.compile(r"<(script|style|head)[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]*>")


def text_body_line(body: str) -> str:
    """One line of an error body that is not JSON: a web page's title (or first heading,
    or first line of text), said to be a page, since an LLM API answers errors in JSON;
    otherwise the body's first non-blank line."""
    if not _HTML_START.match(body):
        return next((line.strip() for line in body.splitlines() if line.strip()), "")
    import html  # with its table of entities, only for an error page: not on every start

    found = _HTML_TITLE.search(body)
    text = found.group(2) if found else _HTML_TAG.sub("\n", _HTML_HIDDEN.sub("", body))
    line = next((ln for ln in html.unescape(_HTML_TAG.sub("", text)).splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    return f"a web page, not an API answer: {line}" if line else "a web page, not an API answer"


def status_phrase(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def parse_retry_after(headers: Mapping[str, str], body: str = "") -> float | None:
    """Seconds the server asked us to wait (header in seconds or as a date, or the body)."""
    return retry_after_from(headers, body)


@dataclass(frozen=True)
class StatusInfo:
    """A non-2xx answer, already reduced to what an error message needs."""

    status: int
    message: str
    retry_after: float | None = None


StatusDescriber = Callable[[StatusInfo], ProviderError]


def _exception_chain(exc: BaseException) -> list[BaseException]:
    """The exception and everything behind it (causes, contexts, grouped errors)."""
    seen: list[BaseException] = []
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        stack += [current.__cause__, current.__context__, *getattr(current, "exceptions", ())]
    return seen


def connect_failure_reason(exc: Exception, connect_timeout: float) -> str:
    """A few words on why a connection failed.

    httpx reports a refused connection as "All connection attempts failed";
    the real reason sits further down the exception chain.
    """
    import httpx  # loaded already: only a request made with it fails this way

    if isinstance(exc, httpx.ConnectTimeout):
        return f"connection timed out after {connect_timeout:g} s"
    if isinstance(exc, httpx.UnsupportedProtocol):
        return "invalid URL: it must start with http:// or https://"
    if isinstance(exc, httpx.InvalidURL):
        return f"invalid URL: {exc}"
    chain = _exception_chain(exc)
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "connection refused"
    if any(isinstance(e, socket.gaierror) for e in chain):
        return "host name not found"
    text = " ".join(str(e) for e in chain).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service" in text or "name resolution" in text or "nodename" in text:
        return "host name not found"
    if "unreachable" in text:
        return "network unreachable"
    return "connection failed"


@dataclass(frozen=True)
class TransportErrors:
    """The wording of every failure for one endpoint, each a one-line ProviderError."""

    label: str
    shown_url: str
    connect_hint: str
    auth_hint: str
    connect_timeout: float
    read_timeout: float
    api_key: str | None
    """Removed from any server text quoted in a message."""

    def status_error(self, info: StatusInfo) -> ProviderError:
        """The generic mapping of an HTTP error status to a one-line ProviderError."""
        status, where = info.status, f"{self.label} at {self.shown_url}"
        message = info.message.removesuffix(f": {status_phrase(status)}")  # a page titled so
        detail = f"{status_phrase(status)}: {message}" if message else status_phrase(status)
        if status in (401, 403):
            return ProviderError(
                f"{where} rejected the request ({detail}). {self.auth_hint}", "auth", status
            )
        if status == 429:
            wait = f" Retry after {info.retry_after:g} s." if info.retry_after is not None else ""
            return ProviderError(
                f"{where} is rate limiting requests ({detail}).{wait}",
                "rate_limit",
                status,
                info.retry_after,
            )
        if status in (503, 529):
            return ProviderError(
                f"{where} is overloaded ({detail}); try again shortly.",
                "overloaded",
                status,
                info.retry_after,
            )
        return ProviderError(f"{where} returned an error ({detail}).", "api", status)

    def transport_error(self, exc: Exception, *, answer_started: bool) -> ProviderError:
        """An httpx failure (httpx is loaded: it raised `exc`) in one line."""
        import httpx

        where = f"{self.label} at {self.shown_url}"
        if isinstance(exc, httpx.ReadTimeout):
            return self.stopped_responding()
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
            if not answer_started:  # nothing of the answer was read: safe to send again
                return ProviderError(f"{where} closed the connection without answering.",
                                     "dropped")
            return ProviderError(f"{where} closed the connection in the middle of the answer.",
                                 "stream")
        if isinstance(exc, (httpx.WriteTimeout, httpx.PoolTimeout)):
            return ProviderError(f"{where} did not accept the request in time.", "connection")
        reason = connect_failure_reason(exc, self.connect_timeout)
        return ProviderError(f"cannot reach {where} ({reason}). {self.connect_hint}", "connection")

    def stopped_responding(self) -> ProviderError:
        """No answer, or no more of one, within the time allowed for a read."""
        return ProviderError(
            f"the model stopped responding for {self.read_timeout:g} s "
            f"({self.label} at {self.shown_url}); if it is just slow, raise request_timeout.",
            "stream",
        )

    def unexpected_error(self, exc: Exception, *, answer_started: bool) -> ProviderError:
        """A failure the network layer does not wrap as an httpx error (a port out of
        range, a header it cannot encode, ...): still one line, never a traceback."""
        where = f"{self.label} at {self.shown_url}"
        while getattr(exc, "exceptions", None):  # the real error inside a task group's
            exc = exc.exceptions[0]  # type: ignore[attr-defined]
        detail = one_line(redact(str(exc), self.api_key), 160).rstrip(".") or type(exc).__name__
        if answer_started:
            return ProviderError(
                f"reading the answer from {where} failed ({detail}).", "connection"
            )
        if isinstance(exc, UnicodeEncodeError):  # a local failure: nothing was sent
            # The body is cleaned before it is encoded (see _open), so this is a header:
            # they are ASCII/Latin-1, and usually a key was pasted with a typographic quote.
            what = "a request header (the API key?) holds a character that cannot be sent"
            return ProviderError(f"nothing was sent to {where}: {what} ({detail}).", "connection")
        return ProviderError(f"cannot reach {where} ({detail}). {self.connect_hint}", "connection")

    def incomplete_stream_error(self, received_valid_data: bool) -> ProviderError:
        """The stream ended cleanly but the answer never said it was finished."""
        where = f"{self.label} at {self.shown_url}"
        if not received_valid_data:
            return ProviderError(
                f"{where} sent no readable answer; is that URL really {self.label}?", "stream"
            )
        return ProviderError(f"{where} ended the answer before it was complete.", "stream")

    def unreadable_chunk_error(self, text: str, received_valid_data: bool) -> ProviderError:
        """A line of the answer that is not the JSON object it should be. Before anything
        readable it says the URL may be wrong; after, that the answer is not whole."""
        if not received_valid_data:
            return self.incomplete_stream_error(False)
        where = f"{self.label} at {self.shown_url}"
        shown = one_line(redact(text, self.api_key), UNREADABLE_SHOWN)
        return ProviderError(
            f"{where} sent a piece of the answer that is not valid JSON, so the answer is "
            f"incomplete: {shown}",
            "stream",
        )
