"""The request a provider sends a model server on this machine without httpx (`loopback_http`):
what it sends, the answers it reads, and the transport's falling back to httpx, which then
says what went wrong in its usual words. Every server here is bound to 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from fakeserver import FakeServer, closed_port

from tether.providers._http import HttpTransport
from tether.providers.base import ProviderError
from tether.providers.loopback_http import (
    Answer,
    Endpoint,
    LoopbackFailure,
    LoopbackTimeout,
    exchange,
    loopback_endpoint,
    request_head,
)

KEY = "sk-test-abcdefghijklmnop"
JSON_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
TINY = 0.01
"""Seconds allowed to a server that never answers."""


class Scripted:
    """A raw HTTP server in the test's event loop: the nth connection is sent the nth answer
    (the last one again after that) as its bytes are, then closed; None answers nothing until
    the client hangs up. Each request's bytes are kept in `requests`."""

    def __init__(self, *answers: bytes | None) -> None:
        self.answers = answers
        self.requests: list[bytes] = []
        self.url = ""

    async def __aenter__(self) -> Scripted:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answer = self.answers[min(len(self.requests), len(self.answers) - 1)]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            self.requests.append(head + await reader.readexactly(length))
            if answer is None:
                await reader.read()  # until the client gives up
            else:
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def endpoint_of(url: str) -> Endpoint:
    endpoint = loopback_endpoint(url)
    assert endpoint is not None
    return endpoint


async def get(url: str, *, timeout: float = 5) -> Answer:
    return await exchange(endpoint_of(url), "GET", {}, None, connect_timeout=timeout,
                          read_timeout=timeout)


def transport(url: str, **options: float) -> HttpTransport:
    return HttpTransport(url, label="the test API", connect_hint="Check the URL.",
                         auth_hint="Check the key.", api_key=KEY, **options)


@pytest.fixture
async def via_httpx() -> AsyncIterator[list[HttpTransport]]:
    """Transports whose httpx client is made first, so they never take the loopback path:
    what httpx's path says, to compare with. Closed after the test."""
    made: list[HttpTransport] = []
    yield made
    for each in made:
        await each.aclose()


def httpx_transport(made: list[HttpTransport], url: str, **options: float) -> HttpTransport:
    plain = transport(url, **options)
    plain._http()
    made.append(plain)
    return plain


async def same_failure(made: list[HttpTransport], url: str, timeout: float | None = 5,
                       **options: float) -> ProviderError:
    """What asking `url` for its models raises on the loopback path, having checked that
    httpx's path raises it in the same words."""
    with pytest.raises(ProviderError) as plain:
        await transport(url, **options).get_json("/v1/models", timeout=timeout)
    with pytest.raises(ProviderError) as httpx_words:
        await httpx_transport(made, url, **options).get_json("/v1/models", timeout=timeout)
    assert str(plain.value) == str(httpx_words.value)
    return plain.value


# ---------------------------------------------------------------- which requests go this way


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1/models", "http://localhost/api/show",
                                 "http://[::1]:11434/api/show?verbose=false",
                                 "http://127.0.0.1:8080/v1/models/org%2Fname..q4"])
def test_plain_http_to_a_loopback_host_goes_without_httpx(url: str) -> None:
    assert loopback_endpoint(url) is not None


@pytest.mark.parametrize("url", [
    "https://127.0.0.1:8080/v1/models",  # TLS is httpx's
    "http://192.168.1.20:11434/api/show",  # another machine
    "http://api.example.com/v1/models",
    "http://user:pass@127.0.0.1:8080/v1/models",  # httpx would send the user and password
    "http://127.0.0.1:8080/v1/a model",  # httpx would quote the path
    "http://127.0.0.1:8080/v1/modèles",
    "http://127.0.0.1:8080/v1/{models}",
    "http://127.0.0.1:8080/v1/../models",  # httpx would resolve the dots
    "http://127.0.0.1:99999/v1/models",  # httpx says what is wrong with the URL
])
def test_anything_else_is_left_to_httpx(url: str) -> None:
    assert loopback_endpoint(url) is None


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_proxy_set_for_http_leaves_the_request_to_httpx(
        variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variable, "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # httpx decides what that means
    assert loopback_endpoint("http://127.0.0.1:8080/v1/models") is None


def test_the_request_names_the_host_asks_for_no_compression_and_closes() -> None:
    endpoint = endpoint_of("http://[::1]:8080/v1/models?x=1")
    head = request_head("POST", endpoint, {"Authorization": "Bearer k", "Accept": "application/json"},
                        b"{}").decode("ascii")
    assert head.startswith("POST /v1/models?x=1 HTTP/1.1\r\nHost: [::1]:8080\r\n")
    assert head.endswith("\r\n\r\n")
    fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:-2])
    assert fields == {"Host": "[::1]:8080", "Accept": "application/json",
                      "Accept-Encoding": "identity", "Authorization": "Bearer k",
                      "Connection": "close", "Content-Length": "2"}


@pytest.mark.parametrize("headers", [
    {"X-Note": "one\r\nInjected: two"},  # would add a header of its own
    {"Authorization": "Bearer “key”"},  # httpx says a header cannot be sent; let it
    {"Bad Name": "x"},
    {"Content-Length": "5"},  # framing is this module's
])
def test_a_header_that_cannot_go_out_as_it_is_goes_to_httpx(headers: dict[str, str]) -> None:
    with pytest.raises(LoopbackFailure):
        request_head("GET", endpoint_of("http://127.0.0.1/v1/models"), headers, None)


# ---------------------------------------------------------------- answers read


async def test_a_json_answer_from_the_fake_server_with_the_provider_s_headers(
        fake_server: FakeServer) -> None:
    answer = await exchange(endpoint_of(fake_server.url + "/api/show"), "POST",
                            {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
                            b'{"model": "fake-coder:7b"}', connect_timeout=5, read_timeout=5)
    assert answer.status == 200 and answer.headers["content-type"] == "application/json"
    assert "tools" in json.loads(answer.body)["capabilities"]
    assert fake_server.requests == [("/api/show", {"model": "fake-coder:7b"})]
    sent = fake_server.headers[0]
    assert sent["authorization"] == f"Bearer {KEY}" and sent["connection"] == "close"


async def test_a_chunked_answer_is_joined_its_extensions_and_trailers_dropped() -> None:
    body = (b"7;name=value\r\n{\"a\": \r\n"  # a chunk extension
            b"A\r\n[1, 2, 3]}\r\n"  # upper-case hex
            b"0\r\nX-Trailer: yes\r\n\r\n")
    async with Scripted(JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + body) as server:
        answer = await get(server.url + "/v1/models")
    assert json.loads(answer.body) == {"a": [1, 2, 3]}


async def test_an_answer_without_a_length_is_read_to_the_connection_s_end() -> None:
    async with Scripted(b"HTTP/1.0 200 OK\r\n\r\n{\"data\": []}") as server:
        answer = await get(server.url + "/v1/models")
    assert answer.body == b'{"data": []}'


async def test_bytes_that_are_not_utf_8_come_back_as_they_were_sent() -> None:
    body = b'{"name": "caf\xe9 \xff"}'
    head = b"HTTP/1.1 200 OK\r\nX-Server: caf\xe9\r\nContent-Length: %d\r\n\r\n" % len(body)
    async with Scripted(head + body) as server:
        answer = await get(server.url + "/v1/models")
    assert answer.body == body
    assert answer.headers["x-server"] == "café"  # header bytes are Latin-1


async def test_an_error_status_is_an_answer_like_any_other() -> None:
    body = b'{"error": "no such model"}'
    async with Scripted(b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n" % len(body)
                        + body) as server:
        answer = await get(server.url + "/api/show")
    assert (answer.status, answer.body) == (404, body)


async def test_a_server_that_never_answers_is_a_timeout() -> None:
    async with Scripted(None) as server:
        with pytest.raises(LoopbackTimeout):
            await get(server.url + "/v1/models", timeout=TINY)
    assert len(server.requests) == 1  # the request went out


@pytest.mark.parametrize("answer", [
    b"",  # closed without answering
    JSON_HEAD + b"Content-Length: 50\r\n\r\n{\"cut\"",  # closed in the middle of the body
    JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"cut",  # and of a chunk
    JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",  # a chunk size that is no number
    JSON_HEAD + b"Content-Length: 2, 3\r\n\r\n{}",  # lengths that disagree
    JSON_HEAD + b"Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}",  # compressed
    JSON_HEAD + b"Transfer-Encoding: gzip, chunked\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
    b"SSH-2.0-OpenSSH_9.6\r\n",  # not HTTP at all
    JSON_HEAD + b" folded: header\r\n\r\n",
    JSON_HEAD + b"X-Long: " + b"a" * 70_000 + b"\r\n\r\n",
])
async def test_what_is_not_a_clean_answer_is_a_failure(answer: bytes) -> None:
    async with Scripted(answer) as server:
        with pytest.raises(LoopbackFailure) as failure:
            await get(server.url + "/v1/models")
    assert not isinstance(failure.value, LoopbackTimeout)


async def test_a_refused_connection_is_a_failure() -> None:
    with pytest.raises(LoopbackFailure):
        await get(f"http://127.0.0.1:{closed_port()}/v1/models")


# ---------------------------------------------------------------- the transport


async def test_the_transport_asks_a_loopback_server_without_making_its_httpx_client(
        fake_server: FakeServer) -> None:
    asking = transport(fake_server.url + "/v1")
    data = await asking.get_json("/models", timeout=1)
    assert [m["id"] for m in data["data"]] == ["fake-coder:7b", "fake-chat:1b"]
    assert asking._client is None
    assert fake_server.headers[0]["authorization"] == f"Bearer {KEY}"
    await asking.aclose()


async def test_an_error_status_reads_as_httpx_s_path_words_it(
        via_httpx: list[HttpTransport]) -> None:
    body = b'{"error": {"message": "model is loading"}}'
    answer = (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    async with Scripted(answer) as server:
        failure = await same_failure(via_httpx, server.url)
    assert (failure.kind, failure.status, failure.retry_after) == ("overloaded", 503, 7)
    assert len(server.requests) == 2  # once each: the error was not asked again


async def test_a_server_that_never_answers_is_reported_after_one_wait(
        via_httpx: list[HttpTransport]) -> None:
    async with Scripted(None) as server:
        failure = await same_failure(via_httpx, server.url, None, read_timeout=TINY)
    assert len(server.requests) == 2  # once each: the silent one was not asked again with httpx
    assert "stopped responding" in str(failure) and failure.kind == "stream"


async def test_a_closed_connection_is_asked_again_with_httpx_which_says_so() -> None:
    async with Scripted(b"") as server:
        asking = transport(server.url)
        with pytest.raises(ProviderError, match="closed the connection without answering"):
            await asking.get_json("/v1/models", timeout=5)
        await asking.aclose()
    assert len(server.requests) == 2  # the loopback path's, then httpx's


async def test_a_closed_connection_then_an_answer_gives_the_answer() -> None:
    ok = JSON_HEAD + b"Content-Length: 12\r\n\r\n{\"ok\": true}"
    async with Scripted(b"", ok) as server:
        asking = transport(server.url)
        assert await asking.get_json("/v1/models", timeout=5) == {"ok": True}
        await asking.aclose()


async def test_a_redirect_is_left_to_httpx(via_httpx: list[HttpTransport]) -> None:
    moved = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/models\r\nContent-Length: 0\r\n\r\n"
    async with Scripted(moved) as server:
        failure = await same_failure(via_httpx, server.url)
    assert "not JSON" in str(failure)
    assert len(server.requests) == 3  # the loopback path's, httpx's after it; httpx's alone


async def test_an_answer_that_is_not_utf_8_is_read_as_httpx_s_path_reads_it(
        via_httpx: list[HttpTransport]) -> None:
    answer = JSON_HEAD + b'Content-Length: 14\r\n\r\n{"name": "\xff\xfe"}'
    async with Scripted(answer) as server:
        plain = await transport(server.url).get_json("/v1/models", timeout=5)
        through_httpx = await httpx_transport(via_httpx, server.url).get_json("/v1/models")
    assert plain == through_httpx == {"name": "\ufffd\ufffd"}


async def test_a_refused_connection_reads_as_httpx_s_path_words_it(
        via_httpx: list[HttpTransport]) -> None:
    failure = await same_failure(via_httpx, f"http://127.0.0.1:{closed_port()}")
    assert "connection refused" in str(failure)


async def test_once_the_httpx_client_is_made_requests_go_through_it(
        fake_server: FakeServer) -> None:
    asking = transport(fake_server.url + "/v1")
    asking._http()
    await asking.get_json("/models")
    await asking.get_json("/models")
    await asking.aclose()
    assert fake_server.connections == 1  # one kept connection, not one a request
