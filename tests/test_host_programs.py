"""tether's own programs (git, bwrap, bash) never come from a folder a sandboxed command can write."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tether.host.git_guard import hardened_git
from tether.host.host_programs import host_path
from tether.safety.sandbox import Sandbox
from tether.safety.shell_session import ShellSessions


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose `.venv/bin` (first on PATH, as in an activated venv) holds a `git`,
    a `bwrap` and a `bash` that a sandboxed command could have written."""
    root = tmp_path / "proj"
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("git", "bwrap", "bash"):
        fake = bin_dir / name
        fake.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran-{name}\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}.{os.pathsep}{os.environ['PATH']}")
    return root


def test_git_is_not_taken_from_the_project(planted: Path) -> None:
    if shutil.which("git", path=os.pathsep.join(host_path(planted))) is None:
        pytest.skip("git is not installed")
    assert not hardened_git(planted).git.startswith(str(planted))


def test_bwrap_is_not_taken_from_the_project(planted: Path, tmp_path: Path) -> None:
    box = Sandbox("workspace-write", planted, tmp_path / "state")
    box.problem, box._probed = "", True  # as if probed: only the launch is looked at
    with box.launch(["true"], dict(os.environ)) as launch:
        launch.release()
    assert not launch.argv[0].startswith(str(planted)) and launch.argv[0] != "./bwrap"


async def test_an_unconfined_command_does_not_run_the_projects_bash(planted: Path, tmp_path: Path) -> None:
    shells = ShellSessions(planted)
    try:
        outcome = await shells.run("echo ran-real-shell", timeout=20)
    finally:
        await shells.close_all()
    assert "ran-real-shell" in outcome.output and not (tmp_path / "ran-bash").exists()


def test_relative_entries_and_the_project_are_left_out(tmp_path: Path) -> None:
    inside, outside = str(tmp_path / "p" / "bin"), "/usr/bin"
    assert host_path(tmp_path / "p", os.pathsep.join([inside, ".", "", "bin", outside])) == [outside]


def test_the_probe_does_not_run_a_bwrap_from_the_project(planted: Path, tmp_path: Path) -> None:
    home = tmp_path / "state"
    home.mkdir()
    Sandbox("workspace-write", planted, home).probe()
    assert not (tmp_path / "ran-bwrap").exists()


def test_an_entry_through_a_link_in_the_project_is_given_as_the_folder_it_names(tmp_path: Path) -> None:
    """A command may replace the link with a folder of its own; a server keeps this PATH."""
    tools = tmp_path / "tools"
    (tools / "bin").mkdir(parents=True)
    root = tmp_path / "p"
    root.mkdir()
    (root / "vendor").symlink_to(tools)
    entries = host_path(root, os.pathsep.join([str(root / "vendor" / "bin"), "/usr/bin"]))
    assert entries[0] == os.path.realpath(tools / "bin")
    assert not any(entry.startswith(str(root)) for entry in entries)
