from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from tether.host import atomic
from tether.host.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text

SRC = Path(__file__).resolve().parents[1] / "src"

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tether.host.atomic import atomic_write_text

    target = Path(sys.argv[1])
    payloads = ["A" * 200_000, "B" * 300_000]
    print("ready", flush=True)
    i = 0
    while True:
        atomic_write_text(target, payloads[i % 2])
        i += 1
    """
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _temp_files(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")
def test_killed_writer_never_leaves_a_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "data.txt"
    complete = {"A" * 200_000, "B" * 300_000}
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    rng = random.Random(1234)
    seen_written = 0
    for _ in range(30):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.001, 0.030))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        if target.exists():
            content = target.read_text()
            assert content in complete, f"partial file of {len(content)} characters"
            seen_written += 1
    assert seen_written > 0, "the writer never got to write; the test proved nothing"


def test_text_round_trip_and_parent_dirs(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "note.txt"
    atomic_write_text(target, "héllo\nworld\n", newline="\n")
    assert target.read_bytes() == "héllo\nworld\n".encode()
    assert _temp_files(target.parent) == []


def test_newline_translation(tmp_path: Path) -> None:
    target = tmp_path / "crlf.txt"
    atomic_write_text(target, "a\nb\n", newline="\r\n")
    assert target.read_bytes() == b"a\r\nb\r\n"


def test_bytes_and_json(tmp_path: Path) -> None:
    raw = tmp_path / "raw.bin"
    atomic_write_bytes(raw, b"\x00\xff")
    assert raw.read_bytes() == b"\x00\xff"
    doc = tmp_path / "doc.json"
    atomic_write_json(doc, {"name": "ünï", "n": [1, 2]})
    assert json.loads(doc.read_text(encoding="utf-8")) == {"name": "ünï", "n": [1, 2]}


def test_unserialisable_json_leaves_original(tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text("{}")
    with pytest.raises(TypeError):
        atomic_write_json(doc, {"bad": object()})
    assert doc.read_text() == "{}"
    assert _temp_files(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_secret_file_is_0600_before_any_data_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "credentials.json"
    target.write_text("old")
    target.chmod(0o644)
    modes_at_fsync: list[int] = []
    real_fsync = os.fsync

    def spying_fsync(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            modes_at_fsync.append(stat.S_IMODE(st.st_mode))
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", spying_fsync)
    atomic_write_json(target, {"key": "value"}, secret=True)
    assert modes_at_fsync == [0o600]
    assert _mode(target) == 0o600


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_temp_file_mode_is_set_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file is chmod'ed while still empty, so no moment exposes data wider."""
    target = tmp_path / "secret.txt"
    sizes_at_chmod: list[int] = []
    real_chmod = os.chmod

    def spying_chmod(path: str, mode: int) -> None:
        sizes_at_chmod.append(os.stat(path).st_size)
        assert _mode(Path(path)) == 0o600  # mkstemp's own mode
        real_chmod(path, mode)

    monkeypatch.setattr(atomic.os, "chmod", spying_chmod)
    atomic_write_text(target, "token", secret=True)
    assert sizes_at_chmod == [0]
    assert _mode(target) == 0o600


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_existing_mode_is_kept(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    atomic_write_text(script, "#!/bin/sh\necho hi\n")
    assert _mode(script) == 0o755


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_new_file_follows_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "new.txt") == 0o640


def test_failure_keeps_original_and_removes_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("original")

    def failing_replace(src: str, dst: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk on fire"):
        atomic_write_text(target, "new content")
    assert target.read_text() == "original"
    assert _temp_files(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_write_through_symlink_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink()
    assert real.read_text() == "new"


def _stray_temp(directory: Path, target_name: str, age: float) -> Path:
    """A temp file as mkstemp names them, with its mtime set `age` seconds back."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=f".{target_name}.", suffix=".tmp")
    os.close(fd)
    when = time.time() - age
    os.utime(name, (when, when))
    return Path(name)


def test_a_write_removes_old_stray_temps_of_its_target_only(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    old = _stray_temp(tmp_path, "state.json", age=600)
    fresh = _stray_temp(tmp_path, "state.json", age=5)  # another writer may be mid-write
    other = _stray_temp(tmp_path, "state.json.bak", age=600)  # a different target's
    unrelated = tmp_path / ".state.json.notes.tmp"  # not mkstemp's name
    unrelated.write_text("keep")
    os.utime(unrelated, (time.time() - 600, time.time() - 600))

    atomic_write_json(target, {"ok": True})

    assert json.loads(target.read_text()) == {"ok": True}
    assert not old.exists()
    assert fresh.exists()
    assert other.exists()
    assert unrelated.exists()


def test_cleanup_trouble_never_fails_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _stray_temp(tmp_path, "f.txt", age=600)

    def refuse(path: object) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(atomic.os, "unlink", refuse)
    atomic_write_text(tmp_path / "f.txt", "new")
    assert (tmp_path / "f.txt").read_text() == "new"
    assert old.exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_secret_files_new_folders_are_owner_only(tmp_path: Path) -> None:
    """The folders a secret write creates (a run's results folder, subagents/) are 0700; a
    folder that already exists keeps its mode."""
    (tmp_path / "home").mkdir(mode=0o755)
    atomic_write_json(tmp_path / "home" / "results" / "run-1" / "001.txt", {"a": 1}, secret=True)
    assert _mode(tmp_path / "home") == 0o755
    assert _mode(tmp_path / "home" / "results") == 0o700
    assert _mode(tmp_path / "home" / "results" / "run-1") == 0o700


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_the_run_folders_of_results_and_subagents_are_owner_only(tmp_path: Path) -> None:
    from tether.store.result_files import ResultFiles

    files = ResultFiles(tmp_path)
    files.save("mcp__srv__tool", "x" * 10, kept_head=5)
    assert _mode(files.parent) == 0o700 and _mode(files.folder) == 0o700


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_the_undo_snapshots_and_input_history_are_private_in_an_open_home(tmp_path: Path) -> None:
    """A TETHER_HOME the user made 0755 (to put config.toml in) lets others into it: what
    tether keeps there that holds the project's files or what was typed is owner-only."""
    from tether.store.git_repo import find_repo
    from tether.ui.terminal.prompt import open_history

    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(mode=0o755)
    project.mkdir()
    old_umask = os.umask(0o022)
    try:
        find_repo(project, home / "shadow" / "abc", create=True)
        history = open_history(home / "history", lambda message: None)
        history.append_string("my typed request")
    finally:
        os.umask(old_umask)
    assert _mode(home / "shadow") == 0o700  # git's own files inside follow the umask
    assert _mode(home / "history") == 0o600
    assert "my typed request" in (home / "history").read_text()
