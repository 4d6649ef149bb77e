"""The command without the options a program refused, offered after its usage error (a real
argparse script, run by the real run_cmd)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say
from test_profile import menu_loop

from tether.core.loop import Conversation
from tether.core.usage_fix import without_options
from tether.safety.shell_session import ShellSessions
from tether.tools.shell import shell_tools

STATS = (
    "import argparse\n"
    "p = argparse.ArgumentParser()\np.add_argument('file')\np.add_argument('--min-length', type=int, default=1)\n"
    "a = p.parse_args()\n"
    "words = [w for w in open(a.file).read().split() if len(w) >= a.min_length]\n"
    "print(f'unique: {len(set(words))}')\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "april.txt").write_text("alpha beta gamma alpha delta\n")
    (tmp_path / "stats.py").write_text(STATS)
    return tmp_path


def test_unknown_options_go_with_a_value_that_is_no_file(project: Path) -> None:
    command = "python stats.py --count 5 --min 5 --file notes/april.txt"
    assert without_options(command, ["--count", "--file", "notes/april.txt"], project) == (
        "python stats.py --min 5 notes/april.txt")
    assert without_options("python stats.py --count=5 notes/april.txt", ["--count=5"], project) == (
        "python stats.py notes/april.txt")
    assert without_options("python stats.py notes/april.txt", ["--count"], project) is None  # nothing to drop
    assert without_options("python stats.py 'unclosed", ["--x"], project) is None


async def bad_then_fixed(project: Path, bad: str, fixed: str):  # noqa: ANN201
    """The result the first (bad) command got, and the turn, where the model sends `bad`, then `fixed`."""
    sessions = ShellSessions(project)
    try:
        provider = ScriptedProvider([
            call(("run_cmd", {"command": bad})), call(("run_cmd", {"command": fixed})), say("3 unique words."),
        ])
        loop, _ = menu_loop(provider, project, tools=list(shell_tools(sessions)), nudges=True,
                            menu_names=("run_cmd",))
        result = await loop.run_turn(Conversation(), "how many unique words of 5 or more letters are in the notes?")
    finally:
        await sessions.close_all()
    return provider.requests[1].messages[-1].tool_results[0].content, result



async def test_a_usage_error_gets_the_command_without_the_refused_options(project: Path) -> None:
    bad = f"{sys.executable} stats.py --count 5 --min 5 notes/april.txt"
    fixed = f"{sys.executable} stats.py --min 5 notes/april.txt"
    first, result = await bad_then_fixed(project, bad, fixed)
    assert "unrecognized arguments: --count notes/april.txt" in first  # the real usage error
    assert "The program does not take --count (its usage line is above)." in first
    assert first.endswith('{"name": "run_cmd", "arguments": {"command": "' + fixed + '"}}')
    assert "unique: 3" in result.evidence[1].result and "does not take" not in result.evidence[1].result


async def test_an_option_named_like_a_positional_argument_keeps_its_value_as_that_argument(project: Path) -> None:
    """multi_greeter_shout: `--name Ann` for a program whose usage says `name`; dropping the
    option and its value left a command that failed for want of the name."""
    bad = f"{sys.executable} stats.py --file notes/april.txt --min-length 5"
    fixed = f"{sys.executable} stats.py notes/april.txt --min-length 5"
    first, result = await bad_then_fixed(project, bad, fixed)
    assert "usage: stats.py [-h] [--min-length MIN_LENGTH] file" in first  # the real usage line
    assert first.endswith('{"name": "run_cmd", "arguments": {"command": "' + fixed + '"}}')
    assert "unique: " in result.evidence[1].result


def test_a_positional_option_keeps_its_value_in_either_form() -> None:
    positional = {"name"}
    assert without_options("python -m greeter --name Ann --shout", ["--name"], None, positional) == (
        "python -m greeter Ann --shout")
    assert without_options("python -m greeter --name=Ann", ["--name=Ann"], None, positional) == (
        "python -m greeter Ann")
    assert without_options("python -m greeter --name Ann", ["--name"], None) == "python -m greeter"
