"""The search after a change for a name the request asks for that no file of the project has
(assist/missing.py), through the real loop, dispatcher and search_in_file on a real project."""

from __future__ import annotations

from pathlib import Path

from scripted import call, say
from test_names_left import harness_says
from test_verify_after_change import checks_run, runtime_for

from tether.assist.missing import STILL_MISSING, missing_message
from tether.assist.request import read_request
from tether.core.profile import LEVERS_ENV, profile_named
from tether.engine.loop import Conversation

STRINGS = "def title_case(text):\n    return text.title()\n"
SLUGIFY = STRINGS + "\n\ndef slugify(text):\n    return '-'.join(text.lower().split())\n"
REQUEST = "add a slugify(text) function to strings.py and a test for it in test_strings.py"
TEST = "from strings import title_case\n\n\ndef test_title_case():\n    assert title_case('a b') == 'A B'\n"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "strings.py").write_text(STRINGS)
    (root / "test_strings.py").write_text(TEST)
    return root


def write(path: str, content: str) -> list:
    return call(("write_file", {"filepath": path, "content": content}))


async def test_a_name_asked_for_that_no_file_has_goes_back_once(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    test_only = TEST + "\n\ndef test_slug():\n    assert True\n"
    replies = [write("test_strings.py", test_only), say("Added."), write("strings.py", SLUGIFY), say("Added both.")]
    runtime, provider = runtime_for(root, home, replies, verify_after_change=1)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert missing_message(["slugify"]) in harness_says(provider)
    searches = [r for r in checks_run(result) if r.call.name == "search_in_file"]
    assert searches[0].result.startswith("No matches") and not searches[1].result.startswith("No matches")
    assert "def slugify" in (root / "strings.py").read_text() and result.text.startswith("Added both.")


async def test_a_name_still_missing_at_the_next_answer_is_its_last_line(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    test_only = TEST + "\n\ndef test_slug():\n    assert True\n"
    replies = [write("test_strings.py", test_only), say("Added."), say("I added slugify to strings.py.")]
    runtime, provider = runtime_for(root, home, replies, verify_after_change=1)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(provider.requests) == 3  # asked once
    assert result.text.startswith("I added slugify to strings.py.")
    assert STILL_MISSING.format(names="`slugify`") in result.text.splitlines()


async def test_a_name_the_change_added_or_took_out_or_a_question_is_not_sent_back(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [write("strings.py", SLUGIFY), say("Added.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(provider.requests) == 2 and result.text.startswith("Added.")  # it is there
    (root / "strings.py").write_text(SLUGIFY)
    drop = ("edit_file", {"filepath": "strings.py", "old_content": "def slugify", "new_content": "def slug"})
    runtime, provider = runtime_for(root, home, [call(drop), say("Removed.")])
    result = await runtime.loop.run_turn(Conversation(), "remove the slugify() function from strings.py")
    assert missing_message(["slugify"]) not in "\n".join(harness_says(provider))  # leftovers' business
    runtime, provider = runtime_for(root, home, [say("It has none.")])
    result = await runtime.loop.run_turn(Conversation(), "does strings.py define parse_date()?")
    assert checks_run(result) == [] and len(provider.requests) == 1


async def test_the_lever_switches_it_off(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    replies = [write("test_strings.py", TEST + "\n"), say("Added.")]
    runtime, provider = runtime_for(root, home, replies, env={LEVERS_ENV: "missing"}, verify_after_change=1)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert not [r for r in checks_run(result) if r.call.name == "search_in_file"]
    assert "missing" in profile_named("small").levers() and "missing" not in profile_named("small", "missing").levers()


def test_a_word_called_with_parameters_is_a_name_of_code() -> None:
    assert read_request("add a slugify(text) helper", []).code_names == ("slugify",)
    assert read_request("add clamp(x, lo=0, hi=10) to m.py", ["m.py"]).code_names == ("clamp",)
    assert read_request("check the file(s) in docs (see below)", []).code_names == ()
