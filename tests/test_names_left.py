"""The search after a change for a name the request names that the change took out of a file
(assist/leftovers.py), through the real loop, dispatcher and search_in_file on a real project."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say
from test_verify_after_change import checks_run
from test_verify_after_change import runtime_for as runtime_with_every_gate

from tether.assist.leftovers import (
    EARLY_MAX,
    GONE,
    LEFT_OVER,
    PLACES_SHOWN,
    left_at_end_line,
    left_over_message,
    places_left,
    removals,
    still_in_message,
)
from tether.assist.request import read_request
from tether.core.messages import Evidence, ToolCall
from tether.core.profile import LEVERS_ENV
from tether.engine.loop import Conversation, TurnResult
from tether.runtime import Runtime

UTIL = "def calc_total(xs):\n    return sum(xs)\n"
MAIN = "from util import calc_total\n\nprint(calc_total([1, 2]))\n"
REQUEST = "Rename calc_total to compute_total everywhere in the project."
RENAME_DEF = ("edit_file", {"filepath": "util.py", "old_content": "def calc_total(xs):",
                            "new_content": "def compute_total(xs):"})


def runtime_for(root: Path, home: Path, replies: list, env: dict[str, str] | None = None,
                progress: bool = False, **given: object) -> tuple[Runtime, ScriptedProvider]:
    """The runtime with the search for a missing name off (tests/test_missing_names.py's):
    what these tests count is the search for what a change left; at the answer only, unless
    `progress` (the search after each change) is asked for."""
    off = ",".join(filter(None, ["missing", "" if progress else "progress", (env or {}).get(LEVERS_ENV, "")]))
    return runtime_with_every_gate(root, home, replies, env={**(env or {}), LEVERS_ENV: off}, **given)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "util.py").write_text(UTIL)
    (root / "main.py").write_text(MAIN)
    return root


def harness_says(provider: ScriptedProvider) -> list[str]:
    return [m.text for m in provider.requests[-1].messages[2:] if m.role == "user" and not m.tool_results]


async def test_a_rename_done_in_one_file_of_two_gets_the_places_left(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    fix_main = ("write_file", {"filepath": "main.py", "content": MAIN.replace("calc_total", "compute_total")})
    replies = [call(RENAME_DEF), say("Renamed."), call(fix_main), say("Renamed in both files.")]
    runtime, provider = runtime_for(root, home, replies)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    [message] = harness_says(provider)
    assert message == LEFT_OVER.format(
        name="calc_total", changed="util.py",
        places="main.py:1: from util import calc_total\nmain.py:3: print(calc_total([1, 2]))")
    search, again = checks_run(result)  # the second: nothing is left at the second answer
    assert search.call.name == "search_in_file" and search.call.arguments["path"] == "."
    assert again.call.arguments == search.call.arguments and again.result.startswith("No matches")
    assert "calc_total" not in (root / "main.py").read_text() and result.text == "Renamed in both files."
    assert len(provider.requests) == 4  # asked once: the second answer ends the turn


async def test_nothing_left_is_a_search_in_the_evidence_and_no_message(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    (root / "main.py").write_text("print(1)\n")
    runtime, provider = runtime_for(root, home, [call(RENAME_DEF), say("Renamed.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert result.text == "Renamed." and len(provider.requests) == 2
    [search] = checks_run(result)
    assert search.result.startswith("No matches")


async def test_the_model_may_answer_why_they_stay_and_is_not_asked_again(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    replies = [call(RENAME_DEF), say("Renamed."), say("main.py is generated; it stays.")]
    runtime, provider = runtime_for(root, home, replies)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(provider.requests) == 3 and len(checks_run(result)) == 2
    assert result.text == ("main.py is generated; it stays.\n\n" + left_at_end_line(
        "calc_total", ["main.py:1: from util import calc_total", "main.py:3: print(calc_total([1, 2]))"]))
    assert result.text.endswith("`calc_total` is still in main.py (lines 1, 3).")


async def test_a_write_of_a_file_read_in_the_turn_counts_as_taking_the_name_out(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    rewrite = ("write_file", {"filepath": "util.py", "content": UTIL.replace("calc_total", "compute_total")})
    replies = [call(("read_file", {"filepath": "util.py"})), call(rewrite), say("Done."), say("Done, really.")]
    runtime, provider = runtime_for(root, home, replies)
    await runtime.loop.run_turn(Conversation(), REQUEST)
    [message] = harness_says(provider)
    assert message.startswith("Your change took `calc_total` out of util.py") and "main.py:3:" in message


async def test_tests_the_request_keeps_are_no_place_left(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    (root / "main.py").write_text("print(1)\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_util.py").write_text("from util import calc_total\n")
    request = "Rename calc_total to compute_total, without changing the tests."
    runtime, provider = runtime_for(root, home, [call(RENAME_DEF), say("Renamed."), say("Again.")])
    result = await runtime.loop.run_turn(Conversation(), request)
    assert not any("still in" in text for text in harness_says(provider))
    assert any(r.call.name == "search_in_file" for r in checks_run(result))


async def test_a_name_the_request_does_not_name_is_not_searched(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [call(RENAME_DEF), say("Done.")])
    result = await runtime.loop.run_turn(Conversation(), "tidy up util.py")
    assert checks_run(result) == [] and result.text == "Done."


async def test_the_lever_switches_it_off(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [call(RENAME_DEF), say("Renamed.")],
                                    env={LEVERS_ENV: "leftovers"})
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert checks_run(result) == [] and result.text == "Renamed."


def record(name: str, args: dict, result: str = "", error: bool = False) -> Evidence:
    return Evidence(ToolCall("c1", name, args), 0.0, 0.0, "", result, error=error)


def test_removals_are_whole_names_taken_out_by_successful_changes() -> None:
    reading = read_request("rename `fetch` to `fetch_all` and drop --legacy", ["api.py"])
    assert reading.code_names == ("fetch", "fetch_all", "--legacy")
    evidence = [
        record("edit_file", {"filepath": "api.py", "old_content": "def fetch():", "new_content": "def fetch_all():"}),
        record("edit_file", {"filepath": "b.py", "old_content": "fetch()", "new_content": "x"}, error=True),
        record("edit_file", {"filepath": "c.py", "old_content": "prefetch()", "new_content": "x"}),
        record("write_file", {"filepath": "cli.sh", "content": "run\n"}),  # never read: before unknown
        record("edit_file", {"filepath": "cli.py", "old_content": "'--legacy',", "new_content": ""}),
    ]
    assert [(r.name, r.path) for r in removals(reading, evidence)] == [("fetch", "api.py"), ("--legacy", "cli.py")]


def test_places_left_are_the_match_lines_and_long_lists_are_cut() -> None:
    reading = read_request("rename calc_total to total without changing the tests", [])
    result = "a.py:3: calc_total()\ntests/test_a.py:1: calc_total\n(2 matching lines in 2 files)"
    assert places_left(result, reading) == ["a.py:3: calc_total()"]
    many = [f"a.py:{n}: calc_total()" for n in range(1, PLACES_SHOWN + 4)]
    message = left_over_message("calc_total", ["util.py"], many)
    assert f"a.py:{PLACES_SHOWN}: " in message and f"a.py:{PLACES_SHOWN + 1}: " not in message
    assert "(and 3 more lines)" in message


def test_a_request_that_names_its_files_is_about_those_files_alone() -> None:
    result = "api.py:9: return fetch()\nclient.py:3: api.fetch()\n(2 matching lines in 2 files)"
    assert places_left(result, read_request("rename fetch to fetch_all in api.py", ["api.py", "client.py"])) == [
        "api.py:9: return fetch()"]
    assert len(places_left(result, read_request("rename fetch to fetch_all", ["api.py", "client.py"]))) == 2


def test_a_record_of_past_releases_is_no_place_left() -> None:
    result = "CHANGELOG.md:4: - add fetch()\ndocs/HISTORY.rst:9: fetch\napi.py:2: fetch()\n(3 matching lines in 3 files)"
    assert places_left(result, read_request("rename fetch to fetch_all", [])) == ["api.py:2: fetch()"]


async def sent_back(root: Path, home: Path, edit: tuple, request: str) -> tuple[list[str], TurnResult]:
    """What the harness sent back after one edit and an answer (the model answers again)."""
    runtime, provider = runtime_for(root, home, [call(edit), say("Removed."), say("Done.")])
    result = await runtime.loop.run_turn(Conversation(), request)
    return harness_says(provider), result


async def test_a_lower_case_name_is_searched_in_its_own_case(tmp_path: Path, home: Path) -> None:
    """search_in_file reads a pattern with no capital in any case: the `verbose` parameter
    taken out is not the VERBOSE setting, which the model was told to change."""
    root = project(tmp_path)
    (root / "util.py").write_text("def report(xs, verbose=False):\n    return sum(xs)\n")
    (root / "settings.py").write_text("VERBOSE = True\n")
    edit = ("edit_file", {"filepath": "util.py", "old_content": "def report(xs, verbose=False):",
                          "new_content": "def report(xs):"})
    said, result = await sent_back(root, home, edit, "Remove the `verbose` parameter of report.")
    assert result.text == "Removed." and said == []
    assert [r.call.name for r in checks_run(result)] == ["search_in_file"]


async def test_a_definition_taken_out_of_the_named_file_sends_back_its_uses_elsewhere(
    tmp_path: Path, home: Path
) -> None:
    """"Rename calc_total in util.py" names where it is defined; main.py calls it, and a
    rename that leaves that call breaks the program."""
    root = project(tmp_path)
    [message], _ = await sent_back(root, home, RENAME_DEF, "Rename the function calc_total in util.py to compute_total.")
    assert "main.py:3: print(calc_total([1, 2]))" in message


async def test_an_option_taken_out_of_the_named_file_sends_back_its_mentions_elsewhere(
    tmp_path: Path, home: Path
) -> None:
    root = project(tmp_path)
    (root / "cli.py").write_text("parser.add_argument('--legacy-mode')\n")
    (root / "README.md").write_text("Run `cli.py --legacy-mode` for the old output.\n")
    edit = ("edit_file", {"filepath": "cli.py", "old_content": "parser.add_argument('--legacy-mode')\n",
                          "new_content": ""})
    [message], _ = await sent_back(root, home, edit, "Remove the --legacy-mode option from cli.py.")
    assert "README.md:1: Run `cli.py --legacy-mode`" in message


def test_what_counts_as_taken_out_everywhere() -> None:
    from tether.assist.leftovers import Removal, project_wide, searched

    named = read_request("rename `data` to `payload` in api.py", ["api.py", "client.py"])
    local = [r for r in removals(named, [record("edit_file", {
        "filepath": "api.py", "old_content": "    data = load()\n    return data", "new_content": "x"})])]
    assert local == [Removal("data", "api.py", definition=False)] and not project_wide(named, local)
    assert project_wide(read_request("rename fetch_one in api.py everywhere", ["api.py"]), [Removal("fetch_one", "api.py")])
    assert not project_wide(named, [Removal("-v", "cli.py")])  # a short option is in every script
    assert not searched("-v", read_request("remove the -v flag", ["cli.py"]))
    assert searched("-v", read_request("remove the -v flag from cli.py", ["cli.py"]))


def test_a_name_a_later_change_put_back_into_the_file_is_not_taken_out() -> None:
    """"Rename calc_total to compute_total and keep calc_total as an alias": the alias is
    where the name belongs, and the model is not asked to take it out."""
    reading = read_request("Rename calc_total to compute_total and keep calc_total as an alias", [])
    evidence = [
        record("edit_file", {"filepath": "util.py", "old_content": "def calc_total(xs):",
                             "new_content": "def compute_total(xs):"}),
        record("edit_file", {"filepath": "util.py", "old_content": "    return sum(xs)\n",
                             "new_content": "    return sum(xs)\n\n\ncalc_total = compute_total\n"}),
    ]
    assert removals(reading, evidence) == []
    assert [r.path for r in removals(reading, evidence[:1])] == ["util.py"]


async def test_every_name_taken_out_is_searched_and_their_places_go_back_together(tmp_path: Path, home: Path) -> None:
    """Asked once: a second name's places are not lost because the first had some."""
    root = project(tmp_path)
    (root / "cli.py").write_text("parser.add_argument('--legacy-mode')\nrun(calc_total)\n")
    (root / "README.md").write_text("Pass --legacy-mode for the old output.\n")
    edit = ("edit_file", {"filepath": "util.py", "old_content": "def calc_total(xs):",
                          "new_content": "def compute_total(xs, legacy=False):"})
    drop = ("edit_file", {"filepath": "cli.py", "old_content": "parser.add_argument('--legacy-mode')\n",
                          "new_content": ""})
    runtime, provider = runtime_for(root, home, [call(edit), call(drop), say("Done."), say("Done again.")])
    result = await runtime.loop.run_turn(
        Conversation(), "Rename calc_total to compute_total and remove the --legacy-mode option.")
    [message] = harness_says(provider)
    assert "main.py:3: print(calc_total([1, 2]))" in message and "README.md:1: Pass --legacy-mode" in message
    assert [r.call.name for r in checks_run(result)] == ["search_in_file"] * 4  # at each answer
    assert result.text.splitlines()[-2:] == [
        left_at_end_line("calc_total", ["cli.py:1: x", "main.py:1: x", "main.py:3: x"]),
        left_at_end_line("--legacy-mode", ["README.md:1: x"])]


@pytest.mark.parametrize(("text", "defined"), [
    ("def fetch_one(x):", True), ("    async def fetch_one(self):", True), ("class fetch_one:", True),
    ("export function fetch_one() {", True), ("fetch_one = make()", True), ("const fetch_one = 1;", True),
    ("retry:\n  fetch_one: 3", True), ('{"fetch_one": 3}', False), ('  "fetch_one": 3,', True),
    ("    fetch_one = make()", False), ("x = fetch_one()", False), ("if fetch_one == 2:", False),
    ("fetch_one() {\n  echo 1\n}", True), ("fetch_one", False),  # a shell function, and its call
])
def test_what_defines_a_name(text: str, defined: bool) -> None:
    from tether.assist.leftovers import defines

    assert defines("fetch_one", text) is defined


async def test_the_places_left_go_back_first_and_the_check_runs_on_the_whole_change(tmp_path: Path, home: Path) -> None:
    """Leftovers, then verify: the project's tests run once the rename is whole, and the
    turn's evidence is in the order things ran."""
    root = project(tmp_path)
    (root / "test_util.py").write_text(
        "import unittest\n\nfrom util import compute_total\n\n\n"
        "class TotalTest(unittest.TestCase):\n    def test_total(self):\n"
        "        self.assertEqual(compute_total([1, 2]), 3)\n")
    fix_main = ("write_file", {"filepath": "main.py", "content": MAIN.replace("calc_total", "compute_total")})
    replies = [call(RENAME_DEF), say("Renamed."), call(fix_main), say("Renamed in both files.")]
    runtime, provider = runtime_for(root, home, replies)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert [r.call.name for r in result.evidence] == [
        "edit_file", "search_in_file", "write_file", "search_in_file", "run_cmd"]
    assert result.text.splitlines()[-1].startswith("Verified: ")
    assert len(provider.requests) == 4


# ---------------------------------------------------------------- right after each change


def result_notes(provider: ScriptedProvider, request: int) -> list[str]:
    """The tool results the model was sent in request `request` (0-based), in order."""
    return [r.content for m in provider.requests[request].messages for r in m.tool_results]


async def test_each_change_that_takes_the_name_out_says_the_places_left_with_its_result(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    (root / "report.py").write_text("from util import calc_total\n")
    fix_main = ("write_file", {"filepath": "main.py", "content": MAIN.replace("calc_total", "compute_total")})
    fix_report = ("edit_file", {"filepath": "report.py", "old_content": "calc_total",
                                "new_content": "compute_total"})
    replies = [call(RENAME_DEF), call(fix_main), call(fix_report), say("Renamed in three files.")]
    runtime, provider = runtime_for(root, home, replies, progress=True)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    first = result_notes(provider, 1)[-1]
    assert first.endswith(still_in_message("calc_total", [
        "main.py:1: from util import calc_total", "main.py:3: print(calc_total([1, 2]))",
        "report.py:1: from util import calc_total"]))
    assert result_notes(provider, 2)[-1].endswith(still_in_message("calc_total", ["report.py:1: from util import calc_total"]))
    assert result_notes(provider, 3)[-1].endswith(GONE.format(name="calc_total"))
    assert result.text == "Renamed in three files." and len(provider.requests) == 4
    assert harness_says(provider) == []  # nothing left at the answer: not asked again
    assert [r.call.name for r in checks_run(result)] == ["search_in_file"] * 4  # each change's, the answer's


async def test_the_places_are_said_again_only_when_they_changed(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    (root / "notes.py").write_text("x = 1\n")
    unrelated = ("write_file", {"filepath": "notes.py", "content": "x = 2\n"})
    replies = [call(RENAME_DEF), call(unrelated), say("Renamed.")]
    runtime, provider = runtime_for(root, home, replies, progress=True)
    await runtime.loop.run_turn(Conversation(), REQUEST)
    assert "still in these lines" in result_notes(provider, 1)[-1]
    assert "harness searched" not in result_notes(provider, 2)[-1]  # the same places: not said again
    assert len(harness_says(provider)) == 1  # at the answer, the places left go back once


async def test_the_progress_lever_switches_off_only_the_notes_after_each_change(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [call(RENAME_DEF), say("Renamed."), say("It stays.")],
                                    env={LEVERS_ENV: "progress"})
    await runtime.loop.run_turn(Conversation(), REQUEST)
    assert "harness searched" not in result_notes(provider, 1)[-1]
    assert len(harness_says(provider)) == 1


async def test_a_turn_gets_at_most_so_many_notes_after_changes(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    lines = [f"calc_total({n})" for n in range(EARLY_MAX + 2)]
    (root / "many.py").write_text("from util import calc_total\n" + "\n".join(lines) + "\n")
    edits = [call(("edit_file", {"filepath": "many.py", "old_content": line, "new_content": f"compute_total({n})"}))
             for n, line in enumerate(lines)]
    runtime, provider = runtime_for(root, home, [call(RENAME_DEF), *edits, say("Done."), say("Done.")], progress=True)
    await runtime.loop.run_turn(Conversation(), REQUEST)
    told = [n for n in range(1, len(provider.requests)) if "harness searched" in result_notes(provider, n)[-1]]
    assert len(told) == EARLY_MAX
