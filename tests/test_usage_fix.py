"""The usage of a program that refused options, shown after its usage error (real argparse
scripts, run by the real run_cmd); never a command with fewer options than the model wrote."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say
from test_profile import menu_loop

from tether.core.loop import Conversation
from tether.core.usage_fix import NO_USAGE, usage_text
from tether.safety.shell_session import ShellSessions
from tether.tools.shell import shell_tools

DEPLOY = (
    "import argparse\n"
    "p = argparse.ArgumentParser(prog='deploy.py')\np.add_argument('--target', default='staging')\n"
    "a = p.parse_args()\nprint('deployed to', a.target)\n"
)
WIPE = (
    "import argparse\n"
    "p = argparse.ArgumentParser(prog='wipe.py')\np.add_argument('--older-than', type=int, required=True)\n"
    "p.add_argument('--yes', action='store_true')\n"
    "a = p.parse_args()\nprint('wiped files older than', a.older_than)\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "deploy.py").write_text(DEPLOY)
    (tmp_path / "wipe.py").write_text(WIPE)
    return tmp_path


async def first_result(project: Path, command: str) -> str:
    """The result the model got for `command` in a turn where it runs it, then answers."""
    sessions = ShellSessions(project)
    try:
        provider = ScriptedProvider([call(("run_cmd", {"command": command})), say("It refused the option.")])
        loop, _ = menu_loop(provider, project, tools=list(shell_tools(sessions)), nudges=True,
                            menu_names=("run_cmd",))
        await loop.run_turn(Conversation(), "run the deploy as a dry run")
    finally:
        await sessions.close_all()
    return provider.requests[1].messages[-1].tool_results[0].content


@pytest.mark.parametrize(("arguments", "refused", "usage"), [
    ("deploy.py --dry-run", "--dry-run", "usage: deploy.py [-h] [--target TARGET]"),
    ("wipe.py --confirm-each --older-than 30", "--confirm-each",
     "usage: wipe.py [-h] --older-than OLDER_THAN [--yes]"),
])
async def test_an_unknown_option_gets_the_usage_and_no_command_without_it(
        project: Path, arguments: str, refused: str, usage: str) -> None:
    """`deploy.py --dry-run` was offered back as `deploy.py` (a real deploy), and `wipe.py
    --confirm-each --older-than 30` without its confirmation."""
    command = f"{sys.executable} {arguments}"
    result = await first_result(project, command)
    assert f"unrecognized arguments: {refused}" in result  # the program's own error
    note = result.split("unrecognized arguments:", 1)[1]
    assert f"The program does not take {refused}. Nothing was run in its place. Its usage:\n{usage}" in note
    assert "run_cmd" not in note and f"{sys.executable} " not in note  # no command is offered


def test_the_usage_block_keeps_its_wrapped_lines() -> None:
    output = ("usage: tool.py [-h] [--alpha ALPHA]\n               [--beta BETA]\n"
              "tool.py: error: unrecognized arguments: --gamma\n")
    assert usage_text(output) == "usage: tool.py [-h] [--alpha ALPHA]\n               [--beta BETA]"
    assert usage_text("Error: No such option: --x\n") == NO_USAGE
