"""The approval policy: every path a call names is checked, and --auto cannot outrun deny rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.core.messages import ToolCall
from tether.core.toolspec import ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import Dispatcher
from tether.safety.approval import ApprovalPolicy, checked_values
from tether.safety.permissions import Rule, RuleSet, load_rules
from tether.tools import builtin_tools


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


# ---------------------------------------------------------------- paths the kernel resolves


def kernel_policy(root: Path, table: ToolTable, allow=(), deny=(), auto=False) -> ApprovalPolicy:  # noqa: ANN001
    p = policy(root, allow, deny, auto)
    p.tools = table
    return p


async def test_an_allowed_folder_with_a_link_out_writes_nothing_outside(tmp_path: Path, table: ToolTable) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "other" / "deep").mkdir(parents=True)
    (root / "src" / "lnk").symlink_to("../other/deep")
    p = kernel_policy(root, table, allow=["write_file(src/*)"])
    d = Dispatcher(table, ToolContext(root=root), SilentUI(), policy=p)  # one-shot: nobody to ask
    result, _ = await d.dispatch(ToolCall("c", "write_file", {"filepath": "src/lnk/../pwn.txt", "content": "x"}))
    assert result.is_error and "approval" in result.content
    assert not (root / "other" / "pwn.txt").exists() and not (root / "src" / "pwn.txt").exists()
    ok, _ = await d.dispatch(ToolCall("c", "write_file", {"filepath": "src/fine.txt", "content": "x"}))
    assert not ok.is_error and (root / "src" / "fine.txt").read_text() == "x"


def test_a_path_through_proc_self_cwd_meets_deny_rules_under_auto(
    tmp_path: Path, table: ToolTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "proj"
    (root / "secret").mkdir(parents=True)
    monkeypatch.chdir(root)
    p = kernel_policy(root, table, deny=["write_file(secret/*)"], auto=True)
    assert verdict(p, table, "write_file", filepath="/proc/self/cwd/../proj/secret/k", content="x") == "deny"
    assert verdict(p, table, "write_file", filepath="/proc/self/cwd/../proj/open/k", content="x") == "allow"


def test_a_link_out_is_outside_even_behind_dotdot(tmp_path: Path, table: ToolTable) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "up").symlink_to(tmp_path.parent)
    p = kernel_policy(root, table, allow=["read_file"])
    assert verdict(p, table, "read_file", filepath="src/up/../x") == "ask"  # lexically proj/src/x
    assert verdict(p, table, "read_file", filepath="src/x") == "allow"


# ---------------------------------------------------------------- rules protect a path, not a tool


@pytest.mark.parametrize(("name", "args"), [
    ("write_file", {"filepath": "prod.env", "content": "x"}),
    ("edit_file", {"filepath": "prod.env", "old_content": "a", "new_content": "b"}),
    ("delete_file", {"filepath": "prod.env"}),
    ("copy_file", {"source": "a.txt", "destination": "prod.env"}),
    ("create_dir", {"path": "prod.env"}),
])
def test_a_deny_rule_for_write_file_stops_every_tool_that_writes(
    tmp_path: Path, table: ToolTable, name: str, args: dict
) -> None:
    for rule in ("write_file(*.env)", "write(*.env)"):
        p = kernel_policy(tmp_path, table, deny=[rule], auto=True)
        assert verdict(p, table, name, **args) == "deny", rule
    assert verdict(kernel_policy(tmp_path, table, auto=True), table, name, **args) == "allow"


@pytest.mark.parametrize(("name", "args"), [
    ("read_file", {"filepath": "secret.txt"}),
    ("search_in_file", {"pattern": "x", "path": "secret.txt"}),
    ("copy_file", {"source": "secret.txt", "destination": "b.txt"}),
    ("git_diff", {"path": "secret.txt"}),
    ("list_dir", {"path": "secret.txt"}),
    ("edit_file", {"filepath": "secret.txt", "old_content": "a", "new_content": "b"}),  # shows text
])
def test_a_deny_rule_for_read_file_stops_every_tool_that_reads(
    tmp_path: Path, table: ToolTable, name: str, args: dict
) -> None:
    for rule in ("read_file(secret.txt)", "read(secret.txt)", "search_in_file(secret.txt)"):
        p = kernel_policy(tmp_path, table, deny=[rule], auto=True)
        assert verdict(p, table, name, **args) == "deny", rule


def test_a_deny_rule_covers_its_own_kind_only(tmp_path: Path, table: ToolTable) -> None:
    p = kernel_policy(tmp_path, table, deny=["read(secret.txt)", "delete_file"], auto=True)
    assert verdict(p, table, "write_file", filepath="secret.txt", content="x") == "allow"
    assert verdict(p, table, "copy_file", source="a.txt", destination="secret.txt") == "allow"
    # A rule without a pattern names that tool alone, not every tool that writes.
    assert verdict(p, table, "delete_file", filepath="b.txt") == "deny"
    assert verdict(p, table, "write_file", filepath="b.txt", content="x") == "allow"
    writes = kernel_policy(tmp_path, table, deny=["write(secret.txt)"], auto=True)
    assert verdict(writes, table, "read_file", filepath="secret.txt") == "allow"
    assert verdict(writes, table, "copy_file", source="secret.txt", destination="b.txt") == "allow"


def test_allow_rules_of_a_kind_cover_every_tool_of_that_kind(tmp_path: Path, table: ToolTable) -> None:
    p = kernel_policy(tmp_path, table, allow=["write(src/*)", "run(git status)"])
    assert verdict(p, table, "write_file", filepath="src/a.py", content="x") == "allow"
    assert verdict(p, table, "edit_file", filepath="src/a.py", old_content="a", new_content="b") == "allow"
    assert verdict(p, table, "delete_file", filepath="src/a.py") == "allow"
    assert verdict(p, table, "create_dir", path="src/pkg") == "allow"
    assert verdict(p, table, "write_file", filepath="docs/a.md", content="x") == "ask"
    assert verdict(p, table, "run_cmd", command="git status --short") == "allow"
    assert verdict(p, table, "run_cmd", command="git push") == "ask"
    # copy_file also reads its source: a write rule alone does not cover that.
    assert verdict(p, table, "copy_file", source="docs/a", destination="src/b") == "ask"
    both = kernel_policy(tmp_path, table, allow=["write(src/*)", "read(docs/*)"])
    assert verdict(both, table, "copy_file", source="docs/a", destination="src/b") == "allow"
    reads = kernel_policy(tmp_path, table, allow=["read"])
    assert verdict(reads, table, "write_file", filepath="src/a.py", content="x") == "ask"


def test_run_rules_cover_every_command_running_tool(tmp_path: Path, table: ToolTable) -> None:
    p = kernel_policy(tmp_path, table, deny=["run(rm *)"], auto=True)
    assert verdict(p, table, "run_cmd", command="rm -rf build") == "deny"
    assert verdict(p, table, "run_cmd", command="ls && rm x") == "deny"
    assert verdict(p, table, "send_input", session="s1", text="rm x") == "deny"  # deny rules cannot see it
    assert verdict(p, table, "run_cmd", command="ls") == "allow"


def test_a_new_tool_is_covered_by_declaring_its_paths(tmp_path: Path, table: ToolTable) -> None:
    from pydantic import BaseModel

    from tether.core.toolspec import Tool

    class MoveParams(BaseModel):
        source: str
        destination: str

    move = Tool("move_file", "Move a file.", MoveParams, lambda args, ctx: "", writes_files=True,
                main_arg="source", path_params=("source", "destination"),
                written_params=("source", "destination"))
    table.add(move)
    for rule in ("write(keep/*)", "delete_file(keep/*)", "write_file(keep/*)"):
        p = kernel_policy(tmp_path, table, deny=[rule], auto=True)
        assert verdict(p, table, "move_file", source="keep/a", destination="b") == "deny", rule
        assert verdict(p, table, "move_file", source="a", destination="b") == "allow", rule
    reads = kernel_policy(tmp_path, table, deny=["read(keep/*)"], auto=True)
    assert verdict(reads, table, "move_file", source="keep/a", destination="b") == "allow"


async def test_a_symlink_swapped_while_the_user_decides_is_judged_again(tmp_path: Path, table: ToolTable) -> None:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "secret").mkdir()

    class SwappingUI(SilentUI):
        """Approves, but first a running command turns docs/ into a link to secret/."""

        can_ask = True

        async def approve(self, call: ToolCall, reason: str):  # noqa: ANN201
            (root / "docs").rmdir()
            (root / "docs").symlink_to("secret")
            from tether.core.ui_protocol import Decision

            return Decision(True)

    p = kernel_policy(root, table, deny=["write(secret/*)"])
    d = Dispatcher(table, ToolContext(root=root), SwappingUI(), policy=p)
    result, _ = await d.dispatch(ToolCall("c", "write_file", {"filepath": "docs/x.txt", "content": "x"}))
    assert result.is_error and "after approval" in result.content
    assert not (root / "secret" / "x.txt").exists()


@pytest.mark.parametrize("wanted", [True, "true", 1])
def test_keep_running_always_asks(tmp_path: Path, table: ToolTable, wanted: object) -> None:
    for p in (policy(tmp_path, auto=True), policy(tmp_path, allow=["run_cmd(make serve)"])):
        assert verdict(p, table, "run_cmd", command="make serve", keep_running=wanted) == "ask"
        assert verdict(p, table, "run_cmd", command="make serve", keep_running=False) == "allow"
    denied = policy(tmp_path, deny=["run_cmd(make *)"], auto=True)
    assert verdict(denied, table, "run_cmd", command="make serve", keep_running=True) == "deny"


# ---------------------------------------------------------------- a rules file that cannot be read


@pytest.mark.parametrize("content", [b'{"deny": ["run_cmd(rm *)"', b"\xff\xfe", b'["deny"]',
                                     b'{"deny": "run_cmd(rm *)"}'])
def test_an_unreadable_rules_file_fails_closed(tmp_path: Path, table: ToolTable, content: bytes) -> None:
    """Its deny rules may be lost: side effects ask (even where an allow rule or --auto would
    run them), --auto refuses them naming the file, and reads go on."""
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    (home / "permissions.json").write_bytes(content)
    rules, warnings = load_rules(root, home, trusted=True, extra_allow=["write_file"])
    assert str(home / "permissions.json") in warnings[0] and "asks first" in warnings[0]
    asking = ApprovalPolicy(root, rules).check(ToolCall("c1", "write_file", {"filepath": "a"}),
                                               table.get("write_file"))
    assert asking.action == "ask" and str(home / "permissions.json") in asking.reason
    auto = ApprovalPolicy(root, rules, auto=True)
    refused = auto.check(ToolCall("c2", "run_cmd", {"command": "rm -rf x"}), table.get("run_cmd"))
    assert refused.action == "deny" and str(home / "permissions.json") in refused.reason
    assert verdict(auto, table, "read_file", filepath="a.txt") == "allow"


@pytest.mark.parametrize("deny", ['"write_file()"', '["write_file"]', "7", '"write_file(a"'])
def test_a_deny_rule_that_cannot_be_understood_fails_closed(
    tmp_path: Path, table: ToolTable, deny: str
) -> None:
    """The user meant to forbid something: a rule tether cannot read is a forbidding rule
    lost, and losing one must not let --auto go on as if it were not written."""
    (tmp_path / "permissions.json").write_text(f'{{"deny": [{deny}, "delete_file"]}}')
    rules, warnings = load_rules(tmp_path, tmp_path, trusted=False)
    assert rules.unreadable and str(tmp_path / "permissions.json") in rules.unreadable[0]
    assert any("asks first" in w for w in warnings)
    auto = ApprovalPolicy(tmp_path, rules, auto=True)
    assert verdict(auto, table, "write_file", filepath="a") == "deny"
    assert verdict(auto, table, "read_file", filepath="a.txt") == "allow"


def test_a_bad_allow_rule_does_not_fail_closed(tmp_path: Path, table: ToolTable) -> None:
    (tmp_path / "permissions.json").write_text('{"allow": ["write_file()"], "deny": ["delete_file"]}')
    rules, _ = load_rules(tmp_path, tmp_path, trusted=False)
    assert rules.unreadable == []
    assert verdict(ApprovalPolicy(tmp_path, rules, auto=True), table, "write_file", filepath="a") == "allow"


@pytest.mark.parametrize("where", ["user", "project"])
def test_a_rules_file_that_is_a_dangling_link_fails_closed(
    tmp_path: Path, table: ToolTable, where: str
) -> None:
    """A rules file kept elsewhere (a dotfiles checkout) that is not there now: its deny rules
    are missing, not absent."""
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    path = home / "permissions.json" if where == "user" else root / ".permissions.json"
    path.symlink_to(tmp_path / "dotfiles" / "permissions.json")
    rules, warnings = load_rules(root, home, trusted=True)
    assert rules.unreadable and str(path) in rules.unreadable[0]
    assert "does not exist" in warnings[0]
    auto = ApprovalPolicy(root, rules, auto=True)
    assert verdict(auto, table, "run_cmd", command="rm -rf x") == "deny"


def test_a_link_out_is_outside_when_a_readable_folder_is_given(tmp_path: Path, table: ToolTable) -> None:
    """A relative path starts at the project root, not at a readable folder (the run's
    results folder): a link in the project that leads out still asks."""
    root, outside, results = tmp_path / "proj", tmp_path / "outside", tmp_path / "results"
    for folder in (root, outside, results):
        folder.mkdir()
    (outside / "secret.txt").write_text("s3cret\n")
    (root / "ln").symlink_to("../outside/secret.txt")
    (results / "ln").write_text("a results file of the same name\n")
    (results / "kept.txt").write_text("kept\n")
    p = ApprovalPolicy(root, RuleSet([], []), readable=(results,))
    assert verdict(p, table, "read_file", filepath="ln") == "ask"
    assert verdict(p, table, "read_file", filepath="../outside/secret.txt") == "ask"
    assert verdict(p, table, "read_file", filepath=str(results / "kept.txt")) == "allow"
    assert verdict(p, table, "read_file", filepath="../results/kept.txt") == "allow"
