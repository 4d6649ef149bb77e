"""tether's own settings are not the model's to change: a write into the state directory
(the user's rules, trusted folders, config.toml) or into any project rules file always asks,
whatever the rules and --auto say, and one-shot mode refuses it unless a rule names that path.

Without this, one --auto session could delete the user's deny rules, trust a hostile folder,
turn the sandbox or the post-commit hook setting on or off, or write a `.permissions.json`
whose allow rules the next run honours."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tether.core.messages import ToolCall
from tether.core.toolspec import ToolContext, ToolTable
from tether.safety.approval import ApprovalPolicy
from tether.safety.permissions import Rule, RuleSet
from tether.tools import builtin_tools


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A trusted-looking project and a state directory with rules, trust and config."""
    root, home = tmp_path / "proj", tmp_path / "state"
    (root / "sub").mkdir(parents=True)
    home.mkdir()
    (home / "permissions.json").write_text('{"deny": ["run(rm *)"]}')
    (home / "trusted.json").write_text("[]")
    (home / "config.toml").write_text("")
    (home / "sessions").mkdir()
    os.symlink(home, root / "state-link")
    os.symlink(home / "sessions", root / "sess")
    (root / "a.txt").write_text("a\n")
    return root, home


@pytest.fixture
def table(tmp_path: Path) -> ToolTable:
    tools, _ = builtin_tools(ToolContext(root=tmp_path))
    return tools


def gate(world: tuple[Path, Path], table: ToolTable, name: str, *, allow: tuple[str, ...] = ("*",),
         can_ask: bool = True, **args: str) -> tuple[str, str]:
    root, home = world
    rules = RuleSet([Rule.parse(r, "test") for r in allow], [])
    policy = ApprovalPolicy(root, rules, auto=True, home=home, tools=table, can_ask=can_ask)
    verdict = policy.check(ToolCall("c1", name, dict(args)), table.get(name))
    return verdict.action, verdict.reason


SETTINGS_PATHS = [
    "{home}/permissions.json", "{home}/trusted.json", "{home}/config.toml",
    "state-link/permissions.json", "sess/../trusted.json", "/proc/self/cwd/{rel}/config.toml",
    "{home}/sessions/forged.json", ".permissions.json", "./sub/../.permissions.json",
    "sub/.permissions.json", "sub/.PERMISSIONS.JSON",
    ".tether/settings.json", "sub/.tether/../.tether/settings.json",  # hooks: commands tether runs
]


def _spell(path: str, world: tuple[Path, Path]) -> str:
    root, home = world
    return path.format(home=home, rel=os.path.relpath(home, os.getcwd()))


@pytest.mark.parametrize("path", SETTINGS_PATHS)
def test_writing_tethers_settings_asks_under_auto_and_allow_all(world, table, path: str) -> None:
    action, reason = gate(world, table, "write_file", filepath=_spell(path, world), content="{}")
    assert action == "ask"
    assert "tether's own settings" in reason


@pytest.mark.parametrize("path", SETTINGS_PATHS)
def test_one_shot_refuses_writing_tethers_settings(world, table, path: str) -> None:
    action, reason = gate(world, table, "write_file", can_ask=False,
                          filepath=_spell(path, world), content="{}")
    assert action == "deny"
    assert "tether's own settings" in reason


def test_every_writing_tool_is_covered(world, table) -> None:
    root, home = world
    rules = str(home / "permissions.json")
    assert gate(world, table, "edit_file", filepath=rules, old_content="rm",
                new_content="ls")[0] == "ask"
    assert gate(world, table, "delete_file", filepath=rules)[0] == "ask"
    assert gate(world, table, "delete_file", filepath=".permissions.json")[0] == "ask"
    assert gate(world, table, "copy_file", source="a.txt",
                destination="sub/.permissions.json")[0] == "ask"
    assert gate(world, table, "create_dir", path=str(home / "new"))[0] == "ask"


def test_reading_settings_and_writing_ordinary_files_still_run(world, table) -> None:
    root, home = world
    assert gate(world, table, "read_file", filepath=str(home / "permissions.json"))[0] == "allow"
    assert gate(world, table, "copy_file", source=".permissions.json",
                destination="rules-copy.json")[0] == "allow"
    assert gate(world, table, "write_file", filepath="permissions.json", content="{}")[0] == "allow"
    assert gate(world, table, "write_file", filepath="sub/a.txt", content="x")[0] == "allow"


def test_one_shot_writes_a_rules_file_an_allow_rule_names_exactly(world, table) -> None:
    allowed = ("write_file(.permissions.json)",)
    assert gate(world, table, "write_file", allow=allowed, can_ask=False,
                filepath="./.permissions.json", content="{}")[0] == "allow"
    assert gate(world, table, "write_file", allow=("write_file(*.json)",), can_ask=False,
                filepath=".permissions.json", content="{}")[0] == "deny"


# --- deny read rules reach the files a search finds by itself ----------------------------------


def test_a_search_of_a_folder_skips_files_a_deny_read_rule_covers(tmp_path: Path, home: Path):
    """deny read(secret/*) stopped search_in_file(path="secret/k") but not a search of "."
    or of "secret", which read secret/k all the same."""
    from fakeserver import FakeServer, Reply
    from test_cli import openai_args, run_cli

    root = tmp_path / "proj"
    (root / "secret").mkdir(parents=True)
    (root / "secret" / "k").write_text("TOKEN=hidden-value\n")
    (root / "open.txt").write_text("TOKEN=public\n")
    script = [
        Reply(tool_calls=[("search_in_file", {"pattern": "TOKEN", "path": "."})]),
        Reply(tool_calls=[("search_in_file", {"pattern": "TOKEN", "path": "secret"})]),
        Reply(text="done"),
    ]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "go", "--auto", "--deny", "read(secret/*)", *openai_args(server)],
                       root, home)
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps([body for _, body in server.requests])
    assert "TOKEN=public" in sent
    assert "hidden-value" not in sent
    assert "a deny rule keeps from reading" in sent
