"""The note after a failed test run: the function the failure calls and the file it is in,
shown to be copied into the edit (or, when long, the read_file call for its file) (a real
pytest, run by the real run_cmd)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say
from test_profile import menu_loop

from tether.core.loop import Conversation
from tether.safety.shell_session import ShellSessions
from tether.tools.files import FILE_TOOLS
from tether.tools.shell import shell_tools

CORE = (
    "def mean(values):\n    return sum(values) / len(values)\n\n\n"
    "def median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n"
)
TEST = (
    "from stats.core import mean, median\n\n\n"
    "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
    "def test_median_even():\n    assert median([4, 1, 3, 2]) == 2.5\n"
)
RUN = f"{sys.executable} -m pytest -q -p no:cacheprovider tests/test_core.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / "stats").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "stats" / "__init__.py").write_text("")
    (root / "stats" / "core.py").write_text(CORE)
    (root / "tests" / "test_core.py").write_text(TEST)
    (root / "conftest.py").write_text("")
    return root


async def run_turn(root: Path, replies: list, request: str):  # noqa: ANN201
    sessions = ShellSessions(root)
    try:
        provider = ScriptedProvider(replies)
        loop, _ = menu_loop(provider, root, tools=[*FILE_TOOLS, *shell_tools(sessions)], nudges=True,
                            menu_names=("read_file", "write_file", "edit_file", "run_cmd", "search_in_file"))
        result = await loop.run_turn(Conversation(), request)
        return provider, result
    finally:
        await sessions.close_all()


async def test_a_failed_test_run_shows_the_function_it_calls_to_copy_into_the_edit(project: Path) -> None:
    run = call(("run_cmd", {"command": RUN}))
    fixed = ("def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n"
             "    if len(ordered) % 2:\n        return ordered[middle]\n"
             "    return (ordered[middle - 1] + ordered[middle]) / 2")
    shown = "def median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]"
    edit = call(("edit_file", {"filepath": "stats/core.py", "old_content": shown, "new_content": fixed}))
    provider, result = await run_turn(
        project, [run, edit, run, say("Fixed median; the tests pass.")],
        "tests/test_core.py fails. Fix the code, without changing the test.",
    )
    assert "assert 3 == 2.5" in result.evidence[0].result  # the real failure
    note = provider.requests[1].messages[-1].tool_results[0].content
    assert ("The failing test calls median, defined in stats/core.py (the fix goes there, not in the test). "
            f"It is now (lines 5-7):\n{shown}\nFix it: reply with only an edit_file call") in note
    assert not result.evidence[1].error  # the function as shown is the old_content that matches
    assert "2 passed" in result.evidence[2].result  # the real test run, after the real edit
    assert "The failing test calls" not in result.evidence[2].result


async def test_a_long_function_gets_its_file_read_offered_then_where_to_fix(project: Path) -> None:
    long_median = "def median(values):\n" + "".join(f"    v{i} = {i}\n" for i in range(45)) + \
        "    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n"
    (project / "stats" / "core.py").write_text(CORE.split("def median")[0] + long_median)
    run = call(("run_cmd", {"command": RUN}))
    provider, _ = await run_turn(
        project, [run, run, say("Done.")], "tests/test_core.py fails. Fix the code, without changing the test.",
    )
    note = provider.requests[1].messages[-1].tool_results[0].content
    assert "The failing test calls median from stats/core.py, which you have not read yet" in note
    assert note.endswith('reply with only:\n{"name": "read_file", "arguments": {"filepath": "stats/core.py"}}')
    again = provider.requests[2].messages[-1].tool_results[0].content
    assert "The failing test calls" not in again  # once per file a turn
    read = call(("read_file", {"filepath": "stats/core.py"}))
    provider, _ = await run_turn(project, [read, run, say("Done.")], "make the failing median test pass")
    note = provider.requests[2].messages[-1].tool_results[0].content
    assert "The failing test calls median, which is defined in stats/core.py: fix median there" in note


@pytest.mark.parametrize(("command", "request_text", "fixed"), [
    (f"{sys.executable} -c \"raise SystemExit(1)\"", "make the median test pass", False),  # no test ran
    (RUN, "what does test_core check?", False),  # a question: nothing to fix
    (RUN, "make the median test pass", True),  # the test passes
])
async def test_no_note_for_a_run_that_is_no_failing_test_or_a_question(
    project: Path, command: str, request_text: str, fixed: bool,
) -> None:
    if fixed:
        (project / "stats" / "core.py").write_text(CORE.replace("ordered[len(ordered) // 2]", "2.5"))
    provider, _ = await run_turn(project, [call(("run_cmd", {"command": command})), say("Done.")], request_text)
    assert "The failing test" not in provider.requests[1].messages[-1].tool_results[0].content
