"""Changed lines shown by path and line number in a reply with no call, and the edit they make
(assist/shown_lines.py); through the real loop and dispatcher with the `take` lever."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted import call, say
from test_take_version import runtime_for, taken

from tether.assist.shown_lines import ShownLines, shown_lines_edits
from tether.core.profile import profile_named
from tether.engine.loop import Conversation

TABLE = ("'use strict';\n\nconst { padLeft, heading } = require('./text');\n\nfunction row(n) {\n"
         "    return padLeft(n, 4);\n}\n\nmodule.exports = { row };\n")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "table.js").write_text(TABLE)
    (folder / "bin").mkdir()
    (folder / "bin" / "report.js").write_text("const { padLeft } = require('../lib/text');\n")
    return folder


def never(_: str) -> bool:
    return False


def shown_lines_edit(reply: str, root: Path, keeps=never) -> ShownLines | None:
    """The one edit the reply makes (None: none; two fail the test)."""
    edits = shown_lines_edits(reply, root, keeps)
    assert len(edits) <= 1
    return edits[0] if edits else None


def test_the_lines_of_one_file_are_one_edit_over_their_span_at_the_files_indentation(root: Path) -> None:
    reply = ("Here are the new lines:\n"
             "1. `lib/table.js:3: const { leftPad, heading } = require('./text');`\n"
             "2. `lib/table.js:6: return leftPad(n, 4);`\n")
    edit = shown_lines_edit(reply, root)
    assert edit is not None and (edit.path, edit.numbers) == ("lib/table.js", (3, 6))
    assert edit.old == "".join(TABLE.splitlines(keepends=True)[2:6])
    assert edit.new == edit.old.replace("padLeft", "leftPad")


def test_a_backtick_that_ends_the_line_itself_is_kept(root: Path) -> None:
    (root / "lib" / "s.js").write_text("const s = `a ${x}`;\n")
    edit = shown_lines_edit("lib/s.js:1: const s = `a ${y}`;", root)
    assert edit is not None and edit.new == "const s = `a ${y}`;\n"


@pytest.mark.parametrize(("reply", "why"), [
    ("lib/table.js:3: const { padLeft, heading } = require('./text');", "the line as it is: no change"),
    ("lib/table.js:3: print('something else entirely, nothing alike at all')", "not a changed copy"),
    ("lib/table.js:40: const x = 1;", "no such line"),
    ("lib/nope.js:1: const x = 1;", "no such file"),
    ("../outside.js:1: const x = 1;", "outside the project"),
    ("lib/table.js:3:", "no text"),
])
def test_what_is_not_taken(root: Path, reply: str, why: str) -> None:
    (root.parent / "outside.js").write_text("const x = 2;\n")
    assert shown_lines_edit(reply, root) is None, why


def test_each_file_shown_is_its_own_edit_and_a_file_the_request_keeps_is_skipped(root: Path) -> None:
    reply = ("lib/table.js:3: const { leftPad, heading } = require('./text');\n"
             "bin/report.js:1: const { leftPad } = require('../lib/text');\n")
    assert [edit.path for edit in shown_lines_edits(reply, root, never)] == ["lib/table.js", "bin/report.js"]
    kept = shown_lines_edits(reply, root, lambda named: named == "lib/table.js")
    assert [edit.path for edit in kept] == ["bin/report.js"]


async def test_the_reply_is_made_the_edit_and_its_result_says_so(root: Path, home: Path) -> None:
    reply = say("To change each line:\n- `lib/table.js:3: const { leftPad, heading } = require('./text');`\n"
                "- `lib/table.js:6:     return leftPad(n, 4);`\n"
                "- `bin/report.js:1: const { leftPad } = require('../lib/text');`\nThat is all.")
    read = call(("read_file", {"filepath": "lib/table.js"}))
    runtime, provider = runtime_for(root, home, [read, reply, say("Renamed.")])
    result = await runtime.loop.run_turn(Conversation(), "rename padLeft to leftPad in lib/table.js")
    assert (root / "lib" / "table.js").read_text() == TABLE.replace("padLeft", "leftPad")
    assert (root / "bin" / "report.js").read_text() == "const { leftPad } = require('../lib/text');\n"
    assert [(record.call.name, bool(record.changed_paths)) for record in taken(result)] == [("edit_file", True)] * 2
    results = [part.content for m in provider.requests[2].messages for part in m.tool_results]
    assert any("showed new text for lines 3, 6 of lib/table.js and made no call, so they were put in "
               "place as the edit_file call above" in text for text in results)


async def test_the_lines_lever_off_takes_nothing(root: Path, home: Path) -> None:
    reply = say("`lib/table.js:3: const { leftPad, heading } = require('./text');`")
    runtime, _ = runtime_for(root, home, [reply, say("Renamed."), say("Renamed.")])
    runtime.apply_profile(profile_named("full", "lines", "take"))
    result = await runtime.loop.run_turn(Conversation(), "rename padLeft to leftPad in lib/table.js")
    assert taken(result) == [] and (root / "lib" / "table.js").read_text() == TABLE
