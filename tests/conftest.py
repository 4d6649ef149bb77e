"""Shared test fixtures."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from fakeserver import FakeServer


def pytest_configure(config: pytest.Config) -> None:
    """Commands the tests start get SIGINT's default action. A test run launched in the
    background of a script (`pytest &`) inherits SIGINT ignored, and an ignored signal stays
    ignored across exec, so every tether the tests start would shrug off the Ctrl-C that the
    interrupt tests send. A handler of our own is reset to the default at exec."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` means one worker per core, up to MAX_WORKERS: most of the suite's time is
    spent waiting on real subprocesses and pseudo-terminals, and past a few workers the start-up
    of each one costs more than it saves."""
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    """A started FakeServer (empty script) that is stopped after the test."""
    with FakeServer() as server:
        yield server


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    """A started FakeServer listing the models its module's SERVER_MODELS names (the default
    list when it names none); stopped after the test. A module that needs more defines its own."""
    with FakeServer(models=getattr(request.module, "SERVER_MODELS", None)) as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder, `project` under the test's tmp_path (a module whose project
    needs files defines its own)."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A TETHER_HOME of the test's own (not created: tether makes it when it needs it)."""
    return tmp_path / "home"


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every git a test runs, tether's or the test's own, sees no user or system config and
    no repository outside the test's folder, and commits as a fixed identity.

    Autouse, so no test that reaches git (most of them, through the undo snapshots and the
    project map) can forget it; one copy, so no two tests isolate differently.
    """
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    # Set by a calling git (a hook, `git rebase -x`) these would point every test elsewhere.
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_COUNT",
                "GIT_CONFIG_PARAMETERS", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"):
        monkeypatch.delenv(var, raising=False)
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test User")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "user@example.com")


@pytest.fixture
async def started() -> AsyncIterator[list]:
    """Runtimes with MCP servers a test starts (mcp_helpers.start); every one is closed,
    its servers stopped, afterwards."""
    runtimes: list = []
    yield runtimes
    for runtime in runtimes:
        await runtime.aclose()
