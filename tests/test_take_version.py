"""A whole file shown in a code block by a reply with no call is taken as its write_file
call (the `take` lever, assist/coach.Coach.reply_calls): through the real loop, dispatcher and
write_file on a real project."""

from __future__ import annotations

import io
from pathlib import Path

from scripted import ScriptedProvider, call, say

from tether.assist.coach import TAKEN_ID
from tether.core.profile import profile_named
from tether.engine.loop import Conversation, TurnResult
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI

TWO = "import math\n\n\ndef area(r):\n    return r * r\n\n\ndef double(x):\n    return 2 * x\n"
FIXED = "import math\n\n\ndef area(r):\n    return math.pi * r * r\n\n\ndef double(x):\n    return 2 * x\n"
REQUEST = "fix area in shapes.py: it must use pi"


def runtime_for(root: Path, home: Path, replies: list, levers_on: str = "take",
                verify: int = 0) -> tuple[Runtime, ScriptedProvider]:
    settings = {"provider": "openai", "model": "gpt-test", "openai_base_url": "http://127.0.0.1:9/v1",
                "sandbox": "off", "verify_after_change": verify}
    loaded, _ = load_settings(settings, {}, home)
    runtime = build_runtime(loaded, RunOptions(root=root, home=home, auto=True),
                            HeadlessUI(out=io.StringIO(), err=io.StringIO()), {})
    runtime.apply_profile(profile_named("full", "", levers_on))
    provider = ScriptedProvider(replies)
    runtime.loop.provider = provider
    return runtime, provider


def project(tmp_path: Path, text: str = TWO) -> Path:
    root = tmp_path / "project"
    root.mkdir(parents=True)
    (root / "shapes.py").write_text(text)
    return root


def read() -> list:
    return call(("read_file", {"filepath": "shapes.py"}))


def shown(code: str) -> list:
    return say(f"Here is the fixed file:\n```python\n{code}```\nThat should do it.")


def taken(result: TurnResult) -> list:
    return [record for record in result.evidence if record.call.id.startswith(TAKEN_ID)]


async def test_a_whole_version_shown_in_a_fence_is_written_and_the_result_says_so(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    runtime, provider = runtime_for(root, home, [read(), shown(FIXED), say("Fixed.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert (root / "shapes.py").read_text() == FIXED
    [record] = taken(result)
    assert record.call.name == "write_file" and record.changed_paths
    results = [part.content for m in provider.requests[2].messages for part in m.tool_results]
    assert any("was written as the write_file call above" in text for text in results)
    assert result.text == "Fixed."


async def test_a_version_shown_before_a_call_to_run_the_tests_is_written_first(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    (root / "check.py").write_text("import shapes, math\nassert shapes.area(1) == math.pi\n")
    run = call(("run_cmd", {"command": "python3 check.py"}),
               text=f"Here is the fix:\n```python\n{FIXED}```\nNow run the check:\n")
    runtime, provider = runtime_for(root, home, [read(), run, say("Fixed.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    names = [record.call.name for record in result.evidence]
    assert names == ["read_file", "write_file", "run_cmd"]  # the fix, then the model's own run
    assert result.evidence[-1].command is not None and result.evidence[-1].command.exit_code == 0


async def test_a_reply_that_makes_its_own_change_has_nothing_taken(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    edit = call(("edit_file", {"filepath": "shapes.py", "old_content": "2 * x", "new_content": "x + x"}),
                text=f"```python\n{FIXED}```\n")
    runtime, _ = runtime_for(root, home, [read(), edit, say("Done.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert taken(result) == [] and "x + x" in (root / "shapes.py").read_text()


async def test_a_filled_in_stub_with_a_new_signature_is_a_whole_version(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path, "def greet(name):\n    pass\n")
    filled = 'def greet(name="you"):\n    return f"Hello, {name}"\n'
    runtime, _ = runtime_for(root, home, [read(), shown(filled), say("Done.")])
    result = await runtime.loop.run_turn(Conversation(), "implement greet in shapes.py")
    assert (root / "shapes.py").read_text() == filled and len(taken(result)) == 1


async def test_a_question_a_kept_file_or_the_lever_off_is_never_written(tmp_path: Path, home: Path) -> None:
    part = "def area(r):\n    return math.pi * r * r\n"
    cases = [
        ("why is area in shapes.py wrong?", shown(part), "take"),  # a question quotes code
        ("fix it, but don't change shapes.py", shown(part), "take"),
        (REQUEST, shown(part), ""),  # the lever off
        ("why is area in shapes.py wrong?", shown(FIXED), "take"),  # a question quotes code
        ("fix it, but don't change shapes.py", shown(FIXED), "take"),
        (REQUEST, shown(FIXED), ""),  # the lever off
    ]
    for number, (request, reply, levers) in enumerate(cases):
        root = project(tmp_path / str(number))
        runtime, _ = runtime_for(root, home, [read(), reply, say("Done."), say("Done.")], levers_on=levers)
        result = await runtime.loop.run_turn(Conversation(), request)
        assert (root / "shapes.py").read_text() == TWO, request
        assert taken(result) == []


TEST_SHAPES = "import math\nimport unittest\n\nfrom shapes import area\n\n\nclass AreaTest(unittest.TestCase):\n" \
              "    def test_unit(self):\n        self.assertEqual(area(1), math.pi)\n"


async def test_a_reply_stops_after_the_version_it_shows_when_the_change_is_checked_right_after(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    (root / "test_shapes.py").write_text(TEST_SHAPES)
    talk = f"Here is the fix:\n```python\n{FIXED}```\nAfter this change, run the tests:\n"
    run = [*say(talk)[:-1], *call(("run_cmd", {"command": "python3 -m unittest test_shapes"}))]  # streamed
    request = "fix area in shapes.py so that test_shapes.py passes"
    for levers, names in (("take,early", ["read_file", "write_file", "run_cmd"]),
                          ("take", ["read_file", "write_file", "run_cmd", "run_cmd"])):  # + the check at the answer
        runtime, provider = runtime_for(root, home, [read(), run, say("Fixed.")], levers_on=levers, verify=1)
        (root / "shapes.py").write_text(TWO)
        result = await runtime.loop.run_turn(Conversation(), request)
        assert [record.call.name for record in result.evidence] == names, levers
        assert (root / "shapes.py").read_text() == FIXED
        ran = result.evidence[2]
        [said] = [m.text for m in provider.requests[2].messages if "Here is the fix" in m.text]  # as kept
        if levers == "take,early":  # cut after the block: the check ran in place of the model's run
            assert ran.call.id.startswith("check") and "After this change" not in said
        else:  # nothing checks the change: the model's own run is kept
            assert not ran.call.id.startswith("check") and "After this change" in said


# ---------------------------------------------------------------- one definition shown alone

THREE = ("import math\n\n\ndef area(r):\n    return r * r\n\n\n@staticmethod\ndef double(x):\n    return 2 * x\n\n\n"
         "class Circle:\n    def __init__(self, r):\n        self.r = r\n\n    def size(self):\n        return self.r\n")


def shown_alone(code: str) -> list:
    return say(f"Here's the corrected version of the function:\n\n```python\n{code}```\n\nRun the tests again.")


async def test_one_function_shown_alone_is_put_in_place_of_the_old_one(tmp_path: Path, home: Path) -> None:
    """A 1.5B model found a failing test's fix and showed only the function it changed; not a
    whole file, nothing was taken, and the check failed again with nothing changed."""
    root = project(tmp_path, THREE)
    fixed = "def area(r):\n    return math.pi * r * r\n"
    runtime, provider = runtime_for(root, home, [read(), shown_alone(fixed), say("Fixed.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert (root / "shapes.py").read_text() == THREE.replace("    return r * r\n", "    return math.pi * r * r\n")
    [record] = taken(result)
    assert record.call.name == "edit_file" and record.changed_paths
    results = [part.content for m in provider.requests[2].messages for part in m.tool_results]
    assert any("showed this new version of `area` from shapes.py in a code block and made no call, so it "
               "was put in place of the old one as the edit_file call above" in text for text in results)


async def test_a_method_shown_alone_goes_in_at_the_methods_indentation(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path, THREE)
    runtime, _ = runtime_for(root, home, [read(), shown_alone("def size(self):\n    return 2 * self.r\n"),
                                          say("Fixed.")])
    await runtime.loop.run_turn(Conversation(), "fix Circle.size in shapes.py: it is the diameter")
    assert (root / "shapes.py").read_text().endswith("    def size(self):\n        return 2 * self.r\n")


async def test_decorators_and_an_indented_block_are_replaced_whole(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path, THREE)
    shown_code = "    @staticmethod\n    def double(x):\n        return x + x\n"
    runtime, _ = runtime_for(root, home, [read(), shown_alone(shown_code), say("Fixed.")])
    await runtime.loop.run_turn(Conversation(), "change double in shapes.py to add")
    assert "@staticmethod\ndef double(x):\n    return x + x\n\n\nclass Circle" in (root / "shapes.py").read_text()


async def test_the_definition_lever_off_takes_nothing(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path, THREE)
    runtime, _ = runtime_for(root, home, [read(), shown_alone("def area(r):\n    return 0\n"), say("Fixed.")])
    runtime.apply_profile(profile_named("full", "definition", "take"))
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert taken(result) == [] and (root / "shapes.py").read_text() == THREE


async def test_the_file_quoted_with_a_comment_on_top_is_not_taken_as_a_new_version(tmp_path: Path, home: Path) -> None:
    """A 1.5B model showed the script it had copied, `# scripts/km_to_miles.py` on top, and
    the comment was written into a file the request never asked to change."""
    root = project(tmp_path)
    runtime, _ = runtime_for(root, home, [read(), shown("# shapes.py\n" + TWO), say("Done."), say("Done.")])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert taken(result) == [] and (root / "shapes.py").read_text() == TWO


async def test_a_comment_that_only_names_the_file_on_top_of_its_version_is_no_line_of_it(
        tmp_path: Path, home: Path) -> None:
    """A 1.5B model showed a JSON file's new version under `# settings.json`, and the label
    was written in: the file no longer parsed."""
    root = project(tmp_path)
    (root / "settings.json").write_text('{\n  "retries": 4,\n  "timeout_s": 10\n}\n')
    new = '{\n  "max_retries": 4,\n  "timeout_s": 10\n}\n'
    reply = say(f"The new settings:\n```python\n# settings.json\n{new}```\n")
    runtime, _ = runtime_for(root, home, [call(("read_file", {"filepath": "settings.json"})), reply, say("Done.")])
    result = await runtime.loop.run_turn(Conversation(), "rename retries to max_retries in settings.json")
    assert (root / "settings.json").read_text() == new and len(taken(result)) == 1


def test_a_label_is_dropped_only_when_it_names_the_file_and_the_file_does_not_start_with_it() -> None:
    from tether.assist.reply_shapes import without_label

    assert without_label("// lib/a.js\nx = 1\n", "lib/a.js", "x = 0\n") == "x = 1\n"
    assert without_label("<!-- index.html -->\n<p>\n", "site/index.html", "<div>\n") == "<p>\n"
    assert without_label("# a.py\nx = 1\n", "b.py", "x = 0\n") == "# a.py\nx = 1\n"  # another file's name
    assert without_label("# a.py\nx = 1\n", "a.py", "# a.py\nx = 0\n") == "# a.py\nx = 1\n"  # the file's own line
    assert without_label("# Compute totals\nx = 1\n", "a.py", "x = 0\n") == "# Compute totals\nx = 1\n"
