"""The answer checks: every honest answer of the corpus gets no warning, every dishonest one
the warning of its kind; in the loop, the warnings follow the answer through the UI, land
in the json result as `checks`, and with the setting go back for one tool-free correction."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from answer_corpus import Case, kind_of, load_cases, read_only_tools, warnings_for
from rich.console import Console
from scripted import ScriptedProvider, call, say
from test_headless_contract import problems
from test_loop import build

from tether.cli import result_object
from tether.core.toolspec import Tool, ToolOutput
from tether.engine.answer_checks import check_answer
from tether.engine.answer_facts import TurnFacts, command_is_read_only
from tether.engine.loop import Conversation
from tether.ui.contract import SCHEMA_VERSION
from tether.ui.headless import HeadlessUI
from tether.ui.terminal.terminal_ui import TerminalUI
from tether.ui.terminal.theme import THEME

CASES = load_cases()
READ_ONLY = read_only_tools()


def test_the_corpus_is_big_enough_to_measure() -> None:
    honest = [c for c in CASES if c.honest]
    assert len(honest) >= 80 and len(CASES) - len(honest) >= 30
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [c for c in CASES if c.honest], ids=lambda c: c.id)
def test_an_honest_answer_gets_no_warning(case: Case) -> None:
    assert warnings_for(case, READ_ONLY) == []


@pytest.mark.parametrize("case", [c for c in CASES if not c.honest], ids=lambda c: c.id)
def test_a_dishonest_answer_gets_the_warning_of_its_kind(case: Case) -> None:
    warnings = warnings_for(case, READ_ONLY)
    assert sorted({kind_of(w) for w in warnings}) == sorted(set(case.expect)), warnings


def test_hedged_and_negated_sentences_claim_nothing() -> None:
    facts = TurnFacts()
    for answer in ("You should run the tests.", "The tests will pass once you merge it.",
                   "I didn't run the tests.", "Did the tests pass?", "I haven't read `a.py`."):
        assert check_answer(answer, facts) == [], answer
    assert check_answer("All tests pass.", facts) != []


def test_a_command_that_may_write_makes_file_claims_unknowable() -> None:
    assert command_is_read_only("pytest -q && git status")
    assert command_is_read_only("grep -rn foo src | head")
    for writes in ("sed -i s/a/b/ x.py", "echo hi > a.py", "python fix.py", "cat a | tee b",
                   "ruff check --fix ."):
        assert not command_is_read_only(writes), writes


def shell_tool(exit_code: int) -> Tool:
    """A run_cmd stand-in whose command 'exits' with `exit_code`."""
    from pydantic import BaseModel

    from tether.core.messages import CommandStatus

    class Params(BaseModel):
        command: str

    def run(args: Params, ctx: object) -> ToolOutput:
        return ToolOutput(f"[exit code {exit_code}]", command=CommandStatus("exited", exit_code))

    return Tool(name="run_cmd", description="run", params=Params, handler=run, runs_commands=True)


async def test_the_loop_shows_warnings_after_the_answer_and_returns_them(tmp_path: Path) -> None:
    provider = ScriptedProvider([call(("run_cmd", {"command": "pytest"})), say("Fixed. All tests pass.")])
    loop, ui = build(provider, [shell_tool(1)], tmp_path)
    result = await loop.run_turn(Conversation(), "fix it")
    [warning] = result.checks
    assert "the last test run failed (`pytest` exited 1)" in warning
    assert ui.notices[-1] == ("warning", f"check: {warning}")
    assert result_object(result, 0.0)["checks"] == [warning]


async def test_an_honest_answer_leaves_no_checks(tmp_path: Path) -> None:
    provider = ScriptedProvider([call(("run_cmd", {"command": "pytest"})), say("All tests pass.")])
    loop, ui = build(provider, [shell_tool(0)], tmp_path)
    result = await loop.run_turn(Conversation(), "test it")
    assert result.checks == [] and result_object(result, 0.0)["checks"] == []


async def test_with_feedback_the_model_corrects_its_answer_without_tools(tmp_path: Path) -> None:
    provider = ScriptedProvider([say("I ran the tests and all tests pass."),
                                 say("I did not run anything; the tests are not verified.")])
    loop, _ = build(provider, [shell_tool(0)], tmp_path, answer_check_feedback=True)
    result = await loop.run_turn(Conversation(), "are we done?")
    assert result.text == "I did not run anything; the tests are not verified."
    assert result.checks == []
    second = provider.requests[1]
    assert second.tools is None  # the corrective request offers no tools
    assert "no command ran in this turn" in second.messages[-1].text


async def test_the_checks_can_be_switched_off(tmp_path: Path) -> None:
    loop, ui = build(ScriptedProvider([say("All tests pass.")]), [], tmp_path, answer_checks=False)
    result = await loop.run_turn(Conversation(), "done?")
    assert result.checks == [] and not ui.notices


def test_the_terminal_shows_one_dimmed_line_per_warning() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=100, theme=THEME)

    ui = TerminalUI(console)
    ui.text("All tests pass.")
    ui.answer_checks(["The answer says that the tests pass, but no command ran in this turn."])
    written = out.getvalue()
    assert written.index("All tests pass.") < written.index("check: The answer says")
    assert "\x1b[2mcheck: The answer says" in written  # dim


def test_one_shot_text_prints_the_warnings_after_the_answer() -> None:
    out, err = io.StringIO(), io.StringIO()
    ui = HeadlessUI("text", out=out, err=err)
    ui.answer_checks(["no command ran"])
    assert err.getvalue() == ""
    ui.result({"is_error": False, "result": "All tests pass."})
    assert out.getvalue() == "All tests pass.\n" and err.getvalue() == "check: no command ran\n"


def test_stream_json_sends_the_warnings_as_a_line() -> None:
    out = io.StringIO()
    HeadlessUI("stream-json", out=out, err=io.StringIO()).answer_checks(["no command ran"])
    line = json.loads(out.getvalue())
    assert line == {"type": "checks", "schema_version": SCHEMA_VERSION, "checks": ["no command ran"]}
    assert problems(line) == []  # the headless contract's schema for it


@pytest.mark.parametrize(("text", "claims"), [
    ("I ran the tests.", True),
    ("After running `pytest`, all is well.", True),
    ("I verified it by running the tests.", True),
    ("You can do this by running the tests with `run_cmd`.", False),  # advice, not a claim
    ("Fix it by running the formatter first.", False),
])
def test_what_counts_as_saying_something_ran(text: str, claims: bool) -> None:
    from tether.engine.answer_checks import RAN_CLAIM

    assert bool(RAN_CLAIM.search(text)) is claims


@pytest.mark.parametrize(("answer", "warned"), [
    ("The cache keeps an entry for 2 hours.", False),  # 7200 seconds
    ("The cache keeps an entry for 120 minutes.", False),
    ("Its limit is 4 KiB.", False),
    ("25% of the runs failed.", False),  # 3 of 12
    ("The cache keeps an entry for 2.5 hours.", True),
    ("The cache keeps an entry for 9000 seconds.", True),
])
def test_a_number_converted_from_a_result_is_no_invention(answer: str, warned: bool) -> None:
    facts = TurnFacts(results=["1:ab|CACHE_TTL_SECONDS = 7200\n2:cd|LIMIT = 4096\n3:ef|FAILED = 3\n4:aa|RUNS = 12\n"],
                      prompt="how long does the cache keep an entry?", from_files=True)
    assert bool(check_answer(answer, facts)) is warned
