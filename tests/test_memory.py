"""Long-term memory: the store, the five tools, name rules, and a corrupt file left alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tether.core.messages import ToolCall, ToolResult
from tether.core.toolspec import ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import Dispatcher
from tether.store.memory import MemoryCorrupt, MemoryStore, validate_name
from tether.tools.memory import memory_tools


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "home" / "memory.json")


@pytest.fixture
def dispatcher(store: MemoryStore, tmp_path: Path) -> Dispatcher:
    table = ToolTable(memory_tools(store))
    return Dispatcher(table=table, ctx=ToolContext(root=tmp_path), ui=SilentUI())


async def call(dispatcher: Dispatcher, tool: str, /, **arguments: object) -> ToolResult:
    result, _evidence = await dispatcher.dispatch(ToolCall("c1", tool, dict(arguments)))
    return result


# ---------------------------------------------------------------- the store


def test_write_read_and_file_format(store: MemoryStore) -> None:
    assert store.write("user prefs", "Likes tabs.\nUses fish.") is False
    assert store.read("user prefs") == "Likes tabs.\nUses fish."
    data = json.loads(store.path.read_text())
    assert data["version"] == 1
    entry = data["memories"]["user prefs"]
    assert entry["content"] == "Likes tabs.\nUses fish."
    assert entry["created"] == entry["updated"]


def test_write_replaces_and_keeps_created(store: MemoryStore) -> None:
    store.write("a", "one")
    created = json.loads(store.path.read_text())["memories"]["a"]["created"]
    assert store.write("a", "two") is True
    entry = json.loads(store.path.read_text())["memories"]["a"]
    assert entry["content"] == "two" and entry["created"] == created
    assert entry["updated"] >= created


def test_list_is_sorted_with_first_line_previews(store: MemoryStore) -> None:
    store.write("zeta", "\n\nfirst real line\nsecond")
    store.write("Alpha", "x" * 200)
    store.write("empty", "")
    entries = store.list()
    assert [name for name, _ in entries] == ["Alpha", "empty", "zeta"]
    assert entries[0][1] == "x" * 79 + "…" and len(entries[0][1]) == 80
    assert entries[1][1] == "" and entries[2][1] == "first real line"


def test_edit_exact_unique_replacement(store: MemoryStore) -> None:
    store.write("notes", "port is 8080; host is db")
    store.edit("notes", "8080", "9090")
    assert store.read("notes") == "port is 9090; host is db"
    with pytest.raises(ValueError, match="not found"):
        store.edit("notes", "8080", "1")
    store.write("dup", "aa aa")
    with pytest.raises(ValueError, match="2 times"):
        store.edit("dup", "aa", "b")
    with pytest.raises(ValueError, match="empty"):
        store.edit("dup", "", "b")
    assert store.read("dup") == "aa aa"


def test_delete(store: MemoryStore) -> None:
    store.write("gone", "soon")
    store.delete("gone")
    assert store.list() == []
    with pytest.raises(LookupError):
        store.delete("gone")


def test_missing_memory_suggests_near_names(store: MemoryStore) -> None:
    store.write("project-setup", "uv sync")
    store.write("deploy steps", "make deploy")
    with pytest.raises(LookupError, match="Did you mean 'project-setup'"):
        store.read("Project-setpu")
    with pytest.raises(LookupError, match="2 saved"):
        store.read("zzz")


def test_missing_store_file_is_empty(store: MemoryStore) -> None:
    assert store.list() == []
    with pytest.raises(LookupError, match="no memories are saved yet"):
        store.read("anything")
    assert not store.path.exists()


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("a" * 65, "at most 64"),
        ("../etc", "Invalid memory name"),
        ("semi;colon", "Invalid memory name"),
        ("new\nline", "Invalid memory name"),
    ],
)
def test_names_are_validated(store: MemoryStore, name: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        store.write(name, "x")
    assert not store.path.exists()


def test_valid_names_and_surrounding_spaces() -> None:
    assert validate_name("  My note_1.v-2 ") == "My note_1.v-2"
    assert validate_name("a" * 64) == "a" * 64


def test_file_is_private(store: MemoryStore) -> None:
    store.write("a", "b")
    if os.name == "posix":
        assert store.path.stat().st_mode & 0o077 == 0


CORRUPT_FILES = {
    "bad JSON": b'{"version": 1, "memories": {',
    "wrong shape": b'{"version": 1, "memories": ["a"]}',
    "bad entry": b'{"version": 1, "memories": {"a": {"content": 3}}}',
    "newer version": b'{"version": 9, "memories": {}}',
    "not utf-8": b"\xff\xfe\x00",
}


@pytest.mark.parametrize("raw", CORRUPT_FILES.values(), ids=CORRUPT_FILES.keys())
def test_corrupt_store_is_refused_and_untouched(store: MemoryStore, raw: bytes) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(raw)
    for operation in (
        lambda: store.write("a", "new"),
        lambda: store.read("a"),
        lambda: store.list(),
        lambda: store.edit("a", "x", "y"),
        lambda: store.delete("a"),
    ):
        with pytest.raises(MemoryCorrupt) as info:
            operation()
        assert str(store.path) in str(info.value)
    assert store.path.read_bytes() == raw


# ---------------------------------------------------------------- the tools


def test_tool_flags(store: MemoryStore) -> None:
    tools = {t.name: t for t in memory_tools(store)}
    assert set(tools) == {
        "write_memory", "read_memory", "get_memory_list", "edit_memory", "delete_memory",
    }  # fmt: skip
    assert tools["read_memory"].read_only and tools["get_memory_list"].read_only
    for name in ("write_memory", "edit_memory", "delete_memory"):
        assert not tools[name].read_only, name
        assert not tools[name].writes_files
        assert tools[name].main_arg == "name"
    assert tools["write_memory"].block_params == ("content",)
    assert tools["edit_memory"].block_params == ("old_content", "new_content")
    assert tools["get_memory_list"].main_value({}) == ""
    assert tools["read_memory"].main_value({"name": "x"}) == "x"


async def test_every_tool_through_dispatch(dispatcher: Dispatcher, store: MemoryStore) -> None:
    empty = await call(dispatcher, "get_memory_list")
    assert not empty.is_error and empty.content == "No memories saved yet."

    written = await call(dispatcher, "write_memory", name="stack", content="Python 3.12\nuv")
    assert not written.is_error and "Saved memory 'stack'" in written.content
    again = await call(dispatcher, "write_memory", name="stack", content="Python 3.13")
    assert "Replaced memory 'stack'" in again.content

    listed = await call(dispatcher, "get_memory_list")
    assert listed.content == "- stack: Python 3.13"

    edited = await call(
        dispatcher, "edit_memory", name="stack", old_content="3.13", new_content="3.14"
    )
    assert not edited.is_error
    read = await call(dispatcher, "read_memory", name="stack")
    assert read.content == "Python 3.14" and not read.is_error

    deleted = await call(dispatcher, "delete_memory", name="stack")
    assert not deleted.is_error and store.list() == []


async def test_tool_errors_are_clear_results(dispatcher: Dispatcher, store: MemoryStore) -> None:
    store.write("release-process", "tag, build, upload")
    missing = await call(dispatcher, "read_memory", name="release-proces")
    assert missing.is_error and "Did you mean 'release-process'" in missing.content

    bad_name = await call(dispatcher, "write_memory", name="a/b", content="x")
    assert bad_name.is_error and "Invalid memory name" in bad_name.content

    not_unique = await call(
        dispatcher, "edit_memory", name="release-process", old_content=",", new_content=";"
    )
    assert not_unique.is_error and "2 times" in not_unique.content

    no_args = await call(dispatcher, "write_memory", name="x")
    assert no_args.is_error and "content" in no_args.content


async def test_corrupt_store_makes_every_tool_fail_clearly(
    dispatcher: Dispatcher, store: MemoryStore
) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_text("not json at all")
    calls = [
        ("write_memory", {"name": "a", "content": "b"}),
        ("read_memory", {"name": "a"}),
        ("get_memory_list", {}),
        ("edit_memory", {"name": "a", "old_content": "b", "new_content": "c"}),
        ("delete_memory", {"name": "a"}),
    ]
    for name, arguments in calls:
        result = await call(dispatcher, name, **arguments)
        assert result.is_error, name
        assert "corrupt" in result.content and str(store.path) in result.content, name
    assert store.path.read_text() == "not json at all"


def test_a_memory_file_that_is_a_dangling_link_is_not_taken_for_none(store: MemoryStore) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.symlink_to(store.path.parent / "elsewhere" / "memory.json")
    with pytest.raises(MemoryCorrupt, match="does not exist"):
        store.list()
    with pytest.raises(MemoryCorrupt):
        store.write("n", "text")
    assert store.path.is_symlink() and not (store.path.parent / "elsewhere").exists()
