"""`tether help TOPIC` and `/help TOPIC`: a page of the docs in the terminal, read from the
copy inside the package; an unknown topic lists the topics; a closed pipe ends it quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeServer
from slash_context import FakeContext, make_context

from tether.ui.docs_pages import find_topic, topics

DOCS = Path(__file__).resolve().parents[1] / "docs"


def tether(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tether", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def test_a_topic_prints_its_page_whole() -> None:
    proc = tether("help", "safety")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == (DOCS / "safety.md").read_text()


def test_a_unique_start_of_a_name_is_enough() -> None:
    assert find_topic("skills") == "skills-and-instructions"
    assert find_topic("Small-Models.md") == "small-models"
    assert find_topic("c") is None  # chat and configuration: not one page
    assert tether("help", "skills").stdout.startswith("# Project instructions and skills\n")


def test_an_unknown_topic_lists_the_topics() -> None:
    proc = tether("help", "nosuch")
    assert proc.returncode == 2
    assert proc.stderr == "tether: no help topic 'nosuch'\n"
    assert proc.stdout == "topics: " + ", ".join(topics()) + "\n"
    alone = tether("help")
    assert alone.returncode == 0 and alone.stdout == proc.stdout


def test_a_closed_pipe_ends_it_quietly() -> None:
    """`tether help safety | head -1`: the reader left before the page was written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = tether("help", "safety", stdout=write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert proc.stderr == ""


def test_help_points_to_the_docs_with_one_line_a_flag() -> None:
    proc = subprocess.run([sys.executable, "-m", "tether", "--help"], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "80"}, timeout=60)
    assert proc.returncode == 0
    assert "tether help TOPIC" in proc.stdout or "tether help [TOPIC]" in proc.stdout
    flag_lines = [line for line in proc.stdout.splitlines() if line.startswith("  -")]
    assert flag_lines and all(len(line) <= 80 for line in proc.stdout.splitlines())
    assert all(len(line.split("  ", 2)) > 1 and line[26:].strip() for line in flag_lines), (
        "a flag whose help went to a line of its own")


@pytest.fixture
def ctx(server: FakeServer, project: Path, home: Path) -> Iterator[FakeContext]:
    yield make_context(server.url, project, home)


async def test_slash_help_topic_prints_the_page(ctx: FakeContext) -> None:
    await ctx.run("/help hooks")
    assert "# Hooks" in ctx.printed and "PreToolUse" in ctx.printed


async def test_slash_help_unknown_topic_lists_the_topics(ctx: FakeContext) -> None:
    await ctx.run("/help nosuch")
    assert ctx.said == [("No help topic 'nosuch'; topics: " + ", ".join(topics()) + ".", "warning")]
