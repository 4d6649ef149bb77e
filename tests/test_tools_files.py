"""The file tools, exercised on real files in a temporary directory."""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tether.core.toolspec import ToolContext, ToolError, ToolTable
from tether.host import regular_files as _regular
from tether.tools import file_edit, file_search, file_text, files
from tether.tools._paths import display_path, is_inside_root, is_within
from tether.tools.file_edit import edit_file
from tether.tools.file_search import search_in_file
from tether.tools.file_table import FILE_TOOLS
from tether.tools.file_text import line_hash
from tether.tools.files import (
    copy_file,
    create_dir,
    delete_file,
    list_dir,
    read_file,
    write_file,
)
from tether.tools.params import (
    CopyFileParams,
    CreateDirParams,
    DeleteFileParams,
    EditFileParams,
    ListDirParams,
    ReadFileParams,
    SearchInFileParams,
    WriteFileParams,
)

LINE_RE = re.compile(r"^(\d+):([0-9a-f]{2})\|(.*)$")


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


def read(ctx: ToolContext, path: str, **kw: int) -> str:
    return read_file(ReadFileParams(filepath=path, **kw), ctx).text


def anchors(ctx: ToolContext, path: str) -> dict[int, str]:
    """Line number -> 'N:hh' anchor, as the model would copy them from read_file."""
    out = {}
    for line in read(ctx, path).splitlines():
        match = LINE_RE.match(line)
        if match:
            out[int(match.group(1))] = f"{match.group(1)}:{match.group(2)}"
    return out


def edit(ctx: ToolContext, path: str, **kw: str):
    return edit_file(EditFileParams(filepath=path, **kw), ctx)


# --- the table ---------------------------------------------------------------


def test_table_names_flags_and_main_args() -> None:
    table = ToolTable(FILE_TOOLS)
    assert table.names() == [
        "read_file", "write_file", "edit_file", "delete_file",
        "copy_file", "create_dir", "list_dir", "search_in_file",
    ]  # fmt: skip
    for name in ("read_file", "list_dir", "search_in_file"):
        assert table.get(name).read_only
    for name in ("write_file", "edit_file", "delete_file", "copy_file", "create_dir"):
        assert table.get(name).writes_files and not table.get(name).read_only
    assert table.get("write_file").block_params == ("content",)
    assert table.get("edit_file").block_params == ("old_content", "new_content")
    mains = {t.name: t.main_arg for t in table}
    assert mains["read_file"] == "filepath" and mains["copy_file"] == "source"
    assert mains["list_dir"] == "path" and mains["search_in_file"] == "pattern"
    schema = table.get("edit_file").json_schema()
    assert set(schema["properties"]) == {
        "filepath", "old_content", "new_content", "start_anchor", "end_anchor",
    }  # fmt: skip
    assert schema["required"] == ["filepath", "new_content"]
    assert all(p.get("description") for p in schema["properties"].values())


def test_line_hash_is_stable_two_hex() -> None:
    # Pinned values: anchors written down in one session must hold in the next.
    assert (line_hash("hello"), line_hash(""), line_hash("café")) == ("65", "a1", "4a")
    script = "from tether.tools.file_text import line_hash; print(line_hash('hello'))"
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    other = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert other.stdout.strip() == "65"


# --- read_file ---------------------------------------------------------------


def test_read_shows_numbered_hashed_lines(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    lines = read(ctx, "a.py").splitlines()
    assert lines == [
        f"1:{line_hash('def f():')}|def f():",
        f"2:{line_hash('    return 1')}|    return 1",
    ]


def test_read_pages_with_offset_and_hint(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 1235)))
    first = read(ctx, "big.txt").splitlines()
    assert len(first) == 401
    assert first[0].endswith("|line 1") and first[399].startswith("400:")
    assert first[-1] == (
        "[... file continues: 1,234 lines total; call read_file with offset=401 to read more]"
    )
    second = read(ctx, "big.txt", offset=401, limit=10).splitlines()
    assert second[0].startswith("401:") and second[0].endswith("|line 401")
    assert second[-1].endswith("call read_file with offset=411 to read more]")
    last = read(ctx, "big.txt", offset=1200).splitlines()
    assert last[-1].startswith("1234:") and "continues" not in last[-1]


def test_read_char_cap_pages_early(ctx: ToolContext, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "READ_CHAR_CAP", 200)
    (tmp_path / "wide.txt").write_text("".join(f"{'x' * 40}{i}\n" for i in range(1, 21)))
    out = read(ctx, "wide.txt").splitlines()
    shown = [line for line in out if LINE_RE.match(line)]
    assert 1 <= len(shown) < 20
    assert out[-1].endswith(f"offset={len(shown) + 1} to read more]")


def test_read_offset_past_end_and_empty_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text("one\ntwo\n")
    with pytest.raises(ToolError, match="offset=5 is past the end of short.txt, which has 2 lines"):
        read(ctx, "short.txt", offset=5)
    (tmp_path / "empty.txt").write_text("")
    assert read(ctx, "empty.txt") == "(empty file: empty.txt)"


def test_read_missing_file_names_near_names(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.py").write_text("x = 1\n")
    with pytest.raises(ToolError) as info:
        read(ctx, "src/confg.py")
    assert "File not found: src/confg.py" in str(info.value)
    assert "config.py" in str(info.value)
    with pytest.raises(ToolError, match="does not exist"):
        read(ctx, "nowhere/x.py")


def test_read_directory_and_binary_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    with pytest.raises(ToolError, match="list_dir"):
        read(ctx, "pkg")
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    with pytest.raises(ToolError, match="binary"):
        read(ctx, "img.png")


def test_read_latin1_fallback_with_note(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    out = read(ctx, "old.txt").splitlines()
    assert out[0].startswith("[note: not valid UTF-8; decoded as latin-1]")
    assert out[1].endswith("|café")


def test_read_absolute_path_outside_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("hi\n")
    ctx = ToolContext(root=tmp_path / "project")
    out = read_file(ReadFileParams(filepath=str(outside)), ctx)
    assert out.text.endswith("|hi")


# --- write_file --------------------------------------------------------------


def test_write_creates_with_parents_then_overwrites(ctx: ToolContext, tmp_path: Path) -> None:
    out = write_file(WriteFileParams(filepath="a/b/new.txt", content="x\ny\n"), ctx)
    target = tmp_path / "a" / "b" / "new.txt"
    assert target.read_text() == "x\ny\n"
    assert out.text == "Created a/b/new.txt (2 lines)."
    assert out.changed_paths == (target,)
    out = write_file(WriteFileParams(filepath="a/b/new.txt", content="z"), ctx)
    assert out.text == "Overwrote a/b/new.txt (1 lines)."
    assert target.read_text() == "z"
    assert [p.name for p in target.parent.iterdir()] == ["new.txt"]  # no temp file left


def test_a_write_of_what_the_file_already_holds_changes_nothing_and_says_so(
    ctx: ToolContext, tmp_path: Path
) -> None:
    """A small model asked to add a function wrote strings.py back as it was: no change to
    commit, and a result that says nothing was added (not "Overwrote")."""
    target = tmp_path / "strings.py"
    target.write_text("def a():\n    return 1\n")
    before = target.stat().st_mtime_ns
    out = write_file(WriteFileParams(filepath="strings.py", content="def a():\n    return 1\n"), ctx)
    assert out.text == ("Unchanged: strings.py already held exactly this content; nothing was written. "
                        "If you meant to change it, this content does not hold the change.")
    assert out.changed_paths == () and target.stat().st_mtime_ns == before


def test_a_write_that_changes_only_blank_lines_is_made_and_says_the_code_is_as_it_was(
    ctx: ToolContext, tmp_path: Path
) -> None:
    target = tmp_path / "strings.py"
    target.write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    respaced = "def a():\n    return 1\n    \ndef b():\n    return 2  \n"
    out = write_file(WriteFileParams(filepath="strings.py", content=respaced), ctx)
    assert target.read_text() == respaced, "a whitespace change may be what was asked"
    assert out.text.startswith("Overwrote strings.py (5 lines): only blank lines and spacing changed, "
                               "every other line is as it was, so what the code does is unchanged. To add "
                               "code, use edit_file: old_content the file's last lines")
    assert out.changed_paths == (target,)


def test_write_keeps_mode_and_follows_symlink(ctx: ToolContext, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    write_file(WriteFileParams(filepath="run.sh", content="#!/bin/sh\necho hi\n"), ctx)
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    link = tmp_path / "link.sh"
    link.symlink_to(script)
    write_file(WriteFileParams(filepath="link.sh", content="new\n"), ctx)
    assert link.is_symlink() and script.read_text() == "new\n"


def test_write_onto_directory_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        write_file(WriteFileParams(filepath="d", content="x"), ctx)


def test_write_under_a_file_is_a_clear_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ToolError) as info:
        write_file(WriteFileParams(filepath="f/inner.txt", content="x"), ctx)
    assert "f" in str(info.value) and "Traceback" not in str(info.value)


# --- edit_file: exact match ----------------------------------------------------


def test_edit_exact_match_replaces_and_returns_diff(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a = 1\nb = 2\nc = 3\n")
    out = edit(ctx, "m.py", old_content="b = 2\n", new_content="b = 20\nbb = 21\n")
    assert path.read_text() == "a = 1\nb = 20\nbb = 21\nc = 3\n"
    assert out.changed_paths == (path,)
    assert "-b = 2" in out.text and "+b = 20" in out.text and "+bb = 21" in out.text
    assert "+2 -1" in out.text


def test_edit_not_found_names_closest_match(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("import os\n\ndef greet(name):\n    return 'hi ' + name\n\nx = 1\n")
    with pytest.raises(ToolError) as info:
        edit(ctx, "m.py", old_content="def greet(name):\n  return 'hi ' + name", new_content="x")
    message = str(info.value)
    assert "not found in m.py" in message
    assert "lines 3-4" in message
    assert f"3:{line_hash('def greet(name):')}|def greet(name):" in message
    assert "whitespace or indentation" in message
    suggested = re.findall(r"(start|end)_anchor='(\d+:[0-9a-f]{2})'", message)
    assert [a for _, a in suggested] == [anchors(ctx, "m.py")[3], anchors(ctx, "m.py")[4]]
    assert path.read_text().startswith("import os")  # untouched


def test_edit_not_found_hints_at_read_prefixes(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("alpha\nbeta\n")
    pasted = f"1:{line_hash('alpha')}|alpha"
    with pytest.raises(ToolError, match="prefixes"):
        edit(ctx, "m.py", old_content=pasted, new_content="x")


def test_edit_not_unique_lists_line_numbers(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 0\nreturn None\ny = 1\nreturn None\nz\nreturn None\n")
    with pytest.raises(ToolError) as info:
        edit(ctx, "m.py", old_content="return None", new_content="return 1")
    assert "occurs 3 times" in str(info.value)
    assert "lines 2, 4, 6" in str(info.value)


def test_edit_preserves_crlf(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    edit(ctx, "win.txt", old_content="one\ntwo\n", new_content="uno\ndos\n")
    assert path.read_bytes() == b"uno\r\ndos\r\nthree\r\n"
    anchor = anchors(ctx, "win.txt")[3]
    edit(ctx, "win.txt", start_anchor=anchor, new_content="tres\nquatro")
    assert path.read_bytes() == b"uno\r\ndos\r\ntres\r\nquatro\r\n"


def test_edit_preserves_missing_final_newline(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "n.txt"
    path.write_text("a\nb")
    edit(ctx, "n.txt", old_content="b", new_content="c\n")
    assert path.read_text() == "a\nc"
    edit(ctx, "n.txt", start_anchor=anchors(ctx, "n.txt")[2], new_content="d\n")
    assert path.read_text() == "a\nd"
    path.write_text("a\nb\n")
    edit(ctx, "n.txt", old_content="b\n", new_content="c")
    assert path.read_text() == "a\nc\n"


def test_edit_keeps_latin1_encoding(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "l.txt"
    path.write_bytes("caf\xe9\nbar\n".encode("latin-1"))
    edit(ctx, "l.txt", old_content="bar", new_content="b\xe4r")
    assert path.read_bytes() == "caf\xe9\nb\xe4r\n".encode("latin-1")


def test_edit_mode_errors(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("a\n")
    anchor = anchors(ctx, "m.txt")[1]
    with pytest.raises(ToolError, match="not both"):
        edit(ctx, "m.txt", old_content="a", start_anchor=anchor, new_content="b")
    with pytest.raises(ToolError, match="Say what to replace"):
        edit(ctx, "m.txt", new_content="b")
    with pytest.raises(ToolError, match="old_content is empty"):
        edit(ctx, "m.txt", old_content="", new_content="b")
    with pytest.raises(ToolError, match="needs start_anchor"):
        edit(ctx, "m.txt", end_anchor=anchor, new_content="b")
    with pytest.raises(ToolError, match="unchanged"):
        edit(ctx, "m.txt", old_content="a", new_content="a")
    with pytest.raises(ToolError, match="File not found"):
        edit(ctx, "missing.txt", old_content="a", new_content="b")
    # Empty strings for the unused mode are tolerated (models send every parameter).
    edit(ctx, "m.txt", old_content="", start_anchor=anchor, end_anchor="", new_content="b")
    assert (tmp_path / "m.txt").read_text() == "b\n"


# --- edit_file: anchors -----------------------------------------------------------


def test_anchor_round_trip_replaces_range(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "r.py"
    path.write_text("l1\nl2\nl3\nl4\nl5\n")
    marks = anchors(ctx, "r.py")
    out = edit(ctx, "r.py", start_anchor=marks[2], end_anchor=marks[4], new_content="new")
    assert path.read_text() == "l1\nnew\nl5\n"
    assert out.changed_paths == (path,)
    assert "-l2" in out.text and "+new" in out.text
    # A whole read_file line pasted as the anchor also works.
    line5 = next(x for x in read(ctx, "r.py").splitlines() if x.startswith("3:"))
    edit(ctx, "r.py", start_anchor=line5, new_content="")
    assert path.read_text() == "l1\nnew\n"


def test_stale_anchor_refused_with_current_lines(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "s.py"
    path.write_text("a\nb\nc\nd\n")
    old = anchors(ctx, "s.py")[2]
    path.write_text("a\nB changed\nc\nd\n")
    with pytest.raises(ToolError) as info:
        edit(ctx, "s.py", start_anchor=old, new_content="x")
    message = str(info.value)
    assert "stale" in message
    fresh = f"2:{line_hash('B changed')}|B changed"
    assert fresh in message and f"1:{line_hash('a')}|a" in message
    assert path.read_text() == "a\nB changed\nc\nd\n"
    edit(ctx, "s.py", start_anchor=fresh.split("|")[0], new_content="x")
    assert path.read_text() == "a\nx\nc\nd\n"


def test_bad_anchors(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("a\nb\n")
    marks = anchors(ctx, "s.txt")
    with pytest.raises(ToolError, match="not an anchor"):
        edit(ctx, "s.txt", start_anchor="line two", new_content="x")
    with pytest.raises(ToolError, match="outside s.txt, which has 2 lines"):
        edit(ctx, "s.txt", start_anchor="9:00", new_content="x")
    with pytest.raises(ToolError, match="comes before"):
        edit(ctx, "s.txt", start_anchor=marks[2], end_anchor=marks[1], new_content="x")


def test_edit_diff_is_capped(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"old {i}\n" for i in range(2000)))
    marks = anchors(ctx, "big.txt")
    out = edit(
        ctx, "big.txt", start_anchor=marks[1], end_anchor=marks[400], new_content="x\n" * 400
    )
    assert len(out.text) < file_edit.DIFF_CHAR_CAP + 200
    assert "diff cut" in out.text


# --- delete, copy, create_dir -------------------------------------------------------


def test_delete_file(ctx: ToolContext, tmp_path: Path) -> None:
    target = tmp_path / "gone.txt"
    target.write_text("x")
    out = delete_file(DeleteFileParams(filepath="gone.txt"), ctx)
    assert not target.exists() and out.changed_paths == (target,)
    with pytest.raises(ToolError, match="File not found"):
        delete_file(DeleteFileParams(filepath="gone.txt"), ctx)
    (tmp_path / "dir").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        delete_file(DeleteFileParams(filepath="dir"), ctx)
    assert (tmp_path / "dir").is_dir()


def test_copy_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("content")
    out = copy_file(CopyFileParams(source="a.txt", destination="sub/dir/b.txt"), ctx)
    copied = tmp_path / "sub" / "dir" / "b.txt"
    assert copied.read_text() == "content"
    assert out.changed_paths == (copied,)
    (tmp_path / "c.txt").write_text("keep me")
    with pytest.raises(ToolError, match="already exists: c.txt"):
        copy_file(CopyFileParams(source="a.txt", destination="c.txt"), ctx)
    assert (tmp_path / "c.txt").read_text() == "keep me"
    with pytest.raises(ToolError, match="existing directory.*sub/a.txt"):
        copy_file(CopyFileParams(source="a.txt", destination="sub"), ctx)
    with pytest.raises(ToolError, match="File not found: nope.txt"):
        copy_file(CopyFileParams(source="nope.txt", destination="x.txt"), ctx)
    with pytest.raises(ToolError, match="copies single files"):
        copy_file(CopyFileParams(source="sub", destination="x"), ctx)


def test_create_dir_is_idempotent(ctx: ToolContext, tmp_path: Path) -> None:
    out = create_dir(CreateDirParams(path="x/y/z"), ctx)
    assert (tmp_path / "x" / "y" / "z").is_dir() and "Created directory x/y/z" in out.text
    again = create_dir(CreateDirParams(path="x/y/z"), ctx)
    assert "already existed" in again.text
    (tmp_path / "file").write_text("")
    with pytest.raises(ToolError, match="is a file"):
        create_dir(CreateDirParams(path="file"), ctx)


# --- list_dir -------------------------------------------------------------------------


def test_list_dir_dirs_first_with_sizes(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "b_dir").mkdir()
    (tmp_path / "A_dir").mkdir()
    (tmp_path / "z.txt").write_text("x" * 10)
    (tmp_path / "a.bin").write_bytes(b"\0" * 2048)
    (tmp_path / ".hidden").write_text("")
    lines = list_dir(ListDirParams(), ctx).text.splitlines()
    assert lines[0] == "./ (2 directories, 3 files)"
    assert lines[1:] == ["A_dir/", "b_dir/", ".hidden  (0 B)", "a.bin  (2.0 KB)", "z.txt  (10 B)"]


def test_list_dir_caps_and_errors(ctx: ToolContext, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(files, "LIST_ENTRY_CAP", 5)
    (tmp_path / "many").mkdir()
    for i in range(8):
        (tmp_path / "many" / f"f{i}").write_text("")
    lines = list_dir(ListDirParams(path="many"), ctx).text.splitlines()
    assert len(lines) == 7 and "3 more entries not shown" in lines[-1]
    (tmp_path / "empty").mkdir()
    assert "(empty directory)" in list_dir(ListDirParams(path="empty"), ctx).text
    with pytest.raises(ToolError, match="Directory not found: mny.*many"):
        list_dir(ListDirParams(path="mny"), ctx)
    with pytest.raises(ToolError, match="read_file"):
        list_dir(ListDirParams(path="many/f1"), ctx)


# --- search_in_file -------------------------------------------------------------------------


def search(ctx: ToolContext, pattern: str, path: str = ".") -> str:
    return search_in_file(SearchInFileParams(pattern=pattern, path=path), ctx).text


def make_tree(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("import os\nNEEDLE = 1\n")
    (root / "notes.txt").write_text("nothing\nneedle lower\nNEEDLE again\n")
    (root / "blob.bin").write_bytes(b"NEEDLE\0\0binary")
    for skipped in (".git", ".venv", "node_modules", "__pycache__"):
        (root / skipped).mkdir(exist_ok=True)
        (root / skipped / "hidden.txt").write_text("NEEDLE\n")


@pytest.fixture
def no_outer_repo(tmp_path: Path, monkeypatch) -> None:
    """Keep git from finding a repository above tmp_path."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))


def test_search_walk_skips_default_dirs_and_binary(
    ctx: ToolContext, tmp_path: Path, no_outer_repo
) -> None:
    make_tree(tmp_path)
    out = search(ctx, "NEEDLE")
    assert out.splitlines() == [
        "notes.txt:3: NEEDLE again",
        "src/main.py:2: NEEDLE = 1",
        "(2 matching lines in 2 files)",
        "(skipped files: 1 binary)",
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_search_respects_gitignore_in_real_repo(
    ctx: ToolContext, tmp_path: Path, no_outer_repo
) -> None:
    make_tree(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.txt").write_text("NEEDLE\n")
    (tmp_path / "debug.log").write_text("NEEDLE\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "src/main.py"], check=True)
    out = search(ctx, "NEEDLE")
    assert "build/" not in out and "debug.log" not in out and "hidden.txt" not in out
    assert "src/main.py:2: NEEDLE = 1" in out  # tracked
    assert "notes.txt:3: NEEDLE again" in out  # untracked, not ignored
    assert "1 binary" in out
    # Searching inside a subdirectory keeps paths relative to the root.
    assert search(ctx, "NEEDLE", "src").splitlines() == ["src/main.py:2: NEEDLE = 1"]
    # An ignored directory searched on purpose is still searched.
    assert "build/out.txt:1: NEEDLE" in search(ctx, "NEEDLE", "build")


def test_search_single_file_and_no_match(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("alpha\nbeta\n  gamma  \n")
    assert search(ctx, r"^\s+gam", "f.txt") == "f.txt:3:   gamma"
    out = search(ctx, "delta", "f.txt").splitlines()
    # A miss in one short file shows the file: what was asked for may be there by another name.
    assert out[0] == "No matches for 'delta' in f.txt (1 files searched)."
    assert out[1] == "The file is short; here it is whole (f.txt):"
    assert out[2:] == ["1| alpha", "2| beta", "3|   gamma  "]


def test_search_miss_in_a_long_file_or_a_directory_shows_no_file(
    ctx: ToolContext, tmp_path: Path, monkeypatch, no_outer_repo
) -> None:
    monkeypatch.setattr(file_search, "SEARCH_SHOW_FILE_LINES", 3)
    (tmp_path / "long.txt").write_text("a\nb\nc\nd\n")
    (tmp_path / "short.txt").write_text("a\n")
    assert search(ctx, "zzz", "long.txt") == "No matches for 'zzz' in long.txt (1 files searched)."
    assert search(ctx, "zzz").startswith("No matches for 'zzz' in . (2 files searched).")
    assert "here it is" not in search(ctx, "zzz")


def test_search_is_case_blind_for_a_lower_case_pattern(
    ctx: ToolContext, tmp_path: Path, no_outer_repo
) -> None:
    (tmp_path / "policy.py").write_text("MAX_UPLOAD_RETRIES = 11\nretry_later = 1\n")
    # All lower case: any case matches (ripgrep's smart case), so "retr" finds the constant.
    assert search(ctx, "retr", "policy.py").splitlines() == [
        "policy.py:1: MAX_UPLOAD_RETRIES = 11",
        "policy.py:2: retry_later = 1",
        "(2 matching lines in 1 files)",  # a count the model can quote instead of counting
    ]
    # A capital letter means the case was meant; an escape such as \\S is not a capital.
    assert search(ctx, "RETR", "policy.py") == "policy.py:1: MAX_UPLOAD_RETRIES = 11"
    assert search(ctx, r"retr\S", "policy.py").splitlines()[0] == "policy.py:1: MAX_UPLOAD_RETRIES = 11"


def test_search_invalid_regex(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"Invalid regular expression '\(unclosed'.*missing \)"):
        search(ctx, "(unclosed")
    with pytest.raises(ToolError, match="empty"):
        search(ctx, "")


def test_search_stops_at_match_cap(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 300)
    lines = search(ctx, "hit", "many.txt").splitlines()
    assert len(lines) == 201 and lines[199] == "many.txt:200: hit"
    assert lines[-1].startswith("[stopped after 200 matches")


def test_search_skips_large_files_and_trims_lines(
    ctx: ToolContext, tmp_path: Path, monkeypatch, no_outer_repo
) -> None:
    monkeypatch.setattr(file_search, "SEARCH_MAX_FILE_BYTES", 100)
    (tmp_path / "large.txt").write_text("hit\n" * 100)
    (tmp_path / "long.txt").write_text("hit" + "y" * 80 + "\n")
    monkeypatch.setattr(file_search, "SEARCH_LINE_WIDTH", 20)
    out = search(ctx, "hit").splitlines()
    assert out[0] == "long.txt:1: hit" + "y" * 17 + "..."
    assert out[-1] == "(skipped files: 1 over 0 MB)"


def test_search_missing_path(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="Path not found: nope"):
        search(ctx, "x", "nope")


CATASTROPHIC = "^(a+)+$"
"""Backtracks exponentially on a line of a's that ends in something else."""


def test_a_catastrophic_pattern_is_stopped_and_called_too_slow(tmp_path: Path) -> None:
    """In a child process with a bounded wait: matching in-process would freeze it for good."""
    (tmp_path / "a.txt").write_text("a" * 60 + "!\n")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tether.tools import file_search, params\n"
        "from tether.core.toolspec import ToolContext, ToolError\n"
        "file_search.FILE_TIME_LIMIT = 1.0\n"
        "file_search.ripgrep.ripgrep = lambda: None\n"  # rg never backtracks: Python's search is the one stopped
        "ctx = ToolContext(root=Path(sys.argv[1]))\n"
        "try:\n"
        f"    file_search.search_in_file(params.SearchInFileParams(pattern={CATASTROPHIC!r}), ctx)\n"
        "except ToolError as err:\n"
        "    print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"the pattern {CATASTROPHIC!r} was too slow: matching it in a.txt")


def test_matches_found_before_a_too_slow_file_are_kept(
    ctx: ToolContext, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(file_search, "FILE_TIME_LIMIT", 1.0)
    monkeypatch.setattr(file_search.ripgrep, "ripgrep", lambda: None)
    (tmp_path / "a.txt").write_text("aaa\n")
    (tmp_path / "b.txt").write_text("a" * 60 + "!\n")
    out = search(ctx, CATASTROPHIC).splitlines()
    assert out[0] == "a.txt:1: aaa"
    assert out[1].startswith(f"[the pattern {CATASTROPHIC!r} was too slow: matching it in b.txt")


# --- FIFOs, devices and sockets -------------------------------------------------------------


def finishes(work, *args):  # noqa: ANN001, ANN201
    """Run `work(*args)` in a thread with a bounded wait: a blocking open fails the test
    instead of hanging it."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(("ok", work(*args)))
        except BaseException as exc:  # handed to the test
            outcome.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert outcome, f"{getattr(work, '__name__', work)} blocked"
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


NOT_REGULAR = r"pipe is a FIFO \(named pipe\), not a regular file"


def test_reading_or_editing_a_fifo_is_refused_at_once(ctx: ToolContext, fifo: Path) -> None:
    with pytest.raises(ToolError, match=NOT_REGULAR):
        finishes(read_file, ReadFileParams(filepath="pipe"), ctx)
    with pytest.raises(ToolError, match=NOT_REGULAR):
        finishes(edit_file, EditFileParams(filepath="pipe", old_content="a", new_content="b"), ctx)


def test_writing_over_or_copying_a_fifo_is_refused(ctx: ToolContext, fifo: Path) -> None:
    with pytest.raises(ToolError, match=NOT_REGULAR):
        finishes(write_file, WriteFileParams(filepath="pipe", content="x"), ctx)
    with pytest.raises(ToolError, match=NOT_REGULAR):
        finishes(copy_file, CopyFileParams(source="pipe", destination="copy"), ctx)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and not (fifo.parent / "copy").exists()


def test_devices_and_sockets_are_refused(ctx: ToolContext, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="/dev/null is a character device, not a regular file"):
        read_file(ReadFileParams(filepath="/dev/null"), ctx)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "sock"))
        with pytest.raises(ToolError, match="sock is a socket, not a regular file"):
            read_file(ReadFileParams(filepath="sock"), ctx)
    finally:
        server.close()


def test_a_fifo_swapped_in_after_the_check_is_not_opened_blocking(
    fifo: Path, monkeypatch
) -> None:
    monkeypatch.setattr(_regular, "refuse_special", lambda path: None)  # the check came first
    with pytest.raises(_regular.NotARegularFile) as err:
        finishes(_regular.open_regular, fifo)
    assert err.value.kind == "a FIFO (named pipe)"


def test_search_skips_fifos_in_the_tree_and_refuses_one_named(
    ctx: ToolContext, tmp_path: Path, fifo: Path, no_outer_repo
) -> None:
    (tmp_path / "a.txt").write_text("hit\n")
    out = finishes(search, ctx, "hit").splitlines()
    assert out == ["a.txt:1: hit", "(skipped files: 1 FIFOs, devices or sockets)"]
    with pytest.raises(ToolError, match=NOT_REGULAR):
        finishes(search, ctx, "hit", "pipe")


# --- path helpers ----------------------------------------------------------------------------


def test_is_inside_root_resolves_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    assert is_inside_root(root / "sub" / "new.txt", root)
    assert is_inside_root(root, root)
    assert not is_inside_root(root / "escape" / "x.txt", root)
    assert not is_inside_root(root / ".." / "elsewhere", root)
    assert not is_inside_root(tmp_path / "project2", root)
    assert not is_inside_root(root / "a\x00b", root)  # unrepresentable: outside, not a crash


def test_is_within_compares_paths_as_written(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "escape").symlink_to(tmp_path)
    assert is_within(root / "escape" / "x", root)  # no symlink is resolved
    assert is_within(root, root)
    assert not is_within(tmp_path / "project2", root)
    assert not is_within(tmp_path, root)


def test_display_path(tmp_path: Path) -> None:
    assert display_path(tmp_path / "a" / "b.txt", tmp_path) == "a/b.txt"
    assert display_path(tmp_path, tmp_path) == "."
    assert display_path(Path("/elsewhere/x"), tmp_path) == "/elsewhere/x"


def test_edit_matches_whole_lines_at_the_end_of_a_file_without_a_final_newline(tmp_path: Path) -> None:
    from tether.tools.file_edit import edit_file
    from tether.tools.params import EditFileParams

    (tmp_path / "a.py").write_text("x = 10\ny = 1")
    ctx = ToolContext(root=tmp_path)
    edit_file(EditFileParams(filepath="a.py", old_content="y = 1\n", new_content="y = 2\n"), ctx)
    assert (tmp_path / "a.py").read_text() == "x = 10\ny = 2"
    (tmp_path / "b.py").write_text("x = 10\ny = 1")
    with pytest.raises(ToolError):  # "x = 1" is inside "x = 10": never matched as a line
        edit_file(EditFileParams(filepath="b.py", old_content="x = 1\n", new_content="x = 2\n"), ctx)
    assert (tmp_path / "b.py").read_text() == "x = 10\ny = 1"


# --- files whose size is no promise -----------------------------------------------------------

ENDLESS = Path("/proc/self/pagemap")
"""A regular file that reports 0 bytes and gives gigabytes (8 bytes per page of address space)."""
needs_endless = pytest.mark.skipif(not os.access(ENDLESS, os.R_OK), reason="no /proc/self/pagemap")


@needs_endless
def test_copying_a_file_that_never_ends_stops_and_leaves_no_copy(ctx: ToolContext, tmp_path) -> None:
    with pytest.raises(ToolError, match="gave more than its size said"):
        finishes(copy_file, CopyFileParams(source=str(ENDLESS), destination="pagemap"), ctx)
    assert not (tmp_path / "pagemap").exists()


def test_a_small_proc_file_reporting_no_size_still_copies(ctx: ToolContext, tmp_path) -> None:
    copy_file(CopyFileParams(source="/proc/self/status", destination="status.txt"), ctx)
    assert "Pid:" in (tmp_path / "status.txt").read_text()


def test_read_and_search_stop_at_their_limit_whatever_size_the_file_reports(
    ctx: ToolContext, monkeypatch
) -> None:
    assert os.stat("/proc/self/status").st_size == 0
    monkeypatch.setattr(file_text, "MAX_READ_BYTES", 100)
    with pytest.raises(ToolError, match="too large to load"):
        finishes(read_file, ReadFileParams(filepath="/proc/self/status"), ctx)
    monkeypatch.setattr(file_search, "SEARCH_MAX_FILE_BYTES", 100)
    out = finishes(search, ctx, "Pid", "/proc/self/status")
    assert "1 over" in out and "Pid:" not in out


def test_copy_never_writes_through_a_symlink_put_at_the_destination(tmp_path) -> None:
    """copy_file checks that the destination does not exist; a symlink put there after the
    check (by a background command) is not followed."""
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "elsewhere").write_text("keep\n")
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    with pytest.raises(FileExistsError):
        _regular.copy_regular(tmp_path / "a.txt", tmp_path / "link")
    assert (tmp_path / "elsewhere").read_text() == "keep\n"
    assert (tmp_path / "link").is_symlink()


@pytest.mark.parametrize("pattern", ["a{4294967296}", "(" * 5000 + ")" * 5000])
def test_a_pattern_too_big_to_compile_gets_a_clear_message(ctx: ToolContext, pattern: str) -> None:
    with pytest.raises(ToolError, match="too big to compile"):
        search(ctx, pattern)


def test_a_write_or_edit_that_leaves_a_python_file_broken_says_so(ctx: ToolContext, tmp_path: Path) -> None:
    """script_csv_total: total.py was written holding the command that runs it."""
    out = write_file(WriteFileParams(filepath="total.py", content="python total.py data.csv amount\n"), ctx)
    assert (tmp_path / "total.py").read_text() == "python total.py data.csv amount\n", "written all the same"
    assert out.text == ("Created total.py (1 lines).\nWarning: total.py is not valid Python now: invalid syntax "
                        "(line 1). Fix it before running it.")
    fine = write_file(WriteFileParams(filepath="ok.py", content="print(1)\n"), ctx)
    assert "Warning" not in fine.text
    notes = write_file(WriteFileParams(filepath="notes.txt", content="python total.py\n"), ctx)
    assert "Warning" not in notes.text  # only Python files are parsed
    edited = edit_file(EditFileParams(filepath="ok.py", old_content="print(1)", new_content="print(1"), ctx)
    assert "Warning: ok.py is not valid Python now: '(' was never closed (line 1)." in edited.text
