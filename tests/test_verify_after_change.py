"""Verify after a change (assist/verify.py), through the real loop, dispatcher and run_cmd on a
real project: the harness runs the check the request names and gives a failure back."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say

from tether.assist.verify import (
    CHECK_ID,
    EACH_FAILED,
    EACH_PASSED,
    FIRST_FAILED,
    NO_TEST_RAN,
    OUTPUT_LINES,
    PYTEST,
    RAN_NO_TESTS,
    unittest_target,
)
from tether.core.profile import LEVERS_ENV, profile_named
from tether.engine.loop import Conversation, TurnResult
from tether.engine.repeatstop import LOOP_TEMPERATURE
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI

WRONG = "def add(a, b):\n    return a - b\n"
STILL_WRONG = "def add(a, b):\n    return a * b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
UNITTEST = (
    "import unittest\n\nfrom calc import add\n\n\n"
    "class AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n"
    "        self.assertEqual(add(2, 3), 5)\n"
)
REQUEST = "fix add in calc.py so that test_calc.py passes"


def project(tmp_path: Path, test: str = UNITTEST, name: str = "test_calc.py") -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text(WRONG)
    (root / name).write_text(test)
    return root


def runtime_for(root: Path, home: Path, replies: list, *, auto: bool = True,
                env: dict[str, str] | None = None, **given: object) -> tuple[Runtime, ScriptedProvider]:
    settings = {"provider": "openai", "model": "gpt-test", "openai_base_url": "http://127.0.0.1:9/v1",
                "sandbox": "off", **given}
    loaded, _ = load_settings(settings, {}, home)
    runtime = build_runtime(loaded, RunOptions(root=root, home=home, auto=auto),
                            HeadlessUI(out=io.StringIO(), err=io.StringIO()), env or {})
    runtime.apply_profile(profile_named("full", runtime.levers_off))
    provider = ScriptedProvider(replies)
    runtime.loop.provider = provider
    return runtime, provider


def write(content: str) -> list:
    return call(("write_file", {"filepath": "calc.py", "content": content}))


def checks_run(result: TurnResult) -> list:
    return [record for record in result.evidence if record.call.id.startswith(CHECK_ID)]


def sent_back(provider: ScriptedProvider) -> list[str]:
    """The user messages of the last request after the first (what the harness said)."""
    return [m.text for m in provider.requests[-1].messages[2:] if m.role == "user" and not m.tool_results]


async def test_a_failing_check_goes_back_and_the_fix_ends_the_turn_verified(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [write(STILL_WRONG), say("Fixed."), write(RIGHT), say("Fixed now.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert (root / "calc.py").read_text() == RIGHT
    [failure] = sent_back(provider)
    assert "python3 -m" in failure and "test_calc" in failure and "exit 1" in failure
    assert "AssertionError: 6 != 5" in failure  # the test's own assertion line
    first, second = checks_run(result)
    assert first.command is not None and first.command.exit_code == 1
    assert second.command is not None and second.command.exit_code == 0
    assert result.text.startswith("Fixed now.")
    assert result.text.splitlines()[-1].startswith("Verified: `python3 -m ") and "passed (exit 0)" in result.text


async def test_when_the_fixes_run_out_the_answer_says_the_check_still_fails(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    replies = [write(STILL_WRONG), say("Fixed."), write(STILL_WRONG + "\n"), say("Fixed, surely.")]
    runtime, provider = runtime_for(root, home, replies, verify_after_change=1)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(checks_run(result)) == 2 and result.stop_reason == "end_turn"
    last = result.text.splitlines()[-1]
    assert last.startswith("Not fixed: `python3 -m") and "still fails (exit 1, after 1 attempt to fix it)" in last


async def test_an_answer_with_no_new_change_after_a_failure_says_it_still_fails(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, _ = runtime_for(root, home, [write(STILL_WRONG), say("Fixed."), say("It is fixed, really.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(checks_run(result)) == 1  # nothing changed: the failure stands, not run again
    assert result.text.startswith("It is fixed, really.") and "Not fixed: " in result.text.splitlines()[-1]


async def test_a_refused_check_is_a_note_and_no_loop(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    # one-shot without --auto: writes are allowed by a rule, commands are not, so run_cmd is refused
    runtime, provider = runtime_for(root, home, [write(RIGHT), say("Fixed.")], auto=False)
    runtime.add_session_rule("allow", "write_file")
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(provider.requests) == 2 and sent_back(provider) == []
    [refused] = checks_run(result)
    assert refused.command is None and refused.error
    assert result.text.startswith("Fixed.")
    assert result.text.splitlines()[-1].startswith("Not verified: the check `python3 -m")


async def test_a_test_file_run_directly_that_runs_no_test_is_no_pass(tmp_path: Path, home: Path) -> None:
    quiet = UNITTEST  # no unittest.main(): `python3 calc_test.py` defines the test and runs nothing
    root = project(tmp_path, quiet, name="calc_test.py")
    request = "fix calc.py so that `python3 calc_test.py` passes"
    runtime, provider = runtime_for(root, home, [write(RIGHT), say("Fixed."), say("Done.")])
    result = await runtime.loop.run_turn(Conversation(), request)
    [check] = checks_run(result)
    assert check.call.arguments["command"] == "python3 calc_test.py"
    assert check.command is not None and check.command.exit_code == 0  # it exited 0 ...
    assert RAN_NO_TESTS in sent_back(provider)[0]  # ... and that is no pass
    assert "Not fixed" in result.text.splitlines()[-1] and RAN_NO_TESTS in result.text


async def test_the_lever_and_the_setting_switch_it_off(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    for options in ({"env": {LEVERS_ENV: "verify"}}, {"verify_after_change": 0}):
        (root / "calc.py").write_text(WRONG)
        runtime, provider = runtime_for(root, home, [write(STILL_WRONG), say("Fixed.")], **options)  # type: ignore[arg-type]
        result = await runtime.loop.run_turn(Conversation(), REQUEST)
        assert checks_run(result) == [] and result.text == "Fixed." and len(provider.requests) == 2


async def test_no_change_no_check_and_a_question_is_never_checked(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [say("add subtracts.")])
    result = await runtime.loop.run_turn(Conversation(), "why does test_calc.py fail?")
    assert checks_run(result) == [] and result.text == "add subtracts."


async def test_a_change_request_in_a_project_with_tests_runs_its_test_command(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, _ = runtime_for(root, home, [write(RIGHT), say("Fixed.")])
    result = await runtime.loop.run_turn(Conversation(), "the add function is wrong, fix it")
    [check] = checks_run(result)
    assert check.call.arguments["command"] in (f"python3 {PYTEST}", "python3 -m unittest")
    assert "Verified:" in result.text.splitlines()[-1]


def test_a_test_file_becomes_the_module_unittest_loads() -> None:
    assert unittest_target("tests/test_calc.py") == "tests.test_calc"
    assert unittest_target("my-tests/test_calc.py") == "my-tests/test_calc.py"


async def test_a_data_file_written_for_a_change_request_runs_no_project_tests(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    written = call(("write_file", {"filepath": "total.txt", "content": "5\n"}))
    runtime, provider = runtime_for(root, home, [written, say("Wrote 5.")])
    result = await runtime.loop.run_turn(Conversation(), "write the sum of 2 and 3 to total.txt")
    assert checks_run(result) == [] and result.text == "Wrote 5." and len(provider.requests) == 2


def request_text(provider: ScriptedProvider) -> str:
    """Everything the last request sent, results included."""
    return "\n".join(str(m) for m in provider.requests[-1].messages)


async def test_a_test_file_run_directly_that_ran_no_test_gets_a_note_in_its_result(
    tmp_path: Path, home: Path
) -> None:
    """`python3 test_calc.py` with no unittest.main() exits 0 having run nothing; the model read
    that as its tests passing."""
    root = project(tmp_path)
    run_it = call(("run_cmd", {"command": "python3 test_calc.py"}))
    runtime, provider = runtime_for(root, home, [run_it, say("The tests pass.")], verify_after_change=0)
    runtime.apply_profile(profile_named("small"))
    runtime.loop.provider = provider
    await runtime.loop.run_turn(Conversation(), "why does test_calc.py fail?")
    assert NO_TEST_RAN.format(command="python3 test_calc.py", file="test_calc.py", module="test_calc") \
        in request_text(provider)


async def test_a_test_run_that_counts_its_tests_or_fails_gets_no_note(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path, UNITTEST + "\n\nunittest.main()\n")
    runs = [call(("run_cmd", {"command": "python3 test_calc.py"})), call(("run_cmd", {"command": "python3 calc.py x"})),
            say("Done.")]
    runtime, provider = runtime_for(root, home, runs, verify_after_change=0)
    runtime.apply_profile(profile_named("small"))
    runtime.loop.provider = provider
    result = await runtime.loop.run_turn(Conversation(), "why does test_calc.py fail?")
    # both ran: the test file counted its tests (and failed), the script is no test file
    assert [r.command.exit_code for r in result.evidence if r.command is not None] == [1, 0]
    assert "Note: no test ran" not in request_text(provider)


async def test_the_no_tests_lever_switches_the_note_off(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    run_it = call(("run_cmd", {"command": "python3 test_calc.py"}))
    runtime, provider = runtime_for(root, home, [run_it, say("ok")], verify_after_change=0)
    runtime.apply_profile(profile_named("small", "no_tests"))
    runtime.loop.provider = provider
    result = await runtime.loop.run_turn(Conversation(), "why does test_calc.py fail?")
    assert [r.command.exit_code for r in result.evidence if r.command is not None] == [0]  # it ran, quietly
    assert "Note: no test ran" not in request_text(provider)



@pytest.mark.parametrize(("name", "test"), [
    ("test_calc.py", "from calc import add\n\nassert add(2, 2) == 0\nprint('all good')\n"),  # checks at top level
    ("test_calc.py", UNITTEST.replace("unittest.TestCase", "object") + "\n\nif __name__ == '__main__':\n"
                     "    print('all passed')\n"),  # runs what it means to
    ("test_calc.sh", "#!/bin/sh\necho fine\n"),  # not a Python file: no pytest to offer
])
async def test_a_test_file_that_runs_its_own_checks_gets_no_note(
    tmp_path: Path, home: Path, name: str, test: str
) -> None:
    """The note says the file "only defines its tests": said of a script that runs them, it
    sends the model to pytest, which finds nothing to collect."""
    root = project(tmp_path, test, name)
    command = f"{'bash' if name.endswith('.sh') else 'python3'} {name}"
    runtime, provider = runtime_for(root, home, [call(("run_cmd", {"command": command})), say("ok")],
                                    verify_after_change=0)
    runtime.apply_profile(profile_named("small"))
    runtime.loop.provider = provider
    await runtime.loop.run_turn(Conversation(), f"why does {name} fail?")
    assert "Note: no test ran" not in request_text(provider)


def last_result(provider: ScriptedProvider, request: int) -> str:
    """The last tool result the model read in request number `request`."""
    return [part.content for m in provider.requests[request].messages for part in m.tool_results][-1]


def with_levers(runtime: Runtime, on: str) -> None:
    runtime.apply_profile(profile_named("full", runtime.levers_off, on))


async def test_with_the_early_lever_the_check_runs_after_each_change_and_goes_with_its_result(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [write(STILL_WRONG), write(RIGHT), say("Fixed.")])
    with_levers(runtime, "early")
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    first, second = checks_run(result)  # one after each write, none more at the answer
    assert first.command is not None and first.command.exit_code == 1
    assert second.command is not None and second.command.exit_code == 0
    history = provider.requests[1].messages  # the check shown as a call of its own, with its result
    assert [call.arguments["command"] for call in history[-2].tool_calls] == [first.call.arguments["command"]]
    after_first = last_result(provider, 1)
    assert "AssertionError: 6 != 5" in after_first
    assert after_first.endswith(EACH_FAILED.format(how="exit 1"))
    assert last_result(provider, 2).endswith(EACH_PASSED)
    assert sent_back(provider) == []  # nothing else was said
    assert result.text.startswith("Fixed.") and result.text.splitlines()[-1].startswith("Verified: `python3 -m")


async def check_command(tmp_path: Path, home: Path) -> str:
    """The command the harness runs as this project's check (pytest or unittest, as the host has)."""
    (tmp_path / "probe").mkdir()
    root = project(tmp_path / "probe")
    runtime, _ = runtime_for(root, home, [write(RIGHT), say("Fixed.")])
    [check] = checks_run(await runtime.loop.run_turn(Conversation(), REQUEST))
    return str(check.call.arguments["command"])


@pytest.mark.parametrize("early", [True, False])
async def test_a_check_the_model_ran_itself_after_its_change_is_not_run_again(
        tmp_path: Path, home: Path, early: bool) -> None:
    command = await check_command(tmp_path, home)
    root = project(tmp_path)
    spaced = command.replace(" ", "  ", 1)  # the same command, spaced otherwise
    replies = [call(("write_file", {"filepath": "calc.py", "content": STILL_WRONG}), ("run_cmd", {"command": spaced})),
               write(RIGHT), call(("run_cmd", {"command": command})), say("Fixed.")]
    runtime, provider = runtime_for(root, home, replies)
    if early:
        with_levers(runtime, "early")
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    ran = [record for record in result.evidence if record.call.name == "run_cmd"]
    if early:  # the model's own failing run carries the note; the write alone gets the check
        assert [record.call.id.startswith(CHECK_ID) for record in ran] == [False, True, False]
        assert last_result(provider, 1).endswith(EACH_FAILED.format(how="exit 1"))
        assert "AssertionError" in last_result(provider, 1)
        assert len(provider.requests[1].messages) == len(provider.requests[0].messages) + 2
    else:  # the answer is verified by the model's last run, after the last change
        assert [record.call.id.startswith(CHECK_ID) for record in ran] == [False, False]
    assert result.text.splitlines()[-1] == f"Verified: `{command}` passed (exit 0)."


async def test_an_answer_right_after_an_early_failure_goes_back_then_the_failure_stands(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    replies = [write(STILL_WRONG), say("Fixed."), say("It is fixed, really.")]
    runtime, provider = runtime_for(root, home, replies, verify_after_change=1)
    with_levers(runtime, "early")
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(checks_run(result)) == 1 and len(provider.requests) == 3  # not run again: nothing changed
    assert "Fix the code (not the tests)" in sent_back(provider)[-1]
    assert "AssertionError" not in sent_back(provider)[-1]  # its output is in the history already
    # told again what it had read and answered without a change: sampled, not greedy, this time
    assert provider.requests[2].options.temperature == LOOP_TEMPERATURE
    assert provider.requests[1].options.temperature != LOOP_TEMPERATURE
    assert result.text.startswith("It is fixed, really.")
    assert result.text.splitlines()[-1].startswith("Not fixed: `python3 -m")


async def test_without_the_early_lever_nothing_runs_before_the_answer(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [write(RIGHT), say("Fixed.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(provider.requests) == 2 and sent_back(provider) == []  # the write's result alone
    [check] = checks_run(result)
    assert check.command is not None and check.command.exit_code == 0


async def test_the_small_profile_checks_after_each_change() -> None:
    assert profile_named("small").verify_each_change and not profile_named("full").verify_each_change
    assert "early" not in profile_named("small", "early").levers()


async def test_in_the_small_profile_an_empty_reply_after_an_early_failure_is_told_to_fix_it(
        tmp_path: Path, home: Path) -> None:
    from tether.assist.rules import CHANGE_WARNED

    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [write(STILL_WRONG), say(""), write(RIGHT), say("Fixed.")])
    runtime.apply_profile(profile_named("small"))
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    told = [m.text for m in provider.requests[2].messages if m.role == "user" and not m.tool_results][-1]
    assert CHANGE_WARNED.format(path="calc.py") in told  # not "your last call worked"
    assert (root / "calc.py").read_text() == RIGHT and result.text.startswith("Fixed.")


async def test_with_the_first_lever_the_model_starts_from_the_named_tests_failures(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [write(RIGHT), say("Fixed.")])
    with_levers(runtime, "first")
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    first = provider.requests[0].messages
    [ran] = [call for m in first for call in m.tool_calls]
    assert ran.name == "run_cmd" and "test_calc.py" in ran.arguments["command"]
    shown = last_result(provider, 0)
    assert "AssertionError: -1 != 5" in shown and shown.endswith(FIRST_FAILED.format(how="exit 1"))
    before, after = checks_run(result)
    assert before.command is not None and before.command.exit_code == 1  # before the change
    assert after.command is not None and after.command.exit_code == 0
    assert result.text.splitlines()[-1].startswith("Verified:")


async def test_the_first_check_runs_only_for_a_change_request_naming_tests_and_only_with_its_lever(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    for request, levers in (("why does test_calc.py fail?", "first"), ("the add function is wrong, fix it", "first"),
                            (REQUEST, "")):
        runtime, provider = runtime_for(root, home, [say("Looked.")])
        with_levers(runtime, levers)
        await runtime.loop.run_turn(Conversation(), request)
        assert not [call for m in provider.requests[0].messages for call in m.tool_calls], request
    assert not profile_named("small").check_first and profile_named("small", "", "first").check_first


async def test_a_long_test_output_is_shown_to_the_model_by_its_end(tmp_path: Path, home: Path) -> None:
    many = UNITTEST + "".join(f"\n    def test_add_{n}(self):\n        self.assertEqual(add({n}, 1), {n + 1})\n"
                              for n in range(40))
    root = project(tmp_path, many)
    runtime, provider = runtime_for(root, home, [write(STILL_WRONG), say("Done."), say("Done.")])
    with_levers(runtime, "early")
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    [check] = checks_run(result)
    shown = last_result(provider, 1)
    assert len(check.result.splitlines()) > OUTPUT_LINES  # the evidence keeps the whole output
    assert shown.startswith("(") and "earlier lines left out)" in shown.splitlines()[0]
    assert len(shown.splitlines()) <= OUTPUT_LINES + 3 and "41 failed" in shown


async def test_with_the_trace_lever_an_unchanged_answer_is_dropped_and_the_first_failure_traced(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    shown_again = f"Here is the fixed code:\n```python\n{STILL_WRONG}```"
    replies = [write(STILL_WRONG), say(shown_again), write(RIGHT), say("Fixed.")]
    runtime, provider = runtime_for(root, home, replies, terse_history=True)
    runtime.apply_profile(profile_named("full", "", "early,trace"))
    runtime.loop.settings.terse_history = True
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    told = sent_back(provider)[-1]
    assert "left the code as it was" in told and "step by step" in told
    assert "self.assertEqual(add(2, 3), 5)" in told and "6 != 5" in told  # the case to go through
    assert not any("Here is the fixed code" in m.text for m in provider.requests[2].messages)
    assert provider.requests[2].options.temperature == LOOP_TEMPERATURE
    assert (root / "calc.py").read_text() == RIGHT and result.text.startswith("Fixed.")


async def test_without_the_trace_lever_the_unchanged_answer_stays_and_no_case_is_named(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    shown_again = f"Here is the fixed code:\n```python\n{STILL_WRONG}```"
    replies = [write(STILL_WRONG), say(shown_again), write(RIGHT), say("Fixed.")]
    runtime, provider = runtime_for(root, home, replies)
    with_levers(runtime, "early")
    await runtime.loop.run_turn(Conversation(), REQUEST)
    assert "Nothing changed since" in sent_back(provider)[-1]
    assert any("Here is the fixed code" in m.text for m in provider.requests[2].messages)


def test_the_small_profile_leaves_the_trace_lever_off_until_measured() -> None:
    assert not profile_named("small").trace_failure
    assert profile_named("small", "", "trace").trace_failure


async def test_once_the_check_after_a_change_passed_the_answer_gets_the_smaller_cap(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    replies = [write(STILL_WRONG), write(RIGHT), say("Fixed.")]
    runtime, provider = runtime_for(root, home, replies)
    runtime.apply_profile(profile_named("small"))
    small = profile_named("small")
    await runtime.loop.run_turn(Conversation(), REQUEST)
    caps = [request.options.max_tokens for request in provider.requests]
    # the first write's check failed: the fix had the whole cap; after the pass, the answer's
    assert caps == [small.max_reply_tokens, small.max_reply_tokens, small.answer_tokens]
    assert small.answer_tokens is not None and small.max_reply_tokens is not None
    assert small.answer_tokens < small.max_reply_tokens
    assert profile_named("small", "reply").answer_tokens is None  # the reply lever takes both


async def test_a_reply_cut_at_the_answer_cap_gets_the_whole_cap_next(tmp_path: Path, home: Path) -> None:
    from tether.core.messages import Done, TextDelta, Usage

    root = project(tmp_path)
    cut_call = ('<tool_call>\n{"name": "write_file", "arguments": {"filepath": "NOTES.md"}}\n'
                "<content>\nA long file the cap cut")
    cut = [TextDelta(cut_call), Done(Usage(10, 400), "max_tokens")]
    replies = [write(RIGHT), cut, say("Fixed.")]
    runtime, provider = runtime_for(root, home, replies)
    runtime.apply_profile(profile_named("small"))
    runtime.loop.mode = "text"  # the protocol the small profile picks when the setting is auto
    small = profile_named("small")
    await runtime.loop.run_turn(Conversation(), REQUEST)
    caps = [request.options.max_tokens for request in provider.requests]
    assert caps[:2] == [small.max_reply_tokens, small.answer_tokens]
    assert caps[2:] and set(caps[2:]) == {small.max_reply_tokens}  # a cut call: the whole cap again
