"""Shared test fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeServer


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    """A started FakeServer (empty script) that is stopped after the test."""
    with FakeServer() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A TETHER_HOME of the test's own (not created: tether makes it when it needs it)."""
    return tmp_path / "home"
