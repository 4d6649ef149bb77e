"""Retries of rate-limited and overloaded requests: the policy, Retry-After, and the
one place in the transport where they happen (checked against the local fake server)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from fakeserver import FakeServer, Reply

from tether.core.messages import Message, TextDelta
from tether.providers import create_provider, provider_class
from tether.providers._http import parse_retry_after
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.ollama import OllamaProvider
from tether.providers.openai import OpenAIProvider
from tether.providers.retry import (
    RetryPolicy,
    gave_up,
    is_retryable,
    retry_after_from,
    retry_after_seconds,
)
from tether.store.config import Settings

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=timezone.utc)


class Sleeper:
    """Records each wait instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def policy(sleeper: Sleeper, **kwargs) -> RetryPolicy:  # noqa: ANN003
    return RetryPolicy(sleep=sleeper, random=lambda: 0.5, **kwargs)


async def collect(provider, model: str = "m") -> list:  # noqa: ANN001
    return [e async for e in provider.stream([Message.user("hi")], None, RequestOptions(model))]


# ---------------------------------------------------------------- the policy


def test_backoff_grows_exponentially_with_jitter_and_a_ceiling():
    rate_limited = ProviderError("slow down", "rate_limit", 429)
    p = RetryPolicy(max_retries=10, base_delay=1.0, max_delay=8.0, jitter=0.5, random=lambda: 1.0)
    waits = [p.wait_before_retry(rate_limited, n) for n in range(5)]
    assert waits == [1.5, 3.0, 6.0, 12.0, 12.0]  # 1, 2, 4, 8, 8 plus half again


def test_jitter_spreads_the_waits():
    overloaded = ProviderError("busy", "overloaded", 529)
    low = RetryPolicy(random=lambda: 0.0).wait_before_retry(overloaded, 2)
    high = RetryPolicy(random=lambda: 0.99).wait_before_retry(overloaded, 2)
    assert low == 4.0 and 4.0 < high < 5.0


def test_retry_after_from_the_server_wins():
    error = ProviderError("slow down", "rate_limit", 429, retry_after=7.0)
    assert RetryPolicy().wait_before_retry(error, 0) == 7.0


def test_a_very_long_retry_after_is_not_waited_out():
    error = ProviderError("come back tomorrow", "rate_limit", 429, retry_after=86400)
    assert RetryPolicy(max_wait=120).wait_before_retry(error, 0) is None


def test_the_number_of_retries_is_bounded():
    error = ProviderError("busy", "overloaded", 503)
    p = RetryPolicy(max_retries=2)
    assert p.wait_before_retry(error, 1) is not None
    assert p.wait_before_retry(error, 2) is None


@pytest.mark.parametrize(
    ("kind", "status", "retryable"),
    [
        ("rate_limit", 429, True),
        ("overloaded", 529, True),
        ("overloaded", 503, True),
        ("overloaded", None, True),  # an overloaded_error event without a status
        ("api", 500, False),
        ("auth", 401, False),
        ("connection", None, False),
        ("stream", None, False),
    ],
)
def test_only_not_now_answers_are_retried(kind, status, retryable):
    assert is_retryable(ProviderError("x", kind, status)) is retryable


def test_gave_up_says_how_often_it_tried_and_keeps_the_kind():
    error = gave_up(ProviderError("X is overloaded.", "overloaded", 529), 3)
    assert str(error) == "X is overloaded. Gave up after 3 retries."
    assert (error.kind, error.status) == ("overloaded", 529)
    assert gave_up(ProviderError("once", "overloaded"), 1).args[0].endswith("after 1 retry.")


# ---------------------------------------------------------------- Retry-After


def test_retry_after_in_seconds():
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds("-3") == 0.0


def test_retry_after_as_an_http_date():
    later = format_datetime(NOW + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds(later, now=NOW) == 30.0
    earlier = format_datetime(NOW - timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds(earlier, now=NOW) == 0.0


@pytest.mark.parametrize("value", [None, "", "soon", "Thu, 99 Foo 2025"])
def test_unreadable_retry_after_is_ignored(value):
    assert retry_after_seconds(value, now=NOW) is None


def test_other_ways_servers_say_how_long_to_wait():
    assert retry_after_from({"retry-after-ms": "1500"}) == 1.5
    google = '{"error": {"details": [{"@type": "RetryInfo", "retryDelay": "37s"}]}}'
    assert retry_after_from({}, google) == 37.0
    assert retry_after_from({"retry-after": "2"}, google) == 2.0  # the header wins
    assert parse_retry_after({}) is None


# ---------------------------------------------------------------- in the transport


async def test_rate_limit_is_retried_after_the_servers_wait_with_a_notice():
    sleeper, notices = Sleeper(), []
    with FakeServer([Reply(status=429, retry_after=7), Reply(text="ok")]) as server:
        provider = OpenAIProvider(server.url + "/v1", retry=policy(sleeper), notice=notices.append)
        events = await collect(provider)
        await provider.aclose()
        assert len(server.bodies("/v1/chat/completions")) == 2
    assert TextDelta("ok") in events
    assert sleeper.waits == [7.0]
    assert notices == [
        "the OpenAI-compatible API is rate limiting requests (429); retrying in 7 s (1/4)."
    ]


async def test_overloaded_is_retried_with_backoff_then_a_clear_error():
    sleeper, notices = Sleeper(), []
    with FakeServer() as server:
        server.default_reply = Reply(status=529, error_message="Overloaded")
        provider = OllamaProvider(
            server.url, retry=policy(sleeper, max_retries=3, jitter=0.0), notice=notices.append
        )
        with pytest.raises(ProviderError) as info:
            await collect(provider)
        await provider.aclose()
        assert len(server.bodies("/api/chat")) == 4  # the first try and three retries
    assert sleeper.waits == [1.0, 2.0, 4.0]
    assert len(notices) == 3 and notices[-1].endswith("(3/3).")
    assert info.value.kind == "overloaded" and info.value.status == 529
    assert str(info.value).endswith("Gave up after 3 retries.")
    assert "Overloaded" in str(info.value)


async def test_503_is_retried_too():
    sleeper = Sleeper()
    with FakeServer([Reply(status=503), Reply(text="back")]) as server:
        provider = OllamaProvider(server.url, retry=policy(sleeper))
        events = await collect(provider)
        await provider.aclose()
    assert TextDelta("back") in events and len(sleeper.waits) == 1


@pytest.mark.parametrize("status", [400, 401, 404, 500])
async def test_other_errors_are_not_retried(status):
    sleeper = Sleeper()
    with FakeServer([Reply(status=status), Reply(text="never")]) as server:
        provider = OllamaProvider(server.url, retry=policy(sleeper))
        with pytest.raises(ProviderError) as info:
            await collect(provider)
        await provider.aclose()
        assert len(server.bodies("/api/chat")) == 1
    assert sleeper.waits == [] and "Gave up" not in str(info.value)


async def test_a_dropped_stream_is_never_sent_again():
    sleeper = Sleeper()
    with FakeServer(
        [Reply(text="Hello world", chunk_size=2, drop_after=2), Reply(text="again")]
    ) as s:
        provider = OllamaProvider(s.url, retry=policy(sleeper))
        events: list = []
        with pytest.raises(ProviderError) as info:
            async for event in provider.stream([Message.user("hi")], None, RequestOptions("m")):
                events.append(event)
        await provider.aclose()
        assert len(s.bodies("/api/chat")) == 1
    assert events == [TextDelta("He"), TextDelta("ll")]
    assert info.value.kind == "stream" and sleeper.waits == []


@pytest.mark.parametrize("name", ["ollama", "openai", "anthropic", "gemini"])
async def test_a_connection_closed_before_any_answer_is_sent_again_once(name):
    sleeper = Sleeper()
    with FakeServer([Reply(hang_up=True), Reply(text="again")]) as server:
        url = server.url + "/v1" if name == "openai" else server.url
        provider = provider_class(name)(url, retry=policy(sleeper))
        events = await collect(provider)
        await provider.aclose()
        assert len(server.requests) == 2
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "again"
    assert sleeper.waits == [0.0]


async def test_a_server_that_keeps_closing_before_answering_is_reported_after_one_retry():
    sleeper = Sleeper()
    with FakeServer([Reply(hang_up=True), Reply(hang_up=True), Reply(text="never")]) as server:
        provider = OllamaProvider(server.url, retry=policy(sleeper))
        with pytest.raises(ProviderError, match="closed the connection without answering") as info:
            await collect(provider)
        await provider.aclose()
        assert len(server.requests) == 2
    assert "Gave up after 1 retry" in str(info.value) and sleeper.waits == [0.0]


async def test_a_wait_too_long_is_reported_at_once():
    sleeper = Sleeper()
    with FakeServer([Reply(status=429, retry_after=3600)]) as server:
        provider = OllamaProvider(server.url, retry=policy(sleeper))
        with pytest.raises(ProviderError, match="Retry after 3600 s") as info:
            await collect(provider)
        await provider.aclose()
    assert sleeper.waits == [] and info.value.retry_after == 3600


async def test_without_a_policy_nothing_is_retried():
    with FakeServer([Reply(status=429, retry_after=1), Reply(text="never")]) as server:
        provider = OllamaProvider(server.url)
        with pytest.raises(ProviderError):
            await collect(provider)
        await provider.aclose()
        assert len(server.bodies("/api/chat")) == 1


async def test_create_provider_uses_max_retries_and_passes_the_notice_through():
    sleeper_calls: list[str] = []
    with FakeServer([Reply(status=429, retry_after=0), Reply(status=429, retry_after=0)]) as s:
        settings = Settings(ollama_host=s.url, max_retries=1)
        provider = create_provider(settings, {}, notice=sleeper_calls.append)
        assert provider._http.retry.max_retries == 1
        with pytest.raises(ProviderError, match="Gave up after 1 retry"):
            await collect(provider)
        await provider.aclose()
        assert len(s.bodies("/api/chat")) == 2
    assert len(sleeper_calls) == 1 and "retrying in 0 s (1/1)" in sleeper_calls[0]
