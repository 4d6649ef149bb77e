"""Path resolution against the kernel: random trees of symlinks and `..`, judged by what
open(), stat() and lstat() really reach, and the keys guard and containment checked against it."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.core.toolspec import ToolContext, ToolError
from tether.host.paths import resolve_path, resolved_forms
from tether.safety.approval import is_inside
from tether.safety.secret_files import SecretFiles

PARENTS = ["r", "r/a", "r/b", "o", "o/a", "h"]
"""r is the project root, o a folder beside it, h the state directory with the saved keys."""
NAMES = ["a", "b", "c", "credentials.json"]
COMPONENTS = ["a", "b", "c", "..", ".", "", "r", "o", "h", "credentials.json", "missing"]

parts = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=6)
link = st.tuples(st.booleans(), parts).map(lambda t: ("link", t[0], "/".join(t[1]) or "."))
kind = st.one_of(st.just(("dir", False, "")), st.just(("file", False, "")), link)
entries = st.lists(st.tuples(st.sampled_from(PARENTS), st.sampled_from(NAMES), kind), max_size=12)
prefixes = st.sampled_from(["", "TOP/", "/proc/self/cwd/", "/proc/self/cwd/../"])
paths = st.tuples(prefixes, parts, st.booleans())


@contextlib.contextmanager
def tree(made: list[tuple[str, str, tuple[str, bool, str]]], hard_link: bool) -> Iterator[Path]:
    """A fresh folder holding the tree, with the working directory in its project root."""
    with tempfile.TemporaryDirectory() as name:
        top = Path(os.path.realpath(name))
        for folder in ("r", "r/a", "o", "h"):
            (top / folder).mkdir(exist_ok=True)
        (top / "h" / "credentials.json").write_text('{"keys": {}}')
        if hard_link:
            os.link(top / "h" / "credentials.json", top / "r" / "hl")
        for parent, leaf, (what, absolute, target) in made:
            _make(top / parent / leaf, what, f"{top}/{target}" if absolute else target)
        cwd = os.getcwd()
        os.chdir(top / "r")
        try:
            yield top
        finally:
            os.chdir(cwd)


def _make(path: Path, what: str, target: str) -> None:
    if not path.parent.is_dir() or os.path.lexists(path):
        return
    if what == "dir":
        path.mkdir()
    elif what == "file":
        path.write_text("x")
    else:
        path.symlink_to(target)


def spelled(top: Path, prefix: str, components: list[str], slash: bool) -> str:
    text = prefix.replace("TOP", str(top)) + "/".join(components)
    return text + "/" if slash and not text.endswith("/") else text


def kernel_stat(path: str, *, follow: bool) -> os.stat_result | int:
    """What the kernel says: the file it reaches, or the errno it refuses with."""
    try:
        return os.stat(path, follow_symlinks=follow)
    except OSError as exc:
        return exc.errno or 0


def identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def identities_below(folder: Path) -> set[tuple[int, int]]:
    """Every entry of the folder (links not followed): what lies inside it."""
    found = {identity(os.lstat(folder))}
    for current, dirs, files in os.walk(folder):
        found |= {identity(os.lstat(os.path.join(current, n))) for n in dirs + files}
    return found


def created_by_kernel(path: str) -> os.stat_result | None:
    """Let the kernel create the file a write would create; what it made, or None."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    except OSError:
        return None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries, st.booleans(), paths)
def test_resolution_reaches_what_the_kernel_reaches(made, hard_link, path_parts) -> None:
    with tree(made, hard_link) as top:
        root, home = top / "r", top / "h"
        path = spelled(top, *path_parts)
        full = path if os.path.isabs(path) else os.path.join(root, path)
        keys = identity(os.stat(home / "credentials.json"))
        inside = identities_below(root)
        followed, entry = kernel_stat(full, follow=True), kernel_stat(full, follow=False)
        try:
            ours = resolve_path(path, str(root))
            ours_entry = resolve_path(path, str(root), follow_final=False)
        except OSError as exc:
            assert exc.errno == errno.ELOOP  # we refuse a loop only where one is met
            return
        assert followed != errno.ELOOP and entry != errno.ELOOP, "the kernel met a loop we did not"
        guarded = SecretFiles(home).guards(path, root)
        contained = is_inside(root, path)
        if isinstance(followed, os.stat_result):
            assert identity(os.stat(ours)) == identity(followed)
            assert ours == os.path.realpath(full)  # for existing paths realpath is exact
            assert not (identity(followed) == keys and not guarded), "the keys were not guarded"
            assert not (contained and identity(followed) not in inside), "outside judged inside"
        if isinstance(entry, os.stat_result):
            assert identity(os.lstat(ours_entry)) == identity(entry)
            assert not (contained and identity(entry) not in inside), "outside judged inside"
        if not isinstance(followed, os.stat_result) and not path.endswith("/"):
            made_file = created_by_kernel(full)
            if made_file is not None:  # the kernel wrote a new file: where we said it would
                assert identity(os.stat(ours)) == identity(made_file)
                assert not (contained and identity(made_file) not in identities_below(root))
                named_keys = Path(ours).name == "credentials.json" and Path(ours).is_relative_to(home)
                assert guarded or not named_keys


def test_a_missing_component_is_taken_as_a_directory_to_be_made(tmp_path: Path) -> None:
    (tmp_path / "lnk").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    assert resolve_path("new/../lnk/x", str(tmp_path)) == str(tmp_path / "elsewhere" / "x")
    assert resolve_path("new/deeper/../x", str(tmp_path)) == str(tmp_path / "new" / "x")


def test_a_trailing_slash_follows_the_last_link_as_the_kernel_does(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "lnk").symlink_to("d")
    assert resolve_path("lnk", str(tmp_path), follow_final=False) == str(tmp_path / "lnk")
    assert resolve_path("lnk/", str(tmp_path), follow_final=False) == str(tmp_path / "d")
    assert resolved_forms("lnk", str(tmp_path)) == (str(tmp_path / "d"), str(tmp_path / "lnk"))


def test_a_loop_is_refused_and_a_nul_byte_too(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(OSError) as caught:
        resolve_path("loop/x", str(tmp_path))
    assert caught.value.errno == errno.ELOOP
    with pytest.raises(ValueError):
        resolve_path("a\0b", str(tmp_path))


def test_the_tool_context_resolves_the_same_way_and_guards_the_keys(tmp_path: Path) -> None:
    root, home = tmp_path / "r", tmp_path / "h"
    root.mkdir()
    (home / "sessions").mkdir(parents=True)
    (home / "credentials.json").write_text("{}")
    (root / "sess").symlink_to(home / "sessions")
    ctx = ToolContext(root=root, secrets=SecretFiles(home))
    assert ctx.resolve("sess/../memory.json") == home / "memory.json"
    with pytest.raises(ToolError, match="saved keys"):
        ctx.resolve("sess/../credentials.json")
