"""The rule table on a turn's evidence (assist/rules.py) and the coach that applies it.

Every rule, on a constructed snapshot: it holds on one, not on another; the coach sends it
once per turn (a repeating rule only after progress); it serves only its profiles; its lever
switches it off. The ask-once policy for a call's reasons to wait is tested through the real
Dispatcher and loop.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel
from scripted import ScriptedProvider, TextArgs, call, make_tool, say

from tether.assist.coach import Coach
from tether.assist.request import read_request
from tether.assist.rules import EMPTY_REPLY, RULE_LEVERS, RULES, Judged, Rule
from tether.assist.turn import Assist
from tether.core.messages import ToolCall
from tether.core.profile import RULE_LEVERS as PROFILE_RULE_LEVERS
from tether.core.profile import RULES_OFF_BY_DEFAULT, SMALL
from tether.core.toolspec import ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import Dispatcher
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.engine.turn_assist import CoachSetup
from tether.engine.turn_record import TurnEvidence

TOOLS = {"read_file": "filepath", "write_file": "filepath", "edit_file": "filepath",
         "run_cmd": "command", "send_input": "text", "search_in_file": "pattern"}
SHELL = "Run this:\n```sh\npython report.py\n```\n"
OFFERED = '{"name": "run_cmd", "arguments": {"command": "python report.py"}}'


def ev(root: Path, request: str = "fix the bug in app.py please", **fields: object) -> TurnEvidence:
    files = [p.name for p in root.iterdir()] if root.exists() else []
    defaults: dict[str, object] = {"tools": TOOLS, "calls": 1, "root": root,
                                   "reading": read_request(request, files)}
    return TurnEvidence(request, **{**defaults, **fields})  # type: ignore[arg-type]


def read_call(path: str) -> ToolCall:
    return ToolCall("r", "read_file", {"filepath": path})


def cases(root: Path) -> dict[str, tuple[Judged, Judged]]:
    """Rule name -> (a snapshot it holds on, one it does not)."""
    (root / "app.py").write_text("x = 1\n")
    (root / "report.py").write_text("print(5)\n")
    (root / "a.py").write_text("A = 1\n")
    change, new_file = "fix the bug in app.py please", "write total.py that sums the numbers"
    first = {"reply": "", "result_first": True}
    steps = "1. Open `a.py` in your editor.\n2. Look at A.\n"
    return {
        "echo": (Judged(ev(root, reply=EMPTY_REPLY), nudged=(EMPTY_REPLY,)), Judged(ev(root, reply="Done."), nudged=(EMPTY_REPLY,))),
        "result_first_offer": (Judged(ev(root, **first), offered=OFFERED), Judged(ev(root, **first))),
        "result_first_new_file": (Judged(ev(root, new_file, **first, last_call=read_call("app.py"))),
                                  Judged(ev(root, change, **first, last_call=read_call("app.py")))),
        "result_first_after_read": (Judged(ev(root, change, **first, last_call=read_call("app.py"))),
                                    Judged(ev(root, "what is x?", **first, last_call=read_call("app.py")))),
        "result_first_changed": (Judged(ev(root, **first, last_call=ToolCall("w", "write_file", {"filepath": "a.py"}))),
                                 Judged(ev(root, **first))),
        "result_first": (Judged(ev(root, **first)), Judged(ev(root, reply=""))),
        "empty_after_offer": (Judged(ev(root, reply=""), offered=OFFERED), Judged(ev(root, reply=""))),
        "empty_changed": (Judged(ev(root, reply="", last_call=ToolCall("w", "edit_file", {"filepath": "a.py"}))),
                          Judged(ev(root, reply=""))),
        "empty": (Judged(ev(root, reply="")), Judged(ev(root, reply="Done."))),
        "shown_again": (Judged(ev(root, reply=SHELL), sent=frozenset({"shown"}), offered=OFFERED),
                        Judged(ev(root, reply=SHELL), offered=OFFERED)),
        "shown": (Judged(ev(root, reply=SHELL)), Judged(ev(root, reply=SHELL, commands=frozenset({"python report.py"})))),
        "look": (Judged(ev(root, reply="It is 5.", calls=0)), Judged(ev(root, reply="It is 5."))),
        "waiting": (Judged(ev(root, reply="Done.", waiting="s1")), Judged(ev(root, reply="Done."))),
        "played": (Judged(ev(root, reply="Your guess: 50\nToo low.", waiting="s1", waiting_prompt="Your guess:")),
                   Judged(ev(root, reply="I will guess.", waiting="s1", waiting_prompt="Your guess:"))),
        "version": (Judged(ev(root, "write total.py that prints 5", reply="```python\nprint(5)\n```")),
                    Judged(ev(root, "what does total.py print?", reply="```python\nprint(5)\n```"))),
        "failure": (Judged(ev(root, reply="Done.", last_failure="no such file")), Judged(ev(root, reply="Done."))),
        "claimed": (Judged(ev(root, reply="I ran it and it printed 5.")),
                    Judged(ev(root, reply="I ran it and it printed 5.", commands=frozenset({"python report.py"})))),
        "start_first": (Judged(ev(root, reply='send_input("python report.py")')),
                        Judged(ev(root, reply='send_input("python report.py")', waiting="s1"))),
        "named": (Judged(ev(root, reply='run_cmd("pytest -q")')), Judged(ev(root, reply="I ran it with run_cmd."))),
        "open": (Judged(ev(root, "how big is A?", reply=steps)),
                 Judged(ev(root, "how big is A?", reply=steps, read_paths=frozenset({(root / "a.py").resolve()})))),
        "apply": (Judged(ev(root, reply="```python\nx = 2\n```")),
                  Judged(ev(root, reply="```python\nx = 2\n```", acted=True))),
        "unrun": (Judged(ev(root, "run report.py and tell me what it prints", reply="It prints 5.")),
                  Judged(ev(root, "run report.py and tell me what it prints", reply="It prints 5.",
                            commands=frozenset({"python report.py"})))),
        "new_file_missing": (Judged(ev(root, "write tools/count.py that counts the lines of a folder's .py files",
                                       reply="There are 209 lines.", acted=True, commands=frozenset({"wc -l a.py"}))),
                             Judged(ev(root, "write a.py that counts the lines", reply="There are 209 lines.",
                                       acted=True, commands=frozenset({"wc -l a.py"})))),
        "claimed_change": (Judged(ev(root, "rename A to B everywhere", reply="I changed a.py and report.py to use B.",
                                     acted=True, written=frozenset({"a.py"}), commands=frozenset({"sed -i s/A/B/ a.py"}))),
                           Judged(ev(root, "rename A to B everywhere", reply="I changed a.py. report.py has no A.",
                                     acted=True, written=frozenset({"a.py"})))),
        "named_files": (Judged(ev(root, "change A in a.py and app.py", reply="Done.", acted=True,
                                  written=frozenset({"a.py"}))),
                        Judged(ev(root, "change A in a.py and app.py", reply="Done.", acted=True,
                                  written=frozenset({"a.py", "app.py"})))),
        "check": (Judged(ev(root, reply="Done.", unchecked="a.py")), Judged(ev(root, reply="Done."))),
        "unseen": (Judged(ev(root, "what port?", reply="It is 9090.", seen=("PORT = 8080",))),
                   Judged(ev(root, "what port?", reply="It is 8080.", seen=("PORT = 8080",)))),
        "no_number": (Judged(ev(root, "how many files are there?", reply="There are several.")),
                      Judged(ev(root, "how many files are there?", reply="There are 3."))),
    }


RULE_NAMES = [rule.name for rule in RULES]


def rule_named(name: str) -> Rule:
    return next(rule for rule in RULES if rule.name == name)


def test_every_rule_has_its_cases_and_every_lever_is_a_profile_lever(tmp_path: Path) -> None:
    assert set(cases(tmp_path)) == set(RULE_NAMES)
    assert set(RULE_LEVERS) | {"guard", "repeat", "no_tests", "leftovers", "missing", "recap", "definition", "progress", "lines",
                              "sibling"} == set(PROFILE_RULE_LEVERS)
    assert SMALL.without(["unseen"]).rules_off == {"unseen", *RULES_OFF_BY_DEFAULT}
    # a rule lever off by default is switched on by name, and listed as on then
    assert "recap" in RULES_OFF_BY_DEFAULT and "recap" not in SMALL.levers()
    assert "recap" in SMALL.with_levers(["recap"]).levers()


@pytest.mark.parametrize("name", RULE_NAMES)
def test_a_rule_holds_on_its_evidence_and_not_on_other_evidence(tmp_path: Path, name: str) -> None:
    holds, quiet = cases(tmp_path)[name]
    rule = rule_named(name)
    assert rule.when(holds) is not None
    assert rule.when(quiet) is None


def coach_of(rule: Rule, profile: str = "small", off: frozenset[str] = frozenset()) -> Coach:
    setup = CoachSetup(profile=profile, nudges=True, opening_note=False, rules_off=off)
    return Coach("request", setup, rules=(rule,))


def coach_reply(coach: Coach, judged: Judged) -> str | None:
    coach.sent.update(dict.fromkeys(judged.sent, 1))
    coach.offered, coach.nudged = judged.offered, list(judged.nudged)
    return coach.reply_note(judged.evidence)


@pytest.mark.parametrize("name", RULE_NAMES)
def test_the_coach_sends_a_rule_once_per_turn_for_its_profiles_unless_its_lever_is_off(
    tmp_path: Path, name: str,
) -> None:
    holds, _ = cases(tmp_path)[name]
    rule = rule_named(name)
    coach = coach_of(rule)
    sent = coach_reply(coach, holds)
    assert sent
    assert not re.search(r"\{[a-z_]+(?:![rs])?\}", sent)  # every field filled in
    again = Judged(holds.evidence, holds.sent, holds.offered, holds.nudged + (sent,)) if name != "echo" else holds
    assert coach_reply(coach, again) is None, "once per turn"
    assert coach_reply(coach_of(rule, profile="full"), holds) is None
    assert coach_reply(coach_of(rule, off=frozenset({rule.lever})), holds) is None


def test_the_waiting_rule_comes_again_only_after_input_went_to_the_program(tmp_path: Path) -> None:
    holds, _ = cases(tmp_path)["waiting"]
    coach = coach_of(rule_named("waiting"))
    assert coach.reply_note(holds.evidence) is not None
    assert coach.reply_note(holds.evidence) is None
    answered = ev(tmp_path, reply="Done.", waiting="s1", inputs_sent=1)
    assert coach.reply_note(answered) is not None


def test_the_first_rule_that_holds_wins_and_a_spent_echo_ends_the_judging(tmp_path: Path) -> None:
    setup = CoachSetup(profile="small", nudges=True, opening_note=False)
    coach = Coach("fix the bug in app.py please", setup)
    empty = ev(tmp_path, reply="")
    assert coach.reply_note(empty) == EMPTY_REPLY
    echo = ev(tmp_path, reply=EMPTY_REPLY, last_failure="boom")
    assert coach.reply_note(echo) is not None and coach.reply_note(echo) is None  # echo sent, then spent


# ---------------------------------------------------------------- ask once, through the dispatcher


async def test_a_reason_to_wait_is_sent_once_and_the_identical_call_then_runs(tmp_path: Path) -> None:
    """An existing file overwritten unread: the first write_file gets the reason as its result;
    the same call sent again runs. Each goes through the one Dispatcher (its evidence shows both)."""
    (tmp_path / "app.json").write_text('{"timeout": 10, "retries": 3}\n')
    written: list[str] = []

    def write(args, ctx):  # noqa: ANN001
        written.append(args.content)
        return "written"

    table = ToolTable([make_tool("write_file", write, TextArgs, reads=False, writes_files=True)])
    ui = SilentUI()
    dispatcher = Dispatcher(table, ToolContext(root=tmp_path), ui)
    blind = call(("write_file", {"filepath": "app.json", "content": '{"timeout": 45}\n'}))
    provider = ScriptedProvider([blind, blind, blind, say("Done.")])
    loop = TurnLoop(provider, table, dispatcher, ui, TurnSettings(model="m", nudges=True),
                    system_prompt=lambda mode: "SYSTEM",
                    assist=Assist(tmp_path, dispatcher.dispatch, dispatcher.ctx.files.names))
    result = await loop.run_turn(Conversation(), "set the timeout to 45 in app.json")
    first, second, third = result.evidence
    assert first.error and "you had not read it" in first.result
    assert not second.error and not third.error
    assert written == ['{"timeout": 45}\n', '{"timeout": 45}\n']  # asked once, never refused for good


class EditArgs(BaseModel):
    filepath: str
    old_content: str
    new_content: str


async def test_a_call_whose_reason_was_sent_waits_for_its_next_reason(tmp_path: Path) -> None:
    """A test file the request keeps, read: the model's edit of it waits (the kept file, sent
    once a turn); its next call, a write of that file with 2 of its 6 lines left, waits too,
    for its next reason (most of the file deleted); that write sent again runs."""
    (tmp_path / "tests").mkdir()
    kept = "def test_add():\n    assert add(2, 3) == 5\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
    (tmp_path / "tests" / "test_calc.py").write_text(kept)
    changed: list[str] = []

    def change(args, ctx):  # noqa: ANN001
        changed.append(args.filepath)
        return "changed"

    table = ToolTable([make_tool("read_file", lambda args, ctx: kept),
                       make_tool("write_file", change, TextArgs, reads=False, writes_files=True),
                       make_tool("edit_file", change, EditArgs, reads=False, writes_files=True)])
    ui = SilentUI()
    dispatcher = Dispatcher(table, ToolContext(root=tmp_path), ui)
    read = call(("read_file", {"filepath": "tests/test_calc.py"}))
    edit = call(("edit_file", {"filepath": "tests/test_calc.py", "old_content": "5", "new_content": "-1"}))
    write = call(("write_file", {"filepath": "tests/test_calc.py", "content": "def test_add():\n    pass\n"}))
    provider = ScriptedProvider([read, edit, write, write, say("Done.")])
    loop = TurnLoop(provider, table, dispatcher, ui, TurnSettings(model="m", nudges=True),
                    system_prompt=lambda mode: "SYSTEM",
                    assist=Assist(tmp_path, dispatcher.dispatch, dispatcher.ctx.files.names))
    result = await loop.run_turn(Conversation(), "fix add in calc.py, but don't change the tests")
    assert [record.error for record in result.evidence] == [False, True, True, False]
    assert "would delete" in result.evidence[2].result
    assert changed == ["tests/test_calc.py"]  # only the write sent twice


async def test_with_the_guard_lever_off_no_call_waits(tmp_path: Path) -> None:
    (tmp_path / "app.json").write_text("{}\n")
    table = ToolTable([make_tool("write_file", lambda a, c: "written", TextArgs, reads=False, writes_files=True)])
    ui = SilentUI()
    dispatcher = Dispatcher(table, ToolContext(root=tmp_path), ui)
    provider = ScriptedProvider([call(("write_file", {"filepath": "app.json", "content": "[]\n"})), say("Done.")])
    settings = TurnSettings(model="m", nudges=True, rules_off=frozenset({"guard"}))
    loop = TurnLoop(provider, table, dispatcher, ui, settings, system_prompt=lambda mode: "SYSTEM",
                    assist=Assist(tmp_path, dispatcher.dispatch, dispatcher.ctx.files.names))
    result = await loop.run_turn(Conversation(), "set app.json to an empty list")
    assert not result.evidence[0].error


def test_a_new_file_asked_for_is_missing_only_while_nothing_is_written_and_it_is_not_on_disk(tmp_path: Path) -> None:
    """Asked to write a new script, a 1.5B model ran the script beside it and answered with a
    number it made up: the request's new file is named back. Not once the turn wrote anything
    (named_unchanged takes over), nor when a command made the file, nor for a data file."""
    from tether.assist.named_files import missing_new_files

    request = "Write tools/count_lines.py: it prints the total lines of the .py files in a folder."
    ran = frozenset({"python tools/biggest.py src"})
    assert missing_new_files(ev(tmp_path, request, acted=True, commands=ran)) == ["tools/count_lines.py"]
    assert missing_new_files(ev(tmp_path, request, acted=True, written=frozenset({"tools/other.py"}))) == []
    assert missing_new_files(ev(tmp_path, "Run the export so that it writes out.py", acted=True, commands=ran)) == []
    assert missing_new_files(ev(tmp_path, "write the counts into counts.txt", acted=True, commands=ran)) == []
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "count_lines.py").write_text("print(1)\n")  # made by a command
    assert missing_new_files(ev(tmp_path, request, acted=True, commands=ran)) == []


def test_the_model_of_a_new_file_is_never_named_back_as_unchanged(tmp_path: Path) -> None:
    """Asked for "a backup.sh like clean.sh", a model was told clean.sh was not changed yet."""
    from tether.assist.named_files import named_unchanged

    (tmp_path / "clean.sh").write_text("echo clean\n")
    request = "Write a backup.sh like clean.sh: it copies the .txt files of a folder."
    assert named_unchanged(ev(tmp_path, request, acted=True, written=frozenset({"notes/x.txt"}))) == ["backup.sh"]
    assert named_unchanged(ev(tmp_path, request, acted=True, written=frozenset({"backup.sh"}))) == []


def test_a_file_a_command_of_the_turn_names_may_have_been_changed_by_it(tmp_path: Path) -> None:
    from tether.assist.named_files import claimed_unchanged

    (tmp_path / "app.py").write_text("A = 1\n")
    claimed = ev(tmp_path, "rename A to B everywhere", reply="I changed app.py.", acted=True)
    assert claimed_unchanged(claimed) == ["app.py"]
    sed = ev(tmp_path, "rename A to B everywhere", reply="I changed app.py.", acted=True,
             commands=frozenset({"sed -i 's/A/B/' app.py"}))
    assert claimed_unchanged(sed) == []
