"""The files a request names are read before the model's first reply (the `preread` lever):
read_file calls through the dispatcher, in the history and the evidence, small files only."""

from __future__ import annotations

import io
from pathlib import Path

from scripted import ScriptedProvider, say

from tether.core.profile import profile_named
from tether.engine.loop import PREREAD_FILE_BYTES, Conversation
from tether.runtime import RunOptions, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI


def run(root: Path, home: Path, request: str, profile: str = "small", levers_off: str = "",  # noqa: ANN201
        levers_on: str = ""):
    settings = {"provider": "openai", "model": "m", "openai_base_url": "http://127.0.0.1:9/v1",
                "sandbox": "off"}
    loaded, _ = load_settings(settings, {}, home)
    runtime = build_runtime(loaded, RunOptions(root=root, home=home, auto=True),
                            HeadlessUI(out=io.StringIO(), err=io.StringIO()), {})
    runtime.apply_profile(profile_named(profile, levers_off, levers_on))
    provider = ScriptedProvider([say("Done.")])
    runtime.loop.provider = provider
    return runtime, provider


def first_request_text(provider: ScriptedProvider) -> str:
    return "\n".join(m.text + "".join(r.content for r in m.tool_results)
                     for m in provider.requests[0].messages)


async def test_the_small_files_a_request_names_are_read_before_the_first_reply(
    tmp_path: Path, home: Path
) -> None:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "shapes.py").write_text("def area(w, h):\n    pass\n")
    (root / "shapes_check.py").write_text("assert area(2, 3) == 6  # MARK-TEST\n")
    (root / "docs" / "notes.md").write_text("Area is width times height. MARK-DOCS\n")
    (root / "big.py").write_text("x = 1\n" * (PREREAD_FILE_BYTES // 6 + 10))
    runtime, provider = run(root, home, "")
    result = await runtime.loop.run_turn(Conversation(), (
        "Implement shapes.py so that shapes_check.py passes (see docs/notes.md); big.py and "
        "missing.py stay as they are"))
    read = [e.call.arguments["filepath"] for e in result.evidence if e.call.name == "read_file"]
    assert read == ["shapes.py", "shapes_check.py", "docs/notes.md"]  # big.py is left to the model
    sent = first_request_text(provider)
    assert "MARK-TEST" in sent and "MARK-DOCS" in sent and "def area" in sent


async def test_the_lever_switches_it_off_and_a_request_naming_nothing_reads_nothing(
    tmp_path: Path, home: Path
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "shapes.py").write_text("def area(w, h):\n    pass  # MARK\n")
    runtime, provider = run(root, home, "", levers_off="preread")
    result = await runtime.loop.run_turn(Conversation(), "Implement area in shapes.py")
    assert not [e for e in result.evidence if e.call.name == "read_file"]
    assert "MARK" not in first_request_text(provider)
    runtime, provider = run(root, home, "")
    result = await runtime.loop.run_turn(Conversation(), "What does this project do?")
    assert not [e for e in result.evidence if e.call.name == "read_file"]


async def test_the_request_comes_again_after_the_files_read_for_it(tmp_path: Path, home: Path) -> None:
    from tether.assist.rules import OPENING_NOTE, RECAP, RECAP_MAX

    root = tmp_path / "project"
    root.mkdir()
    (root / "shapes.py").write_text("def area(w, h):\n    pass  # MARK\n")
    request = "Implement area in shapes.py"
    runtime, provider = run(root, home, "", levers_on="recap")
    await runtime.loop.run_turn(Conversation(), request)
    last = provider.requests[0].messages[-1]
    assert last.text == RECAP.format(request=request) + OPENING_NOTE
    assert first_request_text(provider).index("MARK") < first_request_text(provider).rindex(request)
    # off by default, switched off, or a request too long to be worth saying twice: the note alone
    for levers_off, on, asked in (("", "", request), ("recap", "", request),
                                  ("", "recap", request + " " + "x" * RECAP_MAX)):
        runtime, provider = run(root, home, "", levers_off=levers_off, levers_on=on)
        await runtime.loop.run_turn(Conversation(), asked)
        assert provider.requests[0].messages[-1].text == OPENING_NOTE
    # nothing read first: the request is the last text already, said once
    runtime, provider = run(root, home, "", levers_off="preread", levers_on="recap")
    await runtime.loop.run_turn(Conversation(), request)
    before, note = provider.requests[0].messages[-2:]
    assert before.text.endswith("# Request\n" + request) and note.text == OPENING_NOTE


def lay_out(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


async def read_first(root: Path, home: Path, request: str, levers_on: str = "") -> tuple[list[str], str]:
    """The files read before the first reply, and what that request sent."""
    runtime, provider = run(root, home, "", levers_on=levers_on)
    result = await runtime.loop.run_turn(Conversation(), request)
    return [e.call.arguments["filepath"] for e in result.evidence if e.call.name == "read_file"], \
        first_request_text(provider)


async def test_the_code_a_named_test_imports_is_read_after_it(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "project"
    lay_out(root, {
        "stats/__init__.py": "", "stats/core.py": "def median(xs):\n    return xs[0]  # MARK-CODE\n",
        "stats/extra.py": "X = 1\n", "tests/helpers_test.py": "",
        "tests/test_core.py": ("import os\nimport pytest\nfrom stats.core import median\n"
                               "from tests import helpers_test\n\n\ndef test_median():\n"
                               "    assert median([3, 1, 2]) == 2\n"),
        "web/src/duration.js": "exports.format = (s) => s;  // MARK-JS\n",
        "web/test/duration.test.js": ("const assert = require('node:assert');\n"
                                      "const { format } = require('../src/duration');\n"),
    })
    read, sent = await read_first(root, home, "tests/test_core.py fails: fix the code")
    assert read == ["tests/test_core.py", "stats/core.py"]  # no package init, no other test, no stdlib
    assert "MARK-CODE" in sent
    read, _ = await read_first(root, home, "npm test fails on web/test/duration.test.js; fix it")
    assert read == ["web/test/duration.test.js", "web/src/duration.js"]


async def test_a_request_naming_no_file_has_the_files_it_mentions_by_a_path_word_read(
        tmp_path: Path, home: Path) -> None:
    root = tmp_path / "project"
    lay_out(root, {"uploader/__init__.py": "", "uploader/policy.py": "MAX_TRIES = 4  # MARK-POLICY\n",
                   "uploader/client.py": "from .policy import MAX_TRIES\n",
                   "deploy/services.ini": "[worker]\npool = 5\n", "tests/test_uploader.py": "",
                   ".hidden/uploader.txt": "", "README.md": "An uploader.\n"})
    read, sent = await read_first(root, home, "How many times does the uploader retry?")
    assert read == ["uploader/client.py", "uploader/policy.py", "uploader/__init__.py"]  # no test, nothing hidden
    assert "MARK-POLICY" in sent
    read, _ = await read_first(root, home, "give the worker a pool of 8; the other services keep theirs")
    assert read == ["deploy/services.ini"]  # "services" finds services.ini
    read, _ = await read_first(root, home, "add tests for the uploader's policy")
    # "tests" alone reads nothing; the uploader's own test file is mentioned by its subject
    assert read == ["uploader/policy.py", "tests/test_uploader.py", "uploader/client.py", "uploader/__init__.py"]


async def test_a_test_file_is_mentioned_by_its_subject_and_the_code_it_imports_is_read(
        tmp_path: Path, home: Path) -> None:
    root = tmp_path / "project"
    lay_out(root, {"lex/__init__.py": "", "lex/scan.py": "def tokens(text):  # MARK-CODE\n",
                   "tests/test_tokenizer.py": "from lex.scan import tokens\n",
                   "web/lexer.test.js": "require('./lexer')\n", "web/lexer.js": "",
                   "notes/tokenizer.md": ""})
    read, sent = await read_first(root, home, "the tokenizer tests fail - make them pass, but leave "
                                              "the tests themselves alone")
    assert read == ["notes/tokenizer.md", "tests/test_tokenizer.py", "lex/scan.py"]
    assert "MARK-CODE" in sent
    read, _ = await read_first(root, home, "the lexer tests fail")
    assert read == ["web/lexer.js", "web/lexer.test.js"]
    read, _ = await read_first(root, home, "what does the tokenizer do?")  # no tests asked about: none read
    assert read == ["notes/tokenizer.md"]


async def test_a_request_for_a_new_file_reads_first_no_mentioned_file_of_its_kind(
        tmp_path: Path, home: Path) -> None:
    root = tmp_path / "project"
    lay_out(root, {"bin/report.py": "print('weekly')  # MARK-SIBLING\n",
                   "bin/report.cfg": "weeks = 4\n", "lib/report.py": "def rows(): ...\n"})
    # the new script's folder holds another script: read first, it is what gets written again
    request = "Write bin/monthly.py, a report of the month's totals"
    read, sent = await read_first(root, home, request, levers_on="sibling")
    assert read == ["bin/report.cfg", "lib/report.py"]  # another folder's code and another kind stay
    assert "MARK-SIBLING" not in sent
    # a new file named without a folder: a mentioned file of its suffix anywhere is left out
    read, _ = await read_first(root, home, "Add a monthly.py beside the other report scripts",
                               levers_on="sibling")
    assert read == ["bin/report.cfg"]
    # the lever off (as it is by default), and a request for no new file, read them as before
    read, _ = await read_first(root, home, request)
    assert read == ["bin/report.cfg", "bin/report.py", "lib/report.py"]
    read, _ = await read_first(root, home, "What does the report print?", levers_on="sibling")
    assert "bin/report.py" in read


def test_a_file_is_of_a_new_files_kind_by_its_suffix_and_folder() -> None:
    from tether.assist.turn import like_new_file

    assert like_new_file("tools/a.py", ["tools/b.py"])
    assert like_new_file("tools/a.py", ["b.py"])  # no folder given: any folder
    assert like_new_file("a.py", ["./b.py"])
    assert like_new_file(".ci/a.py", [".ci/b.py"]) and not like_new_file(".ci/a.py", ["ci/b.py"])  # a dot folder is its own
    assert not like_new_file("lib/a.py", ["tools/b.py"])
    assert not like_new_file("tools/a.sh", ["tools/b.py"])
    assert not like_new_file("tools/Makefile", ["tools/Build"])  # no suffix: never a kind


def test_relative_and_src_layout_imports_find_the_tested_code(tmp_path: Path) -> None:
    from tether.assist.imports import tested_files

    files = {"pkg/tests/test_calc.py": "from ..calc import add\nfrom . import fixtures\n",
             "pkg/calc.py": "", "pkg/tests/fixtures.py": "", "src/lib/text.py": "",
             "tests/test_text.py": "import lib.text\nfrom lib import missing\n", "tests/broken_test.py": "def (:\n"}
    lay_out(tmp_path, files)
    named = ["pkg/tests/test_calc.py", "tests/test_text.py", "tests/broken_test.py"]
    assert tested_files(tmp_path, named, files) == ["pkg/calc.py", "src/lib/text.py"]  # a test's helper is no code
