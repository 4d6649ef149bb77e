"""A folder search by ripgrep and by the Python fallback: the same matches for the same query
over the same files (ignore files, deny rules, symlinks leading out, the size limit, the
cap), and no stop on the clock for a search that makes progress."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tether.core.toolspec import ToolContext
from tether.tools import file_search, ripgrep
from tether.tools.file_search import search_in_file
from tether.tools.params import SearchInFileParams

ENGINES = ["python", "rg"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which engine searches folders in the test: rg (skipped when not installed) or Python."""
    if request.param == "rg":
        if ripgrep.ripgrep() is None:
            pytest.skip("rg is not installed: the ripgrep side cannot be compared")
    else:
        monkeypatch.setattr(ripgrep, "ripgrep", lambda: None)
    return str(request.param)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "app.py").write_text("PORT = 7341\nimport os\nport_name = 'x'\n")
    (root / "src" / "deep" / "more.py").write_text("def report():\n    return 'Report'\n" * 3)
    (root / "notes.txt").write_text("ports are listed here\nnothing\nSupport: yes\n")
    (root / "ignored.log").write_text("port in an ignored file\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "secret.txt").write_text("port behind a deny rule\n")
    (root / "data.bin").write_bytes(b"port\0binary\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("port outside the project\n")
    (root / "link.txt").symlink_to(outside)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def search(root: Path, pattern: str, path: str = ".") -> str:
    ctx = ToolContext(root=root, may_read=lambda p: p.name != "secret.txt")
    return search_in_file(SearchInFileParams(pattern=pattern, path=path), ctx).text


def both(monkeypatch: pytest.MonkeyPatch, root: Path, pattern: str) -> tuple[str, str]:
    """The Python search's answer and rg's (the test is skipped without rg)."""
    if ripgrep.ripgrep() is None:
        pytest.skip("rg is not installed: the ripgrep side cannot be compared")
    with_rg = search(root, pattern)
    monkeypatch.setattr(ripgrep, "ripgrep", lambda: None)
    return search(root, pattern), with_rg


@pytest.mark.parametrize("pattern", ["port", "Report", r"^\s+return", "nothing|yes$", "zzz_absent"])
def test_rg_and_python_give_the_same_answer(
    tree: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    python, rg = both(monkeypatch, tree, pattern)
    assert python == rg


def test_the_rules_limit_both_engines(tree: Path, engine: str) -> None:
    out = search(tree, "port")
    assert "src/app.py:1: PORT = 7341" in out and "notes.txt:1: ports are listed here" in out
    for left_out in ("ignored.log", "secret.txt", "outside the project", "data.bin:"):
        assert left_out not in out
    assert "1 binary" in out and "1 behind symlinks leading outside" in out
    assert "1 a deny rule keeps from reading" in out


def test_the_cap_ends_a_big_search_with_a_note(tmp_path: Path, engine: str) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for n in range(30):
        (root / f"f{n:02}.txt").write_text("hit\n" * 10)
    lines = search(root, "hit").splitlines()
    assert lines[0] == "f00.txt:1: hit" and lines[199] == "f19.txt:10: hit"
    assert lines[200].startswith("[stopped after 200 matches")


def test_a_folder_search_has_no_clock(tree: Path, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a file whose matching makes no progress stops the search; a search of many
    files that each finish is never cut by the clock."""
    monkeypatch.setattr(file_search, "FILE_TIME_LIMIT", 60.0)
    out = search(tree, "return")
    assert "stopped" not in out and out.count("src/deep/more.py:") == 3


def test_a_pattern_only_python_runs_falls_back_to_python(tree: Path) -> None:
    """rg has no look-behind: the search goes on in Python, whatever is installed."""
    out = search(tree, r"(?<=PORT = )\d+")
    assert out.startswith("src/app.py:1: PORT = 7341")


def test_rg_reads_only_the_listed_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rg is handed tether's list and told to read no config or ignore file of its own."""
    if ripgrep.ripgrep() is None:
        pytest.skip("rg is not installed")
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.txt").write_text("needle\n")
    (root / ".ignore").write_text("a.txt\n")  # rg's own ignore file: must not hide a.txt
    config = tmp_path / "rgrc"
    config.write_text("--files-without-match\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", os.fspath(config))
    assert search(root, "needle").splitlines()[0] == "a.txt:1: needle"
