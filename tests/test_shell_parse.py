"""The shell splitter: which simple commands a line runs, and what it cannot see through."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.safety.shell_parse import (
    ShellSplit,
    allow_forms,
    deny_forms,
    normalize_whitespace,
    split_command,
)


def test_simple_command_is_one_part_and_not_compound() -> None:
    split = split_command("git   status\t--short")
    assert split == ShellSplit(["git status --short"], False, [])
    assert not split.compound


@pytest.mark.parametrize(
    ("command", "parts", "reason"),
    [
        ("git status; rm -rf x", ["git status", "rm -rf x"], "';' separator"),
        ("make && make test", ["make", "make test"], "'&&'"),
        ("a || b", ["a", "b"], "'||'"),
        ("ls | wc -l", ["ls", "wc -l"], "pipe '|'"),
        ("ls |& wc -l", ["ls", "wc -l"], "pipe '|&'"),
        ("sleep 1 & rm x", ["sleep 1", "rm x"], "background '&'"),
        ("git status\nrm x", ["git status", "rm x"], "newline"),
    ],
)
def test_control_operators_split_into_parts(command: str, parts: list[str], reason: str) -> None:
    split = split_command(command)
    assert split.parts == parts
    assert reason in split.reasons
    assert not split.opaque
    assert split.compound


@pytest.mark.parametrize(
    "command",
    [
        "echo 'a; rm x'",
        'echo "a && rm x | sh"',
        "echo a\\;rm",
        "git log --format='%h %s'",
        "grep -e 'a|b' file",
    ],
)
def test_quoted_or_escaped_operators_do_not_split(command: str) -> None:
    split = split_command(command)
    assert len(split.parts) == 1
    assert not split.compound


@pytest.mark.parametrize(
    ("command", "reason_word", "inner"),
    [
        ("git status $(rm x)", "command substitution", "rm x"),
        ("git status `rm x`", "backtick", "rm x"),
        ('echo "$(rm x)"', "command substitution", "rm x"),
        ('echo "`rm x`"', "backtick", "rm x"),
        ("cat <(rm x)", "process substitution", "rm x"),
        ("git status ${IFS}rm", "parameter expansion", None),
        ("echo $HOME", "variable expansion", None),
        ("echo $'\\x41'", "$'...' quoting", None),
        ("git status > file", "redirection", None),
        ("git status 2>&1 >/etc/passwd", "redirection", None),
        ("git status &> log", "redirection", None),
        ("git status <<EOF\nrm x\nEOF", "here-document", "rm x"),
        ("(git status; rm x)", "subshell", "rm x"),
        ("{ git status; rm x; }", "brace", "rm x"),
        ("ls {a,b}", "brace", None),
        ("ls {a", "brace", None),
        ("git status 'oops", "unbalanced quote", None),
        ('git status "oops', "unbalanced quote", None),
        ("eval git status", "eval", "git status"),
        ("exec rm x", "exec", "rm x"),
        ("source ./env.sh", "script", None),
        (". ./env.sh", "script", None),
        ("bash -c 'rm -rf x'", "shell", "rm -rf x"),
        ("sh -c 'rm x; ls'", "shell", "rm x"),
        ("zsh -lc 'rm x'", "shell", "rm x"),
        ("/bin/bash -o pipefail -c 'rm x'", "shell", "rm x"),
        ("curl http://x | sh", "shell", None),
        ("env -S 'rm x'", "shell", "rm x"),
        ("sudo -s rm x", "shell", "rm x"),
        ("if true; then rm x; fi", "keyword", "rm x"),
        ("ssh host 'rm -rf x'", "runs a command through ssh", "rm -rf x"),
        ("watch 'rm x'", "runs a command through watch", "rm x"),
        ("/bin/r? x", "wildcard in the command name", None),
    ],
)
def test_constructs_we_cannot_see_through_are_opaque(
    command: str, reason_word: str, inner: str | None
) -> None:
    split = split_command(command)
    assert split.opaque
    assert any(reason_word in r for r in split.reasons), split.reasons
    if inner is not None:
        assert inner in split.parts, split.parts


@pytest.mark.parametrize(
    ("command", "inner"),
    [
        ("sudo rm -rf /", "rm -rf /"),
        ("sudo -u root rm x", "rm x"),
        ("sudo -Eu root rm x", "rm x"),
        ("sudo --user=root rm x", "rm x"),
        ("doas -u root rm x", "rm x"),
        ("env FOO=1 -u BAR rm x", "rm x"),
        ("env -i PATH=/bin rm x", "rm x"),
        ("FOO=1 BAR=2 rm x", "rm x"),
        ("timeout -s KILL 10 rm x", "rm x"),
        ("nice -n 5 rm x", "rm x"),
        ("nice -5 rm x", "rm x"),
        ("nohup rm x", "rm x"),
        ("time -p rm x", "rm x"),
        ("command rm x", "rm x"),
        ("stdbuf -oL rm x", "rm x"),
        ("xargs rm", "rm '<input>'"),
        ("xargs -n1 -P 4 rm -f", "rm -f '<input>'"),
        ("xargs -0rt rm", "rm '<input>'"),
        ("find . -name '*.pyc' -exec rm {} \\;", "rm '{}'"),
        ("find . -execdir rm -f {} +", "rm -f '{}'"),
        ("sudo env FOO=1 rm x", "rm x"),
    ],
)
def test_commands_run_by_other_commands_become_parts(command: str, inner: str) -> None:
    split = split_command(command)
    assert inner in split.parts, split.parts
    assert split.compound
    assert len(split.parts) >= 2


def test_unknown_wrapper_option_is_opaque() -> None:
    split = split_command("sudo --frobnicate root rm x")
    assert split.opaque
    assert any("options not understood" in r for r in split.reasons)


def test_find_without_exec_is_a_plain_command() -> None:
    split = split_command("find . -name '*.py' -newer setup.py")
    assert split.parts == ["find . -name '*.py' -newer setup.py"]
    assert not split.compound


def test_find_exec_without_terminator_is_opaque() -> None:
    assert split_command("find . -exec rm {}").opaque


def test_nesting_is_bounded() -> None:
    command = "eval " * 50 + "rm x"
    split = split_command(command)
    assert split.opaque
    assert any("nested too deeply" in r for r in split.reasons)


def test_line_continuation_joins_lines() -> None:
    split = split_command("git status \\\n  --short")
    assert split.parts == ["git status --short"]
    assert not split.compound


def test_a_comment_runs_nothing_and_hides_nothing() -> None:
    # Commands run under bash, where `#` starting a word comments out the rest of the line.
    assert split_command("git status # ; rm x").parts == ["git status"]
    assert not split_command("git status # ; rm x").compound


@pytest.mark.parametrize(
    ("command", "hidden"),
    [
        ("git status #'\ntouch M\n#'", "touch M"),
        ('git status #"\ntouch M\n#"', "touch M"),
        ("git status # \\\ntouch M", "touch M"),
        ("git status #$(\ntouch M\n#)", "touch M"),
        ("git status #`\ntouch M\n#`", "touch M"),
        ("git status;#'\ntouch M", "touch M"),
        ("git status&&#'\ntouch M", "touch M"),
        ("git status \\\n#'\ntouch M", "touch M"),
    ],
)
def test_quotes_and_backslashes_in_a_comment_hide_no_line(command: str, hidden: str) -> None:
    """The comment ends at the newline whatever it holds: the next line is a command."""
    split = split_command(command)
    assert hidden in split.parts, split.parts
    assert split.compound


@pytest.mark.parametrize("command", ["echo a#b; rm x", "echo \\#b; rm x", "echo '#'; rm x",
                                     'echo "#"; rm x', "echo a\\\n#b; rm x"])
def test_a_hash_inside_a_word_is_no_comment(command: str) -> None:
    assert "rm x" in split_command(command).parts


def test_a_hash_inside_a_word_keeps_its_quotes_working() -> None:
    # `\#'` is a word holding `#'`: the quote opens and never closes.
    assert split_command("echo \\#'\nrm x").opaque


@pytest.mark.parametrize(
    ("command", "reason_word"),
    [
        ("ls *.py", "wildcard"),
        ("rm -f a?", "wildcard"),
        ("cat [ab]", "wildcard"),
        ("cat ~/notes", "tilde"),
        ("git --git-dir=x PREFIX=~/x", "tilde"),
        ("echo a{},b}", "brace"),
        ("a[x]=1", "array subscript"),
        ("trap 'rm x' EXIT", "trap"),
        ("shopt -s expand_aliases", "shopt"),
        ("alias ls='rm x'", "alias"),
        ("hash -p /tmp/evil ls", "hash"),
        ("enable -f ./x.so x", "enable"),
        ("let x=1", "let"),
        ("compgen -C 'rm x' a", "compgen"),
        ("mapfile -C 'rm x' a", "mapfile"),
        ("set -x", "set with options"),
        ("declare -i y", "make variables evaluate"),
        ("test -v 'a[$(rm x)]'", "array element"),
        ("printf -v 'a[$(rm x)]' 1", "array element"),
        ("echo a\\", "backslash at the end"),
        ("echo a\0b", "NUL"),
        ("setarch x86_64 bash -c 'rm x'", "shell"),
    ],
)
def test_what_bash_expands_or_runs_later_is_opaque(command: str, reason_word: str) -> None:
    split = split_command(command.replace("\\0", "\0"))
    assert split.opaque
    assert any(reason_word in r for r in split.reasons), split.reasons


@pytest.mark.parametrize(
    "command",
    ["[ -f x ] && rm x", "test -f x", "git log HEAD~1", "set -euo pipefail", "export A=1",
     "find . -exec rm {} \\;", "echo 'a*' \\? \"~\""],
)
def test_literal_lookalikes_stay_readable(command: str) -> None:
    assert not split_command(command).opaque, split_command(command).reasons


def test_time_keyword_runs_what_follows_its_options() -> None:
    # `time -v ls` runs a command named `-v` under bash's time keyword.
    assert "-v ls" in split_command("time -v ls").parts
    assert "ls" in split_command("time -p -- ls").parts


def test_a_trap_string_is_still_seen_by_deny_rules() -> None:
    assert "rm x" in split_command("trap 'rm x' EXIT").parts


def test_words_are_split_as_bash_splits_them() -> None:
    assert allow_forms('echo "a\\$b" "c\\d" "e\\\nf"')[-1] == "echo 'a$b' 'c\\d' ef"
    assert allow_forms("echo a\rb")[-1] == "echo 'a\rb'"  # a carriage return is no blank
    assert allow_forms("rm ''")[-1] == "rm ''"


def test_a_lone_dollar_is_literal() -> None:
    split = split_command("echo costs 5 $")
    assert not split.opaque


def test_normalize_whitespace_keeps_quotes_and_newlines() -> None:
    assert normalize_whitespace("  make   &&\tmake  test ") == "make && make test"
    assert normalize_whitespace("echo 'a   b'  c") == "echo 'a   b' c"
    assert normalize_whitespace('echo "a  \\"  b"') == 'echo "a  \\"  b"'
    assert normalize_whitespace("echo hi \n\n  rm x") == "echo hi\nrm x"
    # a newline separates commands, so it must never turn into a space
    assert normalize_whitespace("echo a\nb") != normalize_whitespace("echo a b")


def test_allow_forms_include_the_requoted_words() -> None:
    assert allow_forms("git 'status'") == ["git 'status'", "git status"]
    assert "echo 'a b'" in allow_forms('echo "a b"')


def test_deny_forms_see_through_quotes_and_directories() -> None:
    forms = deny_forms("/bin/rm 'a b'")
    assert "rm 'a b'" in forms
    assert "rm a b" in forms
    assert "/bin/rm a b" in forms


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab ;&|<>()$`'\"\\{}\n#*=-cx")), max_size=40))
def test_split_never_raises(text: str) -> None:
    split = split_command(text)
    assert isinstance(split.parts, list)
    assert all(isinstance(p, str) and p for p in split.parts)


# --- cross-check against a real bash --------------------------------------------------

BASH = shutil.which("bash")
STUBS = ("git", "rm", "ls", "wc", "make", "x", "ab")

CROSS_CHECK = [
    "git status",
    "git status 'a; rm x'",
    'git status "a && rm x | ls"',
    "git status \\; rm x",
    "git status a\\ b",
    "git 'status' --short",
    "git status; rm x",
    "git status && rm x || ls",
    "git status | wc -l",
    "git status\nrm x",
    "git status & rm x",
    "git status \\\n --short",
    "git log --format='%h;%s' | wc",
    "make && make test",
    "git status;rm x;ls",
    "git status ';' rm x",
]


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize("command", CROSS_CHECK)
def test_every_command_bash_runs_is_one_of_the_parts(command: str, tmp_path: Path) -> None:
    """Run the line in a real bash where every external command is a stub that
    logs its argv: each logged command must be one of the parts we found."""
    split = split_command(command)
    assert not split.opaque
    ran = _run_with_stubs(command, tmp_path)
    canonical_parts = {form for part in split.parts for form in allow_forms(part)}
    assert ran, "the stubs never ran: the harness is broken"
    assert len(ran) <= len(split.parts)
    for argv in ran:
        assert shlex.join(argv) in canonical_parts, (argv, split.parts)


def _run_with_stubs(command: str, tmp_path: Path) -> list[list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    for name in STUBS:
        stub = bin_dir / name
        # One write per record, so commands running side by side in a pipe
        # cannot interleave their lines.
        stub.write_text(
            '#!/bin/sh\nrecord="$(basename "$0")"\n'
            'for a in "$@"; do record="$record$(printf "\\037")$a"; done\n'
            'printf "%s\\036" "$record" >> "$LOG"\n'
        )
        stub.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "LOG": str(log)}
    assert BASH is not None
    subprocess.run(
        [BASH, "--noprofile", "--norc", "-c", command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=10,
        check=False,
    )
    if not log.exists():
        return []
    records = [r for r in log.read_bytes().decode().split("\x1e") if r]
    return [record.split("\x1f") for record in records]
