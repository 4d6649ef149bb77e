"""/perms through the slash-command table, with a stand-in for the app (tests/slash_context.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from slash_context import FakeContext, make_context

from tether.core.messages import ToolCall
from tether.safety.permissions import PROJECT_FILE, USER_FILE, Rule
from tether.ui.terminal.slash.handlers import COMMANDS
from tether.ui.terminal.trust import AlwaysAnswer, FolderTrust

UNUSED_URL = "http://127.0.0.1:9"
"""/perms never asks the model: no server is needed behind the runtime."""


def rule_texts(rules: list[Rule]) -> set[tuple[str, str]]:
    return {(str(rule), rule.source) for rule in rules}


async def test_reload_rereads_the_files_and_keeps_session_and_command_line_rules(
    tmp_path: Path,
) -> None:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    user_file = home / USER_FILE
    user_file.write_text(json.dumps({"allow": ["run_cmd(ls)"]}))
    app = make_context(UNUSED_URL, root, home, allow=["run_cmd(make test)"], trusted=True)
    rules = app.runtime.rules
    assert rule_texts(rules.allow) == {("run_cmd(ls)", "user"), ("run_cmd(make test)", "command line")}

    await COMMANDS.run(app, "/perms allow run_cmd(git status)")
    await COMMANDS.run(app, "/perms deny write_file(secrets/*)")
    # The files change on disk: the user file drops `ls`, the project gains a deny rule.
    user_file.write_text(json.dumps({"allow": ["run_cmd(pwd)"]}))
    (root / PROJECT_FILE).write_text(json.dumps({"deny": ["run_cmd(rm -rf *)"]}))
    await COMMANDS.run(app, "/perms reload")

    assert rule_texts(rules.allow) == {
        ("run_cmd(pwd)", "user"),
        ("run_cmd(make test)", "command line"),
        ("run_cmd(git status)", "session"),
    }
    assert rule_texts(rules.deny) == {
        ("run_cmd(rm -rf *)", "project"),
        ("write_file(secrets/*)", "session"),
    }
    assert ("Rules reloaded.", "info") in app.said


async def test_perms_shows_the_tools_each_rule_covers(tmp_path: Path) -> None:
    app = make_context(UNUSED_URL, tmp_path, tmp_path / "home", trusted=True)
    for line in ("deny read_file(secret.txt)", "deny delete_file", "allow write(src/*)", "allow run"):
        await COMMANDS.run(app, "/perms " + line)
    app.said.clear()
    await COMMANDS.run(app, "/perms")
    shown = {text.split("  [")[0].strip(): text for text, _ in app.said}
    read = shown["deny read_file(secret.txt)"]
    for name in ("read_file", "search_in_file", "copy_file", "git_diff", "list_dir", "edit_file"):
        assert name in read
    assert "write_file" not in read and "run_cmd" not in read
    assert shown["deny delete_file"].endswith("covers: delete_file")
    write = shown["allow write(src/*)"]
    for name in ("write_file", "edit_file", "delete_file", "copy_file", "create_dir"):
        assert name in write
    assert "read_file" not in write
    assert "covers: run_cmd, send_input, end_process" in shown["allow run"]


def always_answer(app: FakeContext) -> AlwaysAnswer:
    """The app's [a]lways handler, on the stand-in's runtime."""
    return AlwaysAnswer(FolderTrust(app.runtime.options, app.say), lambda: app.runtime, app.say)


async def test_an_always_rule_is_listed_with_the_file_it_went_to(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    app = make_context(UNUSED_URL, root, tmp_path / "home")
    answer = always_answer(app)(ToolCall("c1", "write_file", {"filepath": "a.md", "content": "x"}))
    assert answer == f"write_file(a.md) in {root / PROJECT_FILE}"
    await COMMANDS.run(app, "/perms")
    listed = [text for text, _ in app.said if text.strip().startswith("allow write_file(a.md)")]
    assert len(listed) == 1 and f"[project: {root / PROJECT_FILE}]" in listed[0]
    assert "[session]" not in listed[0]
    await COMMANDS.run(app, "/perms reload")  # read back from that file: still one rule
    assert [str(r) for r in app.runtime.rules.allow] == ["write_file(a.md)"]


async def test_an_always_rule_of_a_folder_too_broad_to_trust_is_listed_in_the_users_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    me, home = tmp_path / "me", tmp_path / "home"
    me.mkdir()
    monkeypatch.setenv("HOME", str(me))
    app = make_context(UNUSED_URL, me, home)
    always_answer(app)(ToolCall("c1", "write_file", {"filepath": "a.md", "content": "x"}))
    await COMMANDS.run(app, "/perms")
    assert any(f"allow write_file(a.md)  [user: {home / USER_FILE}]" in text
               for text, _ in app.said)
