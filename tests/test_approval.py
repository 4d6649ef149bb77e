"""The approval policy: every path a call names is checked, and --auto cannot outrun deny rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.approval import ApprovalPolicy, checked_values
from tether.dispatch import Dispatcher
from tether.messages import ToolCall
from tether.permissions import Rule, RuleSet
from tether.tools import builtin_tools
from tether.toolspec import ToolContext, ToolTable
from tether.ui import SilentUI


@pytest.fixture
def table(tmp_path: Path) -> ToolTable:
    tools, _ = builtin_tools(ToolContext(root=tmp_path))
    return tools


def policy(root: Path, allow=(), deny=(), auto=False) -> ApprovalPolicy:  # noqa: ANN001
    rules = RuleSet([Rule.parse(r, "test") for r in allow], [Rule.parse(r, "test") for r in deny])
    return ApprovalPolicy(root, rules, auto=auto)


def verdict(p: ApprovalPolicy, table: ToolTable, name: str, **args: object) -> str:
    return p.check(ToolCall("c1", name, dict(args)), table.get(name)).action


def test_copy_destination_must_be_covered_by_the_allow_rule(tmp_path: Path, table: ToolTable) -> None:
    p = policy(tmp_path, allow=["copy_file(docs/*)"])
    assert verdict(p, table, "copy_file", source="docs/a", destination="docs/b") == "allow"
    assert verdict(p, table, "copy_file", source="docs/a", destination="src/evil.py") == "ask"


def test_deny_rules_see_every_path_even_under_auto(tmp_path: Path, table: ToolTable) -> None:
    p = policy(tmp_path, deny=["copy_file(protected/*)", "*(.env)"], auto=True)
    assert verdict(p, table, "copy_file", source="a.txt", destination="protected/x") == "deny"
    assert verdict(p, table, "search_in_file", pattern="KEY", path=".env") == "deny"
    assert verdict(p, table, "copy_file", source="x", destination=".env") == "deny"
    assert verdict(p, table, "copy_file", source="a.txt", destination="b.txt") == "allow"


@pytest.mark.parametrize("command", [
    "$'rm' -f victim.txt", "$(echo rm) -f victim.txt", "r${x}m victim.txt", "`echo rm` victim.txt",
])
def test_auto_refuses_commands_deny_rules_cannot_see_through(
    tmp_path: Path, table: ToolTable, command: str
) -> None:
    p = policy(tmp_path, deny=["run_cmd(rm *)"], auto=True)
    assert verdict(p, table, "run_cmd", command=command) == "deny"
    assert verdict(p, table, "run_cmd", command="ls -la") == "allow"


def test_auto_refuses_shell_input_when_deny_rules_exist(tmp_path: Path, table: ToolTable) -> None:
    p = policy(tmp_path, deny=["run_cmd(rm *)"], auto=True)
    assert verdict(p, table, "run_cmd", command="bash", stdin="rm -f victim.txt\n") == "deny"
    assert verdict(p, table, "send_input", session="s1", text="rm -f victim.txt") == "deny"
    without_rules = policy(tmp_path, auto=True)
    assert verdict(without_rules, table, "run_cmd", command="bash", stdin="echo hi\n") == "allow"


def test_opaque_command_asks_even_when_a_rule_would_allow_its_parts(tmp_path: Path, table: ToolTable) -> None:
    p = policy(tmp_path, allow=["run_cmd(git status)"], deny=["run_cmd(rm *)"])
    assert verdict(p, table, "run_cmd", command="git status") == "allow"
    assert verdict(p, table, "run_cmd", command="git status $(echo x)") == "ask"
    assert verdict(p, table, "run_cmd", command="git status $(rm x)") == "deny"


def test_path_rules_match_the_whole_path(tmp_path: Path, table: ToolTable) -> None:
    p = policy(tmp_path, allow=["write_file(README.md)"])
    assert verdict(p, table, "write_file", filepath="README.md", content="x") == "allow"
    assert verdict(p, table, "write_file", filepath="README.md evil.sh", content="x") == "ask"


def test_outside_paths_ask_and_reads_inside_run(tmp_path: Path, table: ToolTable) -> None:
    p = policy(tmp_path, allow=["write_file"])
    assert verdict(p, table, "read_file", filepath="a.txt") == "allow"
    assert verdict(p, table, "read_file", filepath="../x") == "ask"
    assert verdict(p, table, "write_file", filepath="/etc/x", content="x") == "ask"
    (tmp_path / "link").symlink_to("/tmp")
    assert verdict(p, table, "write_file", filepath="link/x", content="x") == "ask"


def test_every_declared_path_is_checked_not_only_file_tools(tmp_path: Path, table: ToolTable) -> None:
    p = policy(tmp_path)
    assert verdict(p, table, "git_diff", path="src") == "allow"
    assert verdict(p, table, "git_diff", path="../elsewhere") == "ask"
    assert verdict(p, table, "search_in_file", pattern="x", path="/etc") == "ask"
    assert verdict(policy(tmp_path, deny=["*(.env)"]), table, "git_diff", path=".env") == "deny"


def test_checked_values_name_the_main_argument_and_every_path(table: ToolTable) -> None:
    call = ToolCall("c", "copy_file", {"source": "a", "destination": "b"})
    checked = checked_values(call, table.get("copy_file"))
    assert [(c.value, c.kinds, c.is_path) for c in checked] == [
        ("a", ("read",), True), ("b", ("write",), True)
    ]


async def test_a_path_the_os_cannot_represent_is_refused_not_a_crash(tmp_path: Path, table: ToolTable) -> None:
    dispatcher = Dispatcher(table, ToolContext(root=tmp_path), SilentUI(), policy=policy(tmp_path))
    for bad in ("a\x00b", "a\ud800b"):
        result, evidence = await dispatcher.dispatch(ToolCall("c", "read_file", {"filepath": bad}))
        assert result.is_error and evidence.error


@pytest.mark.parametrize("command", [
    "cat $TETHER_HOME/cred*.json", "cat ~/.tether/*", "tar czf x.tgz {home}", "ls {home} && cat {home}/c*",
])
def test_commands_naming_the_state_directory_are_refused_even_under_auto(
    tmp_path: Path, table: ToolTable, command: str
) -> None:
    home = tmp_path / "state"
    p = ApprovalPolicy(tmp_path / "project", RuleSet([], []), auto=True, home=home)
    call = ToolCall("c", "run_cmd", {"command": command.format(home=home)})
    assert p.check(call, table.get("run_cmd")).action == "deny"
    assert p.check(ToolCall("c", "run_cmd", {"command": "cat notes.txt"}), table.get("run_cmd")).action == "allow"
