"""Shared test fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakeserver import FakeServer


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    """A started FakeServer (empty script) that is stopped after the test."""
    with FakeServer() as server:
        yield server
