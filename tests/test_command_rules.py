"""Command rules against a hostile model, end to end: comments cannot hide a line from an
allow rule, and no wrapper program hides a command from a deny rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from test_cli import openai_args, run_cli

from tether.core.messages import ToolCall
from tether.core.toolspec import ToolContext
from tether.safety.approval import ApprovalPolicy
from tether.safety.permissions import Rule, RuleSet
from tether.tools import builtin_tools

COMMENT_HIDES_A_QUOTE = "git status #'\ntouch M\n#'"
COMMENT_ENDS_IN_A_BACKSLASH = "git status # \\\ntouch M"


def new_project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def one_shot(project: Path, home: Path, command: str, *flags: str) -> str:
    """Run `tether -p` where the model asks for `command` once; returns stderr."""
    script = [Reply(tool_calls=[("run_cmd", {"command": command})]), Reply(text="done")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "go", *flags, *openai_args(server)], project, home)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_a_quote_in_a_comment_does_not_smuggle_a_line_past_an_allow_rule(
    tmp_path: Path, home: Path
) -> None:
    project = new_project(tmp_path)
    err = one_shot(project, home, COMMENT_HIDES_A_QUOTE, "--allow", "run_cmd(git status)")
    assert not (project / "M").exists()
    assert "blocked" in err
    # The same line does run touch when every command is allowed: the trick is real.
    one_shot(project, home, COMMENT_HIDES_A_QUOTE, "--allow", "run_cmd")
    assert (project / "M").exists()


def test_a_backslash_in_a_comment_does_not_smuggle_a_line_past_a_deny_rule_under_auto(
    tmp_path: Path, home: Path
) -> None:
    project = new_project(tmp_path)
    (project / ".permissions.json").write_text(json.dumps({"deny": ["run_cmd(touch *)"]}))
    err = one_shot(project, home, COMMENT_ENDS_IN_A_BACKSLASH, "--auto")
    assert not (project / "M").exists()
    assert "touch" in err and "denied" in err
    (project / ".permissions.json").unlink()
    one_shot(project, home, COMMENT_ENDS_IN_A_BACKSLASH, "--auto")
    assert (project / "M").exists()


WRAPPED_RM = [
    "setarch x86_64 rm victim", "prlimit rm victim", "setpriv --reuid=0 rm victim",
    "fakeroot rm victim", "ssh-agent rm victim", "dbus-run-session rm victim",
    "flock lockfile rm victim",
]


def test_no_wrapper_program_hides_rm_from_a_deny_rule_under_auto(tmp_path: Path, home: Path) -> None:
    project = new_project(tmp_path)
    present = [c for c in WRAPPED_RM if shutil.which(c.split()[0])]
    if not present:
        pytest.skip("none of the wrapper programs is installed")
    (project / "victim").write_text("keep me\n")
    (project / ".permissions.json").write_text(json.dumps({"deny": ["run_cmd(rm *)"]}))
    calls = [("run_cmd", {"command": command}) for command in present]
    with FakeServer([Reply(tool_calls=calls), Reply(text="done")]) as server:
        proc = run_cli(["-p", "go", "--auto", *openai_args(server)], project, home)
    assert proc.returncode == 0, proc.stderr
    assert (project / "victim").read_text() == "keep me\n"
    assert proc.stderr.count("denied by rule run_cmd(rm *)") == len(present), proc.stderr


# --- the same at the policy, for the spellings no real program is needed for -----------


def verdict(command: str, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = (),
            auto: bool = False, root: Path = Path(".")) -> str:
    tools, _ = builtin_tools(ToolContext(root=root))
    rules = RuleSet([Rule.parse(r, "test") for r in allow], [Rule.parse(r, "test") for r in deny])
    policy = ApprovalPolicy(root, rules, auto=auto)
    return policy.check(ToolCall("c1", "run_cmd", {"command": command}), tools.get("run_cmd")).action


@pytest.mark.parametrize("command", [
    *WRAPPED_RM, "/bin/rm victim", "./rm victim", "env -i rm victim", "env -i rm", "VAR=x rm victim",
    "nice -n 5 ionice -c3 /usr/bin/rm -f victim", "unknown-tool --opt=1 rm victim", "xargs rm",
    "systemd-run --user rm victim", "ls; timeout 5 strace -f rm victim",
])
def test_a_deny_rule_sees_its_command_at_any_later_word(command: str, tmp_path: Path) -> None:
    assert verdict(command, deny=("run_cmd(rm *)",), auto=True, root=tmp_path) == "deny"
    assert verdict(command, deny=("run_cmd(rm *)",), allow=("run_cmd",), root=tmp_path) == "deny"


def test_a_run_capability_deny_rule_sees_behind_a_wrapper_too(tmp_path: Path) -> None:
    assert verdict("setarch x86_64 rm victim", deny=("run(rm *)",), auto=True, root=tmp_path) == "deny"


def test_a_deny_rule_naming_a_subcommand_sees_it_behind_a_wrapper(tmp_path: Path) -> None:
    deny = ("run_cmd(git push *)",)
    assert verdict("setarch x86_64 git push --force", deny=deny, auto=True, root=tmp_path) == "deny"
    assert verdict("setarch x86_64 git status", deny=deny, auto=True, root=tmp_path) == "allow"


def test_allow_rules_do_not_widen_to_later_words(tmp_path: Path) -> None:
    assert verdict("setarch x86_64 git status", allow=("run_cmd(git status)",), root=tmp_path) == "ask"
    assert verdict("git status", allow=("run_cmd(git status)",), root=tmp_path) == "allow"


def test_a_part_with_too_many_words_to_check_is_denied(tmp_path: Path) -> None:
    command = "echo " + " ".join(["rmx"] * 300)
    assert verdict(command, deny=("run_cmd(rm *)",), auto=True, root=tmp_path) == "deny"
    assert verdict("echo " + " ".join(["a"] * 300), deny=("run_cmd(rm *)",), auto=True,
                   root=tmp_path) == "allow"
