"""The small profile against habits seen on a real 1.5B model: a call repeated after it
succeeded, a tool named in prose instead of called, a whole-file write that keeps only the
new part, a changed line wrapped in made-up braces, and a search of the wrong file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import BaseModel
from scripted import ScriptedProvider, TextArgs, call, make_tool, say
from test_profile import (
    CommandArgs,
    menu_loop,
    nudges_of,
    run_nudged,
    small_runtime,
    write_and_run_tools,
)

from tether.assist.call_guard import lines_lost
from tether.assist.reply_shapes import shown_new_file
from tether.assist.rules import FIND_IT_YOURSELF, REPEATED_CALL
from tether.core.profile import SMALL
from tether.core.toolspec import ToolContext, ToolError
from tether.engine.loop import Conversation
from tether.tools.file_search import search_in_file
from tether.tools.file_table import FILE_TOOLS
from tether.tools.params import SearchInFileParams

# ---------------------------------------------------------------- the same call again


async def test_a_repeated_successful_read_gets_a_short_note_not_the_result_again(tmp_path: Path) -> None:
    reads = 0

    def read(args, ctx):  # noqa: ANN001
        nonlocal reads
        reads += 1
        return "TODO one\nTODO two"

    same = ("read_file", {"filepath": "a.py"})
    provider, conv, result = await run_nudged(
        tmp_path, [call(same), call(same), call(same), say("There are 2 TODO lines.")],
        tools=[make_tool("read_file", read)],
    )
    contents = [r.content for m in conv.messages if m.role == "tool" for r in m.tool_results]
    assert contents == ["TODO one\nTODO two", REPEATED_CALL, REPEATED_CALL]
    assert reads == 1 and result.text == "There are 2 TODO lines."


# ---------------------------------------------------------------- a tool named, not called


async def test_a_tool_named_in_prose_gets_the_call_form_once_and_nothing_runs(tmp_path: Path) -> None:
    write = call(("write_file", {"filepath": "hello.py", "content": "print('hello')\n"}))
    prose = 'To check it, you can run:\n```sh\nrun_cmd "python hello.py"\n```'
    provider, _, result = await run_nudged(
        tmp_path, [write, say(prose), say(prose), say("Done.")], request="make hello.py print hello",
        tools=write_and_run_tools(),
    )
    first = nudges_of(provider)[0]
    assert "names run_cmd but makes no call" in first
    assert '{"name": "run_cmd", "arguments": {"command": "python hello.py"}}' in first
    assert [e.call.name for e in result.evidence] == ["write_file"]  # the harness ran nothing itself
    assert sum("names run_cmd" in n for n in nudges_of(provider)) == 1


async def test_a_plan_for_the_user_instead_of_an_answer_is_told_to_find_it(tmp_path: Path) -> None:
    plan = "1. Use the `read_file` tool to read a.py.\n2. Look for the print call."
    provider, _, _ = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "a.py"})), say(plan), say("It prints hi.")],
    )
    assert len(nudges_of(provider)) == 1
    assert "names read_file" in nudges_of(provider)[0] and FIND_IT_YOURSELF in nudges_of(provider)[0]


@pytest.mark.parametrize("answer", [
    "I ran it with run_cmd and it printed hello.",
    "Done: I used read_file and write_file; hello.py prints hello.",
])
async def test_a_tool_merely_mentioned_in_the_answer_is_not_nudged(tmp_path: Path, answer: str) -> None:
    (tmp_path / "hello.py").write_text("print('hi')\n")
    run = call(("run_cmd", {"command": "python hello.py"}))
    write = call(("write_file", {"filepath": "hello.py", "content": "print('hello')\n"}))
    provider, _, _ = await run_nudged(
        tmp_path, [write, run, say(answer)], request="make hello.py print hello", tools=write_and_run_tools(),
    )
    assert nudges_of(provider) == []


# ---------------------------------------------------------------- a write that keeps only the new part


def file_tools(root: Path) -> list:
    def read(args, ctx):  # noqa: ANN001
        return (root / args.filepath).read_text()

    def write(args, ctx):  # noqa: ANN001
        (root / args.filepath).write_text(args.content)
        return "written"

    return [make_tool("read_file", read), make_tool("write_file", write, TextArgs, reads=False, writes_files=True)]


OLD_MODULE = "def title_case(s):\n    return s.title()\n\n\ndef truncate(s, n):\n    return s[:n]\n"


async def test_a_write_that_would_delete_most_of_a_read_file_waits_once(tmp_path: Path) -> None:
    (tmp_path / "strings.py").write_text(OLD_MODULE)
    partial = call(("write_file", {"filepath": "strings.py", "content": "def slugify(s):\n    return s\n"}))
    provider = ScriptedProvider([call(("read_file", {"filepath": "strings.py"})), partial, partial, say("Done.")])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    conv = Conversation()
    result = await loop.run_turn(conv, "add a slugify function to strings.py")
    refused, written = result.evidence[1], result.evidence[2]
    assert refused.error and "would delete 4 of the 4 lines" in refused.result
    assert "def truncate(s, n):" in refused.result  # what it holds now, to copy from
    assert not written.error  # sent again on purpose: written
    assert (tmp_path / "strings.py").read_text() == "def slugify(s):\n    return s\n"


async def test_a_write_that_keeps_the_old_lines_goes_through(tmp_path: Path) -> None:
    (tmp_path / "strings.py").write_text(OLD_MODULE)
    whole = OLD_MODULE + "\n\ndef slugify(s):\n    return s\n"
    provider = ScriptedProvider([
        call(("read_file", {"filepath": "strings.py"})),
        call(("write_file", {"filepath": "strings.py", "content": whole})),
        say("Done."),
    ])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    result = await loop.run_turn(Conversation(), "add a slugify function to strings.py")
    assert not result.evidence[1].error and (tmp_path / "strings.py").read_text() == whole


SETTINGS = (
    "# Restart after changing.\n\n[server]\nport = 9000\nworkers = 3\n\n"
    "[telemetry]\n# sent daily\nenabled = false\nendpoint = \"https://x.invalid\"\n\n[cache]\nenabled = true\n"
)


async def test_a_settings_write_that_drops_a_section_waits_even_when_most_lines_stay(tmp_path: Path) -> None:
    (tmp_path / "settings.toml").write_text(SETTINGS)
    dropped = SETTINGS.replace('[telemetry]\n# sent daily\nenabled = false\nendpoint = "https://x.invalid"\n\n', "")
    write = call(("write_file", {"filepath": "settings.toml", "content": dropped}))
    provider = ScriptedProvider([call(("read_file", {"filepath": "settings.toml"})), write, say("Done.")])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    result = await loop.run_turn(Conversation(), "turn off telemetry in the settings file")
    refused = result.evidence[1]
    assert refused.error and "would delete 4 of the 10 lines settings.toml has now" in refused.result
    assert "[telemetry]" in refused.result and "at its end" not in refused.result  # no code-append offer
    assert (tmp_path / "settings.toml").read_text() == SETTINGS


async def test_a_settings_write_goes_through_when_the_request_removes_or_one_value_changes(tmp_path: Path) -> None:
    (tmp_path / "settings.toml").write_text(SETTINGS)
    dropped = SETTINGS.replace('[telemetry]\n# sent daily\nenabled = false\nendpoint = "https://x.invalid"\n\n', "")
    provider = ScriptedProvider([
        call(("read_file", {"filepath": "settings.toml"})),
        call(("write_file", {"filepath": "settings.toml", "content": dropped})), say("Done."),
    ])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    result = await loop.run_turn(Conversation(), "remove the telemetry section from settings.toml")
    assert not result.evidence[1].error and (tmp_path / "settings.toml").read_text() == dropped
    one = SETTINGS.replace("port = 9000", "port = 9100")
    provider = ScriptedProvider([
        call(("read_file", {"filepath": "settings.toml"})),
        call(("write_file", {"filepath": "settings.toml", "content": one})), say("Done."),
    ])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    result = await loop.run_turn(Conversation(), "set the port to 9100")
    assert not result.evidence[1].error and (tmp_path / "settings.toml").read_text() == one


@pytest.mark.parametrize("marker", [False, True])
async def test_an_empty_reply_after_a_change_that_worked_is_asked_for_the_summary(tmp_path: Path, marker: bool) -> None:
    """edit_toml_flag: the edit worked, the reply was empty, and "continue" sent the model on to
    rewrite the file without the section it had just fixed."""
    (tmp_path / "settings.toml").write_text(SETTINGS)
    edit = call(("write_file", {"filepath": "settings.toml", "content": SETTINGS.replace("9000", "9100")}))
    read = call(("read_file", {"filepath": "settings.toml"}))
    from tether.core.messages import Done, Usage

    empty = result_marker_reply() if marker else [Done(Usage(900, 0), "end_turn")]
    provider = ScriptedProvider([read, edit, empty, say("Set the port to 9100.")])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    loop.mode = "text"
    conv = Conversation()
    result = await loop.run_turn(conv, "set the server port to 9100")
    nudges = nudges_in(conv)
    assert len(nudges) == 1 and "Your last call worked: settings.toml is changed" in nudges[0]
    assert nudges[0].startswith("Your reply began with a tool result" if marker else "Your reply was empty.")
    assert "one short sentence saying what you changed" in nudges[0]
    assert result.text == "Set the port to 9100." and len(result.evidence) == 2  # nothing invented


def test_lines_lost_ignores_indentation_order_and_blank_lines() -> None:
    assert lines_lost("a = 1\n\n  b = 2\nc = 3\n", "c = 3\nb = 2\n    a = 1\n") == (0, 3)
    assert lines_lost("a = 1\nb = 2\nc = 3\n", "a = 1\n") == (2, 3)


# ---------------------------------------------------------------- one changed line in made-up braces


def small_edit(tmp_path: Path, home: Path, name: str, text: str):  # noqa: ANN201
    runtime, root = small_runtime(tmp_path, home)
    runtime.apply_profile(SMALL)
    (root / name).write_text(text)
    edit = runtime.table.get("edit_file")

    def run(old: str, new: str):  # noqa: ANN202
        args = edit.params.model_validate({"filepath": name, "old_content": old, "new_content": new})
        return edit.handler(args, ToolContext(root=root))

    return run, root / name


CONFIG = '{\n  "http": {\n    "timeout_s": 30,\n    "retries": 2\n  },\n  "db": {"timeout_s": 5}\n}\n'


async def test_a_changed_line_wrapped_in_made_up_braces_is_applied_where_it_is(tmp_path: Path, home: Path) -> None:
    edit, path = small_edit(tmp_path, home, "app.json", CONFIG)
    output = edit('{\n    "timeout_s": 30\n}', '{\n    "timeout_s": 45\n}')
    assert path.read_text() == CONFIG.replace('"timeout_s": 30,', '"timeout_s": 45,')
    assert "its one changed line" in output.text and "line 3" in output.text and "+1 -1" in output.text


TOML = (
    "[server]\nport = 9000\n\n[telemetry]\n# sent once a day\nenabled = true\nsample_rate = 0.25\n\n"
    "[cache]\nenabled = true\n"
)


async def test_context_lines_with_a_line_between_them_pick_the_one_place_to_change(tmp_path: Path, home: Path) -> None:
    edit, path = small_edit(tmp_path, home, "settings.toml", TOML)
    output = edit("[telemetry]\nenabled = true\n", "[telemetry]\nenabled = false\n")
    assert path.read_text() == TOML.replace("day\nenabled = true", "day\nenabled = false")
    assert "[cache]\nenabled = true" in path.read_text()  # the other `enabled = true` is untouched
    assert "lines 4-6" in output.text and "line 6 was changed" in output.text


@pytest.mark.parametrize(("old", "new"), [
    ("enabled = true\n", "enabled = false\n"),  # no context: two places
    ("[server]\nenabled = true\n", "[server]\nenabled = false\n"),  # too far apart
    ("[telemetry]\nenabled = true\n", "[telemetry]\nenabled = false\nsample_rate = 1\n"),  # not one line
    # out of order: read on, the lines come from two sections ([cache]'s enabled)
    ("[telemetry]\nsample_rate = 0.25\nenabled = true\n", "[telemetry]\nsample_rate = 0.25\nenabled = false\n"),
])
async def test_spread_context_that_is_ambiguous_far_or_more_than_one_change_stays_an_error(
    tmp_path: Path, home: Path, old: str, new: str,
) -> None:
    edit, path = small_edit(tmp_path, home, "settings.toml", TOML)
    with pytest.raises(ToolError, match="old_content (was not found|occurs 2 times)"):
        edit(old, new)
    assert path.read_text() == TOML


SERVICES = (
    "# scale with care\nservices:\n  web:\n    image: shop-web:1.8\n    replicas: 2\n"
    "  worker:\n    image: shop-worker:1.8\n    replicas: 3\n    env:\n      QUEUE: orders\n"
    "  cron:\n    replicas: 1\n"
)
GUESSED = "kind: Deployment\nmetadata:\n  name: worker\nspec:\n  replicas: 1\n  selector: x\n"


@pytest.mark.parametrize(("old", "new"), [
    ("spec:\n  replicas: 2\n", "spec:\n  replicas: 5\n"),  # context with words may name another place
    ('{\n"timeout_s": 3\n}', '{\n"timeout_s": 4\n}'),  # 3 is only the start of 30
    ('[\n"timeout_s"\n]', '[\n"timeout"\n]'),  # occurs twice
    ('{\n"retries": 2,\n"extra": 1\n}', '{\n"retries": 3,\n"extra": 2\n}'),  # two lines change
])
async def test_other_misses_stay_errors_and_change_nothing(tmp_path: Path, home: Path, old: str, new: str) -> None:
    edit, path = small_edit(tmp_path, home, "app.json", CONFIG.replace('"retries": 2', '"replicas: 2"'))
    before = path.read_text()
    with pytest.raises(ToolError, match="old_content was not found"):
        edit(old, new)
    assert path.read_text() == before


# ---------------------------------------------------------------- a search of the wrong file


def test_a_search_of_one_file_names_matches_in_the_other_files(tmp_path: Path) -> None:
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "settings.py").write_text("port = int(env.get('LEDGER_PORT', defaults.PORT))\n")
    (tmp_path / "ledger" / "defaults.py").write_text("PORT = 7341\nHOST = 'x'\n")
    (tmp_path / "secret.py").write_text("PORT = 1111\n")
    ctx = ToolContext(root=tmp_path, may_read=lambda path: path.name != "secret.py")
    output = search_in_file(SearchInFileParams(pattern="port", path="ledger/settings.py"), ctx)
    head, _, elsewhere = output.text.partition("Other files in the project match too")
    assert head.startswith("ledger/settings.py:1:")
    assert "ledger/defaults.py:1: PORT = 7341" in elsewhere
    assert "settings.py" not in elsewhere and "1111" not in output.text  # itself, and a denied file
    assert output.summary == "1 matches in 1 files"


def test_the_other_files_note_offers_the_searched_files_top_folder_before_the_whole_project(
    tmp_path: Path,
) -> None:
    """count_todos: "the python files under src/"; one file of src/ searched, the note said
    search "." (docs and tests too). It names src first, and counts the other lines as more."""
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "src" / "app" / "orders.py").write_text("# TODO: paginate\n")
    for n in range(6):
        (tmp_path / "src" / f"m{n}.py").write_text(f"x = {n}  # TODO: {n}\n")
    (tmp_path / "docs" / "notes.md").write_text("- TODO: the guide\n")
    out = search_in_file(SearchInFileParams(pattern="TODO", path="src/app/orders.py"),
                         ToolContext(root=tmp_path)).text
    assert ('Other files in the project match too (search path "src" for all of src/, "." for '
            'the whole project; 7 more lines in 7 other files):') in out
    at_root = tmp_path / "top.py"
    at_root.write_text("TODO = 1\n")
    out = search_in_file(SearchInFileParams(pattern="TODO", path="top.py"), ToolContext(root=tmp_path)).text
    assert 'match too (search path "." to see them all; ' in out


def test_the_other_files_preview_puts_whole_word_matches_before_longer_words(tmp_path: Path) -> None:
    """"port" also matches every `import` line: those filled the preview in ask_default_port."""
    from tether.tools.file_search import ELSEWHERE_LINES

    (tmp_path / "server.py").write_text("serve(cfg.port)\n")
    imports = "".join(f"import mod{n}\n" for n in range(ELSEWHERE_LINES))
    (tmp_path / "settings.py").write_text(imports + "port = int(env.get('LEDGER_PORT', defaults.PORT))\n")
    output = search_in_file(SearchInFileParams(pattern="port", path="server.py"), ToolContext(root=tmp_path))
    preview = output.text.partition("Other files in the project match too")[2].splitlines()[1:]
    assert preview[0] == "settings.py:6: port = int(env.get('LEDGER_PORT', defaults.PORT))"
    assert preview[1:] == [f"settings.py:{n + 1}: import mod{n}" for n in range(ELSEWHERE_LINES - 1)]


def test_a_folder_search_or_no_other_match_adds_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("PORT = 1\n")
    (tmp_path / "b.py").write_text("HOST = 2\n")
    ctx = ToolContext(root=tmp_path)
    alone = search_in_file(SearchInFileParams(pattern="port", path="a.py"), ctx).text
    assert alone == "a.py:1: PORT = 1"
    (tmp_path / "c.py").write_text("PORT = 3\n")
    folder = search_in_file(SearchInFileParams(pattern="port", path="."), ctx).text
    assert folder.splitlines() == ["a.py:1: PORT = 1", "c.py:1: PORT = 3", "(2 matching lines in 2 files)"]


def test_a_file_full_of_matches_is_what_was_asked_about_and_gets_no_other_files(tmp_path: Path) -> None:
    from tether.tools.file_search import ELSEWHERE_BELOW

    (tmp_path / "server.log").write_text("ERROR a\n" * ELSEWHERE_BELOW)
    (tmp_path / "server.log.1").write_text("ERROR old\n")
    ctx = ToolContext(root=tmp_path)
    output = search_in_file(SearchInFileParams(pattern="ERROR", path="server.log"), ctx)
    assert "Other files" not in output.text and "server.log.1" not in output.text
    (tmp_path / "server.log").write_text("ERROR a\n" * (ELSEWHERE_BELOW - 1))
    assert "server.log.1" in search_in_file(SearchInFileParams(pattern="ERROR", path="server.log"), ctx).text


def counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files search_in_file reads, in order (the real reader, counted)."""
    from tether.tools import file_search

    read: list[Path] = []
    real = file_search.read_small_file

    def counting(path: Path, limit: int) -> bytes:
        read.append(path)
        return real(path, limit)

    monkeypatch.setattr(file_search, "read_small_file", counting)
    # the count is what is tested: the time budget, which a loaded machine reaches first, is not
    monkeypatch.setattr(file_search, "ELSEWHERE_TIME_LIMIT", None)
    return read


def test_the_look_elsewhere_reads_a_bounded_number_of_files_the_named_one_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.tools.file_search import ELSEWHERE_FILES

    for n in range(3 * ELSEWHERE_FILES):  # listed before the answer, and every one matches
        (tmp_path / "aa" / f"m{n // 50}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "aa" / f"m{n // 50}" / f"f{n:03}.py").write_text("report = 'port'\n")
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "settings.py").write_text("from defaults import PORT\nport = PORT\n")
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "defaults.py").write_text("PORT = 7341\n")
    read = counted_reads(monkeypatch)
    output = search_in_file(SearchInFileParams(pattern="port", path="ledger/settings.py"), ToolContext(root=tmp_path))
    _, _, elsewhere = output.text.partition("Other files in the project match too")
    assert elsewhere.splitlines()[1] == "zz/defaults.py:1: PORT = 7341"  # the file it imports, first
    assert len(read) == 1 + ELSEWHERE_FILES  # the file asked for, then the budget; not 3x as many


def test_the_look_elsewhere_stops_at_its_byte_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.tools.file_search import ELSEWHERE_BYTES

    big = "x" * (ELSEWHERE_BYTES // 4) + "\nport = 1\n"
    for n in range(12):
        (tmp_path / f"big{n:02}.py").write_text(big)
    (tmp_path / "a.py").write_text("port = 2\n")
    read = counted_reads(monkeypatch)
    output = search_in_file(SearchInFileParams(pattern="port", path="a.py"), ToolContext(root=tmp_path))
    assert "big00.py:2: port = 1" in output.text
    assert len(read) == 1 + 4  # a.py, then four quarters of the budget


def test_one_file_searches_in_a_row_take_the_file_list_once(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("PORT = 1\n")
    (tmp_path / "b.py").write_text("PORT = 2\n")
    ctx = ToolContext(root=tmp_path)
    ctx.files.ttl = math.inf  # however slow the machine
    for _ in range(3):
        assert "b.py:1: PORT = 2" in search_in_file(SearchInFileParams(pattern="port", path="a.py"), ctx).text
    assert ctx.files.listings == 1


# ---------------------------------------------------------------- run it, do not describe it


async def test_a_request_to_run_something_is_not_a_question_and_is_told_to_run_it(tmp_path: Path) -> None:
    from tether.assist.rules import NOT_RUN

    steps = "1. Open a terminal.\n2. Run:\n```sh\npython signup.py\n```\n3. Answer the prompts."
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "signup.py"})), say(steps), say("I cannot run it.")],
        request="Run signup.py and register Ada on the blue team. What ticket number did it give?",
    )
    assert nudges_of(provider) == [NOT_RUN]
    assert [e.call.name for e in result.evidence] == ["read_file"]


# ---------------------------------------------------------------- a broken call, again and again


async def test_a_broken_call_is_answered_with_where_it_breaks_and_three_in_a_row_end_the_turn(
    tmp_path: Path,
) -> None:
    from tether.engine.loop import MAX_UNREADABLE

    broken = '{"name": "read_file", "arguments": {"filepath": str(name)}}'
    provider = ScriptedProvider([say(broken)] * (MAX_UNREADABLE + 2))
    loop, _ = menu_loop(provider, tmp_path)
    loop.mode = "text"
    result = await loop.run_turn(Conversation(), "what does a.py print?")
    assert len(provider.requests) == MAX_UNREADABLE  # not the whole step budget
    errors = [m.text for m in provider.requests[1].messages if m.role == "user"][-1]
    assert "not valid JSON (Expecting value at: ..." in errors and "str(name)" in errors
    assert "`str(name)` is code, and no one runs it" in errors  # what to do instead
    assert result.evidence == [] and result.stop_reason == "end_turn"


@pytest.mark.parametrize(("src", "hint"), [
    ('{"name": "write_file", "arguments": {"filepath": "n.txt", "content": todo_count}}', "`todo_count`"),
    ('{"name": "write_file", "arguments": {"content": len(lines), "filepath": "n.txt"}}', "`len(lines)`"),
    ('{"name": "read_file", "arguments": {"filepath": "a.py",}}', None),  # broken, but no code in it
    ('{"name": "read_file", "arguments": {"filepath": "a.py", "x": true,}}', None),
])
def test_the_broken_call_refusal_names_a_value_written_as_code(src: str, hint: str | None) -> None:
    from tether.protocol.refusals import _invalid_json_error

    error = _invalid_json_error(src)
    assert (f"{hint} is code" in error) if hint else ("is code" not in error)


async def test_a_readable_call_between_broken_ones_starts_the_count_again(tmp_path: Path) -> None:
    broken = say('{"name": "read_file", "arguments": {"filepath": str(name)}}')
    good = call(("read_file", {"filepath": "a.py"}))
    provider = ScriptedProvider([broken, broken, good, broken, broken, say("It prints hi.")])
    loop, _ = menu_loop(provider, tmp_path)
    loop.mode = "text"
    result = await loop.run_turn(Conversation(), "what does a.py print?")
    assert result.text == "It prints hi." and len(result.evidence) == 1


# ---------------------------------------------------------------- a project script is not a tool


def test_tool_search_for_a_project_script_says_it_is_a_file_to_run(tmp_path: Path) -> None:
    from tether.core.toolspec import ToolTable
    from tether.engine.toolmenu import ToolMenu, tool_search_tool
    from tether.tools.params import ToolSearchParams

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "textstats.py").write_text("print(1)\n")
    table = ToolTable([make_tool(n, lambda a, c: "") for n in ("read_file", "git_diff")])
    menu = ToolMenu(table, ["read_file"])
    search = tool_search_tool(menu)
    ctx = ToolContext(root=tmp_path)
    said = search.handler(ToolSearchParams(query="python tools/textstats.py"), ctx)
    assert said.startswith("tools/textstats.py is a file in the project, not a tool: run it with run_cmd")
    assert menu.loaded == set()  # nothing was loaded
    assert "Loaded" in search.handler(ToolSearchParams(query="git diff"), ctx)


def script_search(root: Path):  # noqa: ANN201
    from tether.core.toolspec import ToolTable
    from tether.engine.toolmenu import ToolMenu, tool_search_tool
    from tether.tools.params import ToolSearchParams

    table = ToolTable([make_tool(n, lambda a, c: "") for n in ("read_file", "git_diff")])
    search = tool_search_tool(ToolMenu(table, ["read_file"]))
    ctx = ToolContext(root=root)
    ctx.files.ttl = math.inf  # one list for the whole test, however slow the machine
    return lambda query: search.handler(ToolSearchParams(query=query), ctx), ctx


def test_tool_search_takes_a_base_name_one_project_file_has_for_that_file(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "textstats.py").write_text("print(1)\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "run.py").write_text("")
    (tmp_path / "b" / "run.py").write_text("")
    ask, ctx = script_search(tmp_path)
    assert ask("python textstats.py").startswith("tools/textstats.py is a file in the project, not a tool")
    assert "`python tools/textstats.py --help`" in ask("select:textstats.py")
    assert "is a file in the project" not in ask("run.py")  # two files have that name: neither is meant
    assert "is a file in the project" in ask("a/run.py")
    assert ctx.files.listings == 1  # one file list for all four queries


def test_tool_search_never_looks_outside_the_project_for_a_query_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    root, outside = tmp_path / "project", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "passwd").write_text("x")
    (root / "linked").symlink_to(outside)
    (root / "tool.py").symlink_to(outside / "passwd")
    ask, ctx = script_search(root)
    ctx.files.paths()  # the file list is taken before the stats are watched
    looked_at: list[str] = []
    for name in ("stat", "lstat"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda p, *a, real=real, **k: looked_at.append(str(p)) or real(p, *a, **k))
    for word in ("../outside/passwd", "linked/passwd", f"{outside}/passwd", "~/passwd", "tool.py"):
        assert "is a file in the project" not in ask(f"python {word}"), word
    assert [p for p in looked_at if not p.startswith(str(root) + "/")] == []


async def test_a_number_in_a_path_the_call_named_counts_as_seen(tmp_path: Path) -> None:
    provider, _, _ = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "notes/meeting-2024-04-18.txt"})), say("The 2024 notes list 3 items.")],
        request="what do the April meeting notes list?",
    )
    assert nudges_of(provider) == []


# ---------------------------------------------------------------- "without changing the test"


@pytest.mark.parametrize(("request_text", "kept"), [
    ("tests/test_core.py is failing. Fix the code so it passes, without changing the test.", True),
    ("the pagination tests fail - make them pass, but leave the tests themselves alone", True),
    ("don't touch the tests; fix the parser", True),
    ("add a slugify function and a test for it in tests/test_strings.py", False),
    ("fix the failing test", False),
])
def test_which_requests_keep_the_tests(request_text: str, kept: bool) -> None:
    from tether.assist.request import leaves_tests, read_request

    assert leaves_tests(request_text) is kept
    assert read_request(request_text, ()).keeps_tests is kept


def _recording_edit_tools(edits: list[str]) -> list:
    """read_file, and edit_file/write_file that only record the path they were given."""
    from pydantic import BaseModel

    class EditArgs(BaseModel):
        filepath: str
        old_content: str
        new_content: str

    def edit(args, ctx):  # noqa: ANN001
        edits.append(args.filepath)
        return "edited"

    return [make_tool("read_file", lambda a, c: "x"),
            make_tool("edit_file", edit, EditArgs, reads=False, writes_files=True),
            make_tool("write_file", edit, TextArgs, reads=False, writes_files=True)]


async def test_an_edit_of_a_test_the_user_said_to_leave_is_held_back_once_then_runs(tmp_path: Path) -> None:
    """The request is read by a pattern: told once, the model decides; sent again, the edit runs
    (it used to be refused every time, for the whole turn)."""
    from tether.assist.call_guard import KEEP_TESTS

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_core.py").write_text("assert f() == 3\n")
    (tmp_path / "core.py").write_text("def f():\n    return 2\n")
    edit_test = call(("edit_file", {"filepath": "tests/test_core.py", "old_content": "3", "new_content": "2"}))
    edits: list[str] = []
    fix_code = call(("edit_file", {"filepath": "core.py", "old_content": "2", "new_content": "3"}))
    provider = ScriptedProvider([edit_test, edit_test, fix_code, say("Fixed core.f.")])
    loop, _ = menu_loop(provider, tmp_path, tools=_recording_edit_tools(edits), nudges=True)
    loop.menu = None  # every tool on offer
    result = await loop.run_turn(
        Conversation(), "tests/test_core.py is failing. Fix the code so it passes, without changing the test."
    )
    refused = [e for e in result.evidence if e.error]
    assert [e.result for e in refused] == [KEEP_TESTS.format(path="tests/test_core.py")]
    assert edits == ["tests/test_core.py", "core.py"]


@pytest.mark.parametrize("written", ["score_test.py", "./score_test.py", "{root}/score_test.py"])
async def test_a_file_the_request_says_to_leave_is_held_back_once_then_runs(tmp_path: Path, written: str) -> None:
    """"Don't change darts_x_test.py": a file named so is kept, whatever its words say about
    tests and however the call names it; a small model overwrote such a test file with its own version."""
    from tether.assist.call_guard import KEEP_FILE

    (tmp_path / "score.py").write_text("def score():\n    pass\n")
    (tmp_path / "score_test.py").write_text("assert score() == 3\n")
    written = written.format(root=tmp_path)
    overwrite = call(("write_file", {"filepath": written, "content": "pass\n"}))
    fix_code = call(("edit_file", {"filepath": "score.py", "old_content": "pass", "new_content": "return 3"}))
    edits: list[str] = []
    provider = ScriptedProvider([overwrite, fix_code, say("Done.")])
    loop, _ = menu_loop(provider, tmp_path, tools=_recording_edit_tools(edits), nudges=True)
    loop.menu = None
    result = await loop.run_turn(
        Conversation(), "Implement score.py so that score_test.py passes. Don't change score_test.py.")
    assert [e.result for e in result.evidence if e.error] == [KEEP_FILE.format(path=written)]
    assert edits == ["score.py"]


async def test_a_new_test_file_is_never_held_back_as_an_existing_test(tmp_path: Path) -> None:
    """"don't change the existing tests; add tests/test_new.py": the new file is no existing test."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_old.py").write_text("def test_old():\n    assert True\n")
    write_new = call(("write_file", {"filepath": "tests/test_new.py", "content": "def test_new():\n    pass\n"}))
    edits: list[str] = []
    provider = ScriptedProvider([write_new, write_new, say("Added tests/test_new.py.")])
    loop, _ = menu_loop(provider, tmp_path, tools=_recording_edit_tools(edits), nudges=True)
    loop.menu = None
    result = await loop.run_turn(Conversation(), "don't change the existing tests; add tests/test_new.py")
    assert [e.result for e in result.evidence if e.error] == []
    assert edits == ["tests/test_new.py", "tests/test_new.py"]


# ---------------------------------------------------------------- a command shown, a program left waiting


async def test_a_command_shown_for_the_user_to_run_gets_its_run_cmd_call_once(tmp_path: Path) -> None:
    from tether.assist.rules import SHOWN_COMMAND

    shown = "To get the total, run:\n```sh\n$ python report.py | grep total\n```"
    provider, _, result = await run_nudged(
        tmp_path, [say(shown), say(shown), say("I cannot.")],
        request="Run report.py and tell me the grand total it prints.", tools=write_and_run_tools(),
    )
    nudges = nudges_of(provider)
    assert nudges[0].startswith(SHOWN_COMMAND.split("`")[0])
    assert '{"name": "run_cmd", "arguments": {"command": "python report.py | grep total"}}' in nudges[0]
    assert sum("nothing ran" in n for n in nudges) == 1  # once per turn
    assert result.evidence == []  # the harness ran nothing itself


@pytest.mark.parametrize("reply", [
    "Install it first:\n```sh\npip install pandas\n```",  # set-up is never suggested back
    "Create it first:\n```sh\ntouch shop.py\n```",  # rename_function (s9-k): an empty file made to run
    "Like this:\n```\nprint('hi')\n```",  # an untagged block that is not a command
    "You can run it:\n```sh\nrun_cmd \"python hello.py\"\n```",  # a tool written as a command
])
async def test_no_command_is_suggested_for_set_up_code_or_a_tool_name(tmp_path: Path, reply: str) -> None:
    provider, _, _ = await run_nudged(
        tmp_path, [call(("write_file", {"filepath": "a.py", "content": "x\n"})), say(reply), say("Done.")],
        request="what does a.py print?", tools=write_and_run_tools(),
    )
    assert not any("but nothing ran" in n for n in nudges_of(provider))


async def test_a_command_already_run_this_turn_is_not_suggested_again(tmp_path: Path) -> None:
    (tmp_path / "report.py").write_text("print(1)\n")
    ran = call(("run_cmd", {"command": "python report.py"}))
    answer = "It printed hello:\n```sh\npython report.py\n```"
    provider, _, result = await run_nudged(
        tmp_path, [ran, say(answer)], request="Run report.py and tell me what it prints.",
        tools=write_and_run_tools(),
    )
    assert nudges_of(provider) == [] and result.text == answer


class SessionArgs(BaseModel):
    session: str
    text: str = ""


def waiting_tools() -> list:
    from tether.core.messages import CommandStatus
    from tether.core.toolspec import ToolOutput

    def run(args, ctx):  # noqa: ANN001
        return ToolOutput("Your name: \n[waiting for input · session s1]",
                          command=CommandStatus("waiting_for_input", session="s1"))

    def answer(args, ctx):  # noqa: ANN001
        return ToolOutput("Ticket T-1\n[exit code 0]", command=CommandStatus("exited", exit_code=0))

    return [
        *write_and_run_tools()[:1],
        make_tool("run_cmd", run, CommandArgs, reads=False, runs_commands=True, main_arg="command"),
        make_tool("send_input", answer, SessionArgs, reads=False, runs_commands=True, main_arg="session"),
    ]


async def test_an_answer_while_the_program_still_waits_is_told_to_answer_it_once(tmp_path: Path) -> None:
    (tmp_path / "signup.py").write_text("input()\n")
    from tether.assist.rules import STILL_WAITING

    start = call(("run_cmd", {"command": "python signup.py"}))
    provider, _, result = await run_nudged(
        tmp_path, [start, say("It asks for a name."), say("It asks for a name.")],
        request="Run signup.py and register Ada. What ticket did it give?", tools=waiting_tools(),
    )
    assert nudges_of(provider) == [STILL_WAITING.format(session="s1")]
    assert [e.call.name for e in result.evidence] == ["run_cmd"]


async def test_the_waiting_nudge_comes_again_only_after_the_program_was_answered(tmp_path: Path) -> None:
    from tether.assist.rules import STILL_WAITING
    from tether.core.messages import CommandStatus
    from tether.core.toolspec import ToolOutput

    def still_waits(args, ctx):  # noqa: ANN001
        return ToolOutput("Too low.\nYour guess: ", command=CommandStatus("waiting_for_input", session="s1"))

    (tmp_path / "guess.py").write_text("input()\n")
    tools = [*waiting_tools()[:2],
             make_tool("send_input", still_waits, SessionArgs, reads=False, runs_commands=True, main_arg="session")]
    start = call(("run_cmd", {"command": "python guess.py"}))
    guess = call(("send_input", {"session": "s1", "text": "25"}))
    prose = say("It is waiting for a guess.")
    provider, _, result = await run_nudged(
        tmp_path, [start, prose, guess, prose, prose, prose], request="play guess.py until you win", tools=tools,
    )
    waiting = [n for n in nudges_of(provider) if n == STILL_WAITING.format(session="s1")]
    assert len(waiting) == 2  # once at the start, once more after the guess; not for the prose after that
    assert [e.call.name for e in result.evidence] == ["run_cmd", "send_input"]


async def test_a_reply_playing_the_waiting_program_itself_gets_its_first_answer_sent(tmp_path: Path) -> None:
    """interactive_guess: after the waiting nudge the model wrote the whole game in prose."""
    from tether.assist.rules import STILL_WAITING

    (tmp_path / "signup.py").write_text("input()\n")
    start = call(("run_cmd", {"command": "python signup.py"}))
    played = "Your name: Ada\nTeam: blue\nYour ticket is T-99.\nDone (I ran it)."
    sent_ada = call(("send_input", {"session": "s1", "text": "Ada"}))
    provider, _, result = await run_nudged(
        tmp_path, [start, say("It asks for a name."), say(played), sent_ada, say("The ticket is T-1.")],
        request="Run signup.py and register Ada. What ticket did it give?", tools=waiting_tools(),
    )
    sent = nudges_of(provider)
    assert sent[0] == STILL_WAITING.format(session="s1")  # nothing answered in the first reply
    assert "It asks 'Your name:'; your answer to that was 'Ada'" in sent[1]
    assert '{"name": "send_input", "arguments": {"session": "s1", "text": "Ada"}}' in sent[1]
    assert result.text == "The ticket is T-1."


async def test_no_waiting_nudge_once_the_program_has_ended(tmp_path: Path) -> None:
    (tmp_path / "signup.py").write_text("input()\n")
    start = call(("run_cmd", {"command": "python signup.py"}))
    reply = call(("send_input", {"session": "s1", "text": "Ada"}))
    provider, _, result = await run_nudged(
        tmp_path, [start, reply, say("The ticket is T-1.")],
        request="Run signup.py and register Ada. What ticket did it give?", tools=waiting_tools(),
    )
    assert nudges_of(provider) == [] and result.text == "The ticket is T-1."


async def test_send_input_named_with_a_command_and_no_live_program_is_told_to_start_it(tmp_path: Path) -> None:
    named = '```sh\nsend_input("python signup.py", "Ada\\nblue\\n")\n```'
    provider, _, _ = await run_nudged(
        tmp_path, [call(("write_file", {"filepath": "a.py", "content": "x\n"})), say(named), say("Done.")],
        request="Run signup.py and register Ada.", tools=waiting_tools(),
    )
    first = nudges_of(provider)[0]
    assert first.startswith("send_input answers a program that run_cmd started")
    assert '{"name": "run_cmd", "arguments": {"command": "python signup.py"}}' in first


def searched_retry(args, ctx):  # noqa: ANN001
    return 'uploader/client.py:11:    """Send one file, retrying with backoff."""\nuploader/policy.py:4: MAX_UPLOAD_RETRIES = 11'


@pytest.mark.parametrize(("answer", "nudged"), [
    ("25", True),  # a bare answer to a question is checked
    ("It retries 11 times.", False),  # what the result showed
    ("It is 25.", True),
    ("It is 2.", False),  # a small whole number may be a count of what it saw
    ("It retries 2 times after a failed upload.", False),
    ("1. Sends\n2. Retries", False),  # list markers are not answers
])
async def test_an_answer_number_is_checked_unless_it_may_be_a_small_count(
        tmp_path: Path, answer: str, nudged: bool) -> None:
    from tether.assist.rules import UNSEEN_NUMBER

    provider, _, _ = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "uploader"})), say(answer), say(answer)],
        request="How many times does the uploader retry a failed upload?",
        tools=[make_tool("read_file", searched_retry)],
    )
    sent = [n for n in nudges_of(provider) if "no tool result showed" in n]  # steps get NO_NUMBER
    assert len(sent) == nudged and all(n.startswith(UNSEEN_NUMBER.format(number="25")) for n in sent)


async def test_a_one_digit_number_is_not_checked_in_a_change_request(tmp_path: Path) -> None:
    provider, _, _ = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "uploader"})), say("Done: it now waits 2 seconds.")],
        request="make the uploader wait between retries", tools=[make_tool("read_file", searched_retry)],
    )
    assert not any("no tool result showed" in n for n in nudges_of(provider))


# ---------------------------------------------------------------- a count made up, written to a file

LOG_SEARCH = "logs/server.log:10: ERROR a\nlogs/server.log:13: ERROR b\n(14 matching lines in 1 files)"


async def run_count(tmp_path: Path, written: str):  # noqa: ANN201
    def search(args, ctx):  # noqa: ANN001
        return LOG_SEARCH

    tools = [*file_tools(tmp_path), make_tool("search_in_file", search)]
    write = call(("write_file", {"filepath": "error_count.txt", "content": written}))
    provider = ScriptedProvider([call(("search_in_file", {"filepath": "logs/server.log"})), write, write, say("Done.")])
    loop, _ = menu_loop(provider, tmp_path, tools=tools, nudges=True)
    return await loop.run_turn(Conversation(), "How many ERROR entries are in logs/server.log? Save the count to error_count.txt")


async def test_a_count_no_result_showed_is_not_written_once(tmp_path: Path) -> None:
    result = await run_count(tmp_path, "31")
    refused, written = result.evidence[1], result.evidence[2]
    assert refused.error and refused.result.startswith("Not written: no tool result showed 31")
    assert "Your last search said" not in refused.result  # no count computed for the model
    assert not written.error  # once per turn: the model decides
    assert (tmp_path / "error_count.txt").read_text() == "31"


async def test_a_count_a_result_showed_is_written_at_once(tmp_path: Path) -> None:
    result = await run_count(tmp_path, "14\n")
    assert not result.evidence[1].error
    assert (tmp_path / "error_count.txt").read_text() == "14\n"


# ---------------------------------------------------------------- a script that is not there


@pytest.mark.parametrize(("command", "refused"), [
    ("python hello.py", True),  # the prompt's example, in a project without it
    ("python3 tools/stats.py --count", True),
    ("python report.py", False),  # it exists
    ("python -m pytest", False),  # not a script path
    ("ls && python hello.py", False),  # only a command that starts with the script is judged
])
def test_a_script_that_does_not_exist_is_not_run_and_the_closest_files_are_named(
    tmp_path: Path, command: str, refused: bool,
) -> None:
    from tether.assist.call_guard import missing_script
    from tether.core.messages import ToolCall

    (tmp_path / "report.py").write_text("print(1)\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "textstats.py").write_text("print(1)\n")
    said = missing_script(ToolCall("c", "run_cmd", {"command": command}), ToolContext(root=tmp_path))
    assert (said is not None) == refused
    if said is not None:
        assert said.startswith("Not run: ") and "does not exist in this project" in said


def test_the_missing_script_refusal_names_a_file_of_the_same_name_elsewhere(tmp_path: Path) -> None:
    from tether.assist.call_guard import missing_script
    from tether.core.messages import ToolCall

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "textstats.py").write_text("print(1)\n")
    said = missing_script(ToolCall("c", "run_cmd", {"command": "python textstats.py"}), ToolContext(root=tmp_path))
    assert said is not None and "Closest existing paths: tools/textstats.py." in said


async def test_a_package_run_as_a_script_is_told_it_runs_with_python_m_and_no_call_is_written(tmp_path: Path) -> None:
    """multi_greeter_shout: `python greeter.py --name Ann --shout` where greeter/ is a package
    with a __main__.py; the refusal named only `greeter`, and the model read a file instead."""
    (tmp_path / "greeter").mkdir()
    (tmp_path / "greeter" / "__main__.py").write_text("print('hi')\n")
    run = call(("run_cmd", {"command": "python greeter.py --name Ann --shout"}))
    provider, _, result = await run_nudged(
        tmp_path, [run, say("Done.")], request="give greeter a --shout option", tools=write_and_run_tools(),
    )
    refused = result.evidence[0]
    assert refused.error and "greeter is a package with a __main__.py, so it runs as `python -m greeter`" in refused.result
    assert '"name": "run_cmd"' not in refused.result  # a command the model did not write is never offered
    assert len(result.evidence) == 1


def test_the_example_script_refused_names_the_projects_own_scripts_the_looked_at_first(tmp_path: Path) -> None:
    from tether.assist.call_guard import missing_script
    from tether.core.messages import ToolCall

    for name in ("a_tool.py", "report.py", "test_report.py", "notes.txt"):
        (tmp_path / name).write_text("print(1)\n")
    run = ToolCall("c", "run_cmd", {"command": "python hello.py"})
    said = missing_script(run, ToolContext(root=tmp_path), looked_at=["report.py", "notes.txt"])
    assert said is not None
    assert "hello.py is the instructions' example, not a file of this project." in said
    assert "The project's .py files: report.py, a_tool.py." in said  # the test file left out
    guessed = missing_script(ToolCall("c", "run_cmd", {"command": "node zzz.js"}), ToolContext(root=tmp_path))
    assert guessed is not None and "example" not in guessed and "files:" not in guessed  # none of that kind


# ---------------------------------------------------------------- a new version of a file, shown not written

GREETER = "import sys\n\n\ndef main():\n    name = sys.argv[1]\n    print(f'Hello, {name}')\n"


async def run_version(tmp_path: Path, block: str, path: str = "greeter.py",  # noqa: ANN201
                      request: str = "add a --shout option to greeter.py"):
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(GREETER)
    reply = f"Here is the updated file:\n```python\n{block}```\nNow it shouts."
    provider = ScriptedProvider([call(("read_file", {"filepath": path})), say(reply), say("Done.")])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    await loop.run_turn(Conversation(), request)
    return nudges_of(provider)


async def test_no_write_is_offered_for_a_new_version_of_a_test_to_leave_alone(tmp_path: Path) -> None:
    """fix_median: the offered write_file of tests/test_core.py, which the guard then refused."""
    block = GREETER.replace("Hello", "HELLO")
    request = "tests/test_greeter.py is failing. Fix the code so it passes, without changing the test."
    nudges = await run_version(tmp_path, block, path="tests/test_greeter.py", request=request)
    assert not any("new version of" in n for n in nudges)
    offered = await run_version(tmp_path / "b", block, path="tests/test_greeter.py", request="make the test shout")
    assert any("new version of tests/test_greeter.py" in n for n in offered)  # not told to leave it


async def test_a_new_version_of_a_read_file_shown_in_prose_gets_its_write_file_call(tmp_path: Path) -> None:
    import json
    import re

    new = GREETER.replace("print(f'Hello, {name}')", "shout = '--shout' in sys.argv\n    print(f'Hello, {name}'.upper() if shout else f'Hello, {name}')")
    nudges = await run_version(tmp_path, new)
    assert nudges[0].startswith("Your reply shows a new version of greeter.py")
    offered = json.loads(re.search(r"reply with only:\n(\{.*\})\n", nudges[0], re.S).group(1))
    assert offered == {"name": "write_file", "arguments": {"filepath": "greeter.py", "content": new}}
    assert (tmp_path / "greeter.py").read_text() == GREETER  # offered, never written by the harness


async def test_asked_for_a_new_file_a_version_of_the_file_read_beside_it_is_not_offered(tmp_path: Path) -> None:
    """Asked for a new tools/count_lines.py, a model showed tools/biggest_files.py (which it had
    read as a model) changed, and the block was taken over it."""
    block = GREETER.replace("Hello", "Hi there")
    nudges = await run_version(tmp_path, block, path="tools/greeter.py",
                               request="write tools/farewell.py that says goodbye to a name")
    assert not any("new version of" in n for n in nudges)
    named = await run_version(tmp_path / "b", block, path="tools/greeter.py",
                              request="write tools/farewell.py like tools/greeter.py, and make greeter.py say Hi there")
    assert not any("new version of" in n for n in named)  # kept as the model of the new file
    changed = await run_version(tmp_path / "c", block, path="tools/greeter.py",
                                request="write tools/farewell.py and make tools/greeter.py say Hi there")
    assert any("new version of tools/greeter.py" in n for n in changed)  # named as one to change


@pytest.mark.parametrize("block", [
    GREETER,  # the file as it is: nothing to write
    "def shout(text):\n    return text.upper()\n",  # not a version of the file (keeps none of it)
])
async def test_a_block_that_is_not_a_new_version_of_the_file_offers_no_write(tmp_path: Path, block: str) -> None:
    nudges = await run_version(tmp_path, block)
    assert not any("new version of" in n for n in nudges)


# ---------------------------------------------------------------- a rename left half done


async def run_rename(tmp_path: Path, edited_render: bool):  # noqa: ANN201
    (tmp_path / "settings.json").write_text('{"max_items": 4}\n')
    (tmp_path / "render.py").write_text("limit = settings['max_items']\n")
    edits = [call(("write_file", {"filepath": "settings.json", "content": '{"item_limit": 4}\n'}))]
    if edited_render:
        edits.append(call(("write_file", {"filepath": "render.py", "content": "limit = settings['item_limit']\n"})))
    replies = [call(("read_file", {"filepath": "settings.json"})), call(("read_file", {"filepath": "render.py"})),
               *edits, say("Renamed."), say("Renamed.")]
    provider = ScriptedProvider(replies)
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    await loop.run_turn(Conversation(), "rename the max_items setting to item_limit, in settings.json and the code")
    return nudges_of(provider)


# ---------------------------------------------------------------- steps telling the user to open a file


TUTORIAL = "To find it:\n1. Open the `uploader/client.py` file.\n2. Look for the retry loop.\n"


async def test_steps_telling_the_user_to_open_a_project_file_are_told_to_read_it(tmp_path: Path) -> None:
    (tmp_path / "uploader").mkdir()
    (tmp_path / "uploader" / "client.py").write_text("RETRIES = 11\n")
    (tmp_path / "uploader" / "__init__.py").write_text("from .client import RETRIES\n")
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "uploader/__init__.py"})), say(TUTORIAL), say("It retries 11 times.")],
        request="How many times does the uploader retry?", tools=file_tools(tmp_path),
    )
    first = nudges_of(provider)[0]
    assert first.startswith("Your reply tells the user to open uploader/client.py")
    assert '"name": "read_file"' not in first  # the path is the model's; the call would be ours
    assert [e.call.name for e in result.evidence] == ["read_file"]  # nothing read for it


@pytest.mark.parametrize("made_up", ["`uploader/retry.py`", "`../outside.py`"])
async def test_no_read_is_offered_for_a_file_that_is_not_in_the_project(tmp_path: Path, made_up: str) -> None:
    (tmp_path.parent / "outside.py").write_text("x\n")
    (tmp_path / "a.py").write_text("x\n")
    steps = TUTORIAL.replace("`uploader/client.py`", made_up)
    provider, _, _ = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "a.py"})), say(steps), say("11.")],
        request="How many times does the uploader retry?", tools=file_tools(tmp_path),
    )
    assert not any("tells the user to open" in n for n in nudges_of(provider))


async def test_steps_that_sum_up_a_finished_change_are_not_sent_back_to_read(tmp_path: Path) -> None:
    """count_log_errors: the count was written, then the answer listed what was done ("1.
    Read the `logs/server.log` file ..."); sending the model to read the log broke a solved task."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "server.log").write_text("ERROR a\nERROR b\n(2 entries)\n")
    summary = ("To summarize:\n1. **Read the file**: the `logs/server.log` file was read.\n"
               "2. **Write the count**: 2 went to `error_count.txt`.\n\nThere are 2 ERROR entries.")
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "logs/server.log"})),
                   call(("write_file", {"filepath": "error_count.txt", "content": "2\n"})), say(summary)],
        request="How many ERROR entries are in logs/server.log? Save the count to error_count.txt",
        tools=file_tools(tmp_path),
    )
    assert not any("tells the user to open" in n for n in nudges_of(provider))
    assert result.text == summary, nudges_of(provider)


# ---------------------------------------------------------------- the harness's note repeated back


async def test_a_reply_that_repeats_the_note_it_was_sent_is_no_answer(tmp_path: Path) -> None:
    from tether.assist.rules import ECHOED, NOT_RUN

    request = "Run report.py and tell me the grand total it prints."
    steps = "1. Open a terminal.\n2. Run:\n```sh\npython report.py\n```"
    provider, _, result = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "report.py"})), say(steps), say(NOT_RUN), say("It prints the grand total last.")],
        request=request,
    )
    assert nudges_of(provider) == [NOT_RUN, ECHOED]
    assert result.text == "It prints the grand total last."
    # at temperature 0 the note came back word for word: the reply after the echo is sampled
    from tether.engine.repeatstop import LOOP_TEMPERATURE

    assert [r.options.temperature for r in provider.requests][2:] == [None, LOOP_TEMPERATURE]


async def test_the_echo_nudge_is_sent_once_and_a_reply_quoting_nothing_is_not_an_echo(tmp_path: Path) -> None:
    from tether.assist.rules import ECHOED, NOT_RUN

    request = "Run report.py and tell me the grand total it prints."
    steps = "1. Open a terminal.\n2. Run:\n```sh\npython report.py\n```"
    provider, _, result = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "report.py"})), say(steps), say(NOT_RUN), say(NOT_RUN)],
        request=request,
    )
    assert nudges_of(provider) == [NOT_RUN, ECHOED]  # the second echo ends the turn: no loop
    assert result.text.strip() == NOT_RUN.strip()
    provider, _, _ = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "report.py"})), say(steps), say("The task is hard; I cannot run it.")],
        request=request,
    )
    assert nudges_of(provider) == [NOT_RUN]


async def test_after_a_written_out_call_an_empty_reply_or_the_command_shown_again_gets_that_call(
    tmp_path: Path,
) -> None:
    from tether.assist.rules import EMPTY_AFTER_OFFER, OFFER_AGAIN

    shown = "Run this:\n```sh\npython tools/stats.py --min 5\n```"
    again = "Use this command:\n```\npython tools/stats.py --min 5\n```"
    the_call = '{"name": "run_cmd", "arguments": {"command": "python tools/stats.py --min 5"}}'
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "notes.txt"})), say(shown), say(""), say(again), say(again)],
        request="How many long words are in notes.txt? Use tools/stats.py.", tools=[
            make_tool("read_file", lambda args, ctx: "some notes"), *write_and_run_tools()],
    )
    from tether.assist.rules import NO_NUMBER

    sent = nudges_of(provider)
    assert len(sent) == 4 and all(the_call in nudge for nudge in sent[:3])
    assert sent[1] == EMPTY_AFTER_OFFER.format(call=the_call)
    assert sent[2] == OFFER_AGAIN.format(call=the_call)
    assert sent[3] == NO_NUMBER  # the third showing gets no call again: it still answers no "how many"
    assert [e.call.name for e in result.evidence] == ["read_file"]  # offered, never run for the model


async def test_an_answer_that_says_it_ran_when_nothing_ran_is_told_to_run_it(tmp_path: Path) -> None:
    """run_report_total: the model copied the worked example's last line without running."""
    from tether.assist.rules import CLAIMED_RUN

    (tmp_path / "report.py").write_text("print('grand total: 12.50')\n")
    claim = 'Done: report.py now prints "paid orders: 10" (I ran it).'
    run = call(("run_cmd", {"command": "python report.py"}))
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "report.py"})), say(claim), run, say("It prints hello.")],
        request="Run report.py and tell me the grand total it prints.",
        tools=[make_tool("read_file", lambda args, ctx: "print('grand total: 12.50')"), *write_and_run_tools()],
    )
    nudge = nudges_of(provider)[0]
    assert nudge == CLAIMED_RUN  # no command computed from the request
    assert result.text == "It prints hello."


async def test_an_answer_to_a_run_request_before_anything_ran_is_told_to_run_it(tmp_path: Path) -> None:
    """interactive_guess: "play guess.py until you win and tell me the prize code"; the model
    read guess.py and answered with a code of its own, and again after the "apply" nudge.
    Once a turn, after that nudge."""
    from tether.assist.rules import RUN_IT, UNRUN_ANSWER

    (tmp_path / "guess.py").write_text("n = input('Your guess: ')\n")
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "guess.py"})), say("The prize code is `99-001`."),
                   say("The prize code is 99-001."), say("It is 99-001.")],
        request="play guess.py until you win and tell me the prize code it gives you",
        tools=[make_tool("read_file", lambda args, ctx: "n = input('Your guess: ')"), *write_and_run_tools()],
    )
    sent = nudges_of(provider)
    assert sent[0].startswith(RUN_IT) and '"name": "run_cmd"' not in sent[0]
    assert sent[1] == UNRUN_ANSWER
    assert "no command ran" not in " ".join(sent[2:]), "once a turn"
    assert [e.call.name for e in result.evidence] == ["read_file"], "no call is made for the model"


async def test_a_question_answered_without_running_gets_no_run_nudge(tmp_path: Path) -> None:
    (tmp_path / "guess.py").write_text("print('hi')\n")
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "guess.py"})), say("It prints hi.")],
        request="what does guess.py print?",
        tools=[make_tool("read_file", lambda args, ctx: "print('hi')"), *write_and_run_tools()],
    )
    assert not any("no command ran" in n for n in nudges_of(provider))
    assert result.text == "It prints hi."


async def test_a_reply_cut_at_a_result_marker_right_after_a_read_for_a_change_is_told_to_make_it(
    tmp_path: Path,
) -> None:
    """add_slugify, script_csv_total: right after read_file the reply began with a result, and
    after the plain note the model wrote the file it had read back unchanged. For a change
    request the note says the text is above and asks for the edit."""
    from tether.assist.rules import RESULT_FIRST_AFTER_READ

    provider = ScriptedProvider([call(("read_file", {"filepath": "a.py"})), result_marker_reply(), say("Done.")])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    loop.mode = "text"
    (tmp_path / "a.py").write_text("print('hi')\n")
    conv = Conversation()
    await loop.run_turn(conv, "add a greet(name) function to a.py")
    assert nudges_in(conv)[0] == RESULT_FIRST_AFTER_READ.format(path="a.py")


async def test_no_ran_nudge_when_a_command_did_run(tmp_path: Path) -> None:
    run = call(("run_cmd", {"command": "python report.py"}))
    provider, _, _ = await run_nudged(
        tmp_path, [run, say("I ran it: it prints hello.")],
        request="Run report.py and tell me what it prints.", tools=write_and_run_tools(),
    )
    assert not any("no command ran" in n for n in nudges_of(provider))


# ---------------------------------------------------------------- a variable's name given for its value


def ledger(root: Path) -> None:
    (root / "ledger").mkdir()
    (root / "ledger" / "server.py").write_text("cfg = settings()\nserve((cfg.host, cfg.port))\n")
    (root / "ledger" / "settings.py").write_text('port = int(env.get("LEDGER_PORT", defaults.PORT))\n')
    (root / "ledger" / "defaults.py").write_text("PORT = 7341\nHOST = 'localhost'\n")


PORT_QUESTION = "which port does the ledger service listen on by default?"


# ---------------------------------------------------------------- a reply that began with a tool result


def result_marker_reply() -> list:
    """What the server sends when the model's reply began "[Tool Result for '": the stop at
    the marker keeps none of it, but the tokens were produced."""
    from tether.core.messages import Done, Usage

    return [Done(Usage(900, 5), "end_turn")]


def nudges_in(conv: Conversation) -> list[str]:
    """The nudges of a text-mode turn (the requests merge them with the tool results)."""
    return [m.text for m in conv.messages[1:] if m.role == "user" and not m.tool_results]


async def test_a_reply_cut_to_nothing_at_a_result_marker_is_told_so_and_asked_again_warmer(tmp_path: Path) -> None:
    from tether.assist.rules import RESULT_FIRST_NEXT
    from tether.engine.repeatstop import LOOP_TEMPERATURE

    provider = ScriptedProvider([call(("read_file", {"filepath": "a.py"})), result_marker_reply(), say("It prints hi.")])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    loop.mode = "text"
    (tmp_path / "a.py").write_text("print('hi')\n")
    conv = Conversation()
    result = await loop.run_turn(conv, "what does a.py print?")
    assert nudges_in(conv) == [RESULT_FIRST_NEXT]
    assert provider.requests[1].options.temperature in (None, 0.0)
    assert provider.requests[2].options.temperature == LOOP_TEMPERATURE  # off the knife edge
    assert result.text == "It prints hi."


async def test_the_reply_after_a_call_it_could_not_write_is_sampled_warmer(tmp_path: Path) -> None:
    """A 1.5B model, told its edit_file call was cut off, sent the same broken call word for
    word three times at temperature 0 (a minute each), and the turn stopped."""
    from tether.engine.repeatstop import LOOP_TEMPERATURE

    broken = say('<tool_call>{"name": "read_file", "arguments": {"filepath": "a.py", "limit": 1')
    provider = ScriptedProvider([broken, say("It sets x.")])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    loop.mode = "text"
    await loop.run_turn(Conversation(), "what does a.py set?")
    assert provider.requests[0].options.temperature in (None, 0.0)
    assert provider.requests[1].options.temperature == LOOP_TEMPERATURE


def test_only_a_few_tokens_make_an_empty_reply_one_that_began_with_a_result() -> None:
    from tether.core.messages import Usage
    from tether.engine.loop import MARKER_TOKENS_AT_MOST, Reply

    def empty(tokens: int, markers: bool = True) -> Reply:
        return Reply(usage=Usage(900, tokens), stops_at_markers=markers)

    assert empty(5).result_first
    assert not empty(0).result_first  # nothing produced: a plain empty reply
    assert not empty(MARKER_TOKENS_AT_MOST + 1).result_first  # hidden reasoning, not a marker
    assert not empty(5, markers=False).result_first  # no stop was asked for (native tools)
    assert not Reply(chunks=["It prints hi."], usage=Usage(900, 5), stops_at_markers=True).result_first


async def test_an_empty_reply_after_the_empty_note_gets_what_is_left_to_do(tmp_path: Path) -> None:
    """add_slugify: the empty note was spent after the first read; the model wrote a test
    file, then replied empty, and the turn ended with the new code never run."""
    from tether.assist.rules import EMPTY_REPLY, UNCHECKED

    provider, _, result = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "a.py"})), say(""),
         call(("write_file", {"filepath": "test_a.py", "content": "def test(): pass\n"})), say(""), say("")],
        request="add a test for a.py", tools=file_tools(tmp_path),
    )
    (tmp_path / "a.py").write_text("x = 1\n")
    assert nudges_of(provider) == [EMPTY_REPLY, UNCHECKED.format(path="test_a.py")]
    assert result.text == ""  # nothing left to nudge: the turn ends


# ---------------------------------------------------------------- a function fixed in prose


CORE = (
    "def mean(values):\n    return sum(values) / len(values)\n\n\n"
    "def median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n\n\n"
    "def spread(values):\n    return max(values) - min(values)\n"
)
FIXED_MEDIAN = (
    "def median(lst):\n    s = sorted(lst)\n    n = len(s)\n    if n % 2 == 1:\n        return s[n // 2]\n"
    "    return (s[n // 2 - 1] + s[n // 2]) / 2"
)


def stats_project(root: Path) -> None:
    (root / "stats").mkdir()
    (root / "stats" / "core.py").write_text(CORE)
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(
        "from stats.core import median\n\n\ndef median_of_two():\n    return median([1, 2])\n\n\n"
        "def test_median_even():\n    assert median([4, 1, 3, 2]) == 2.5\n")


# ---------------------------------------------------------------- a new file shown, not created

TOTAL_SCRIPT = "import csv, sys\n\nrows = csv.DictReader(open(sys.argv[1]))\nprint(sum(float(r[sys.argv[2]]) for r in rows))\n"
CSV_REQUEST = "write a script total.py that prints the sum of one column of a CSV file, used like: python total.py FILE COLUMN"


async def test_the_code_of_the_new_file_the_request_names_gets_its_write_call(tmp_path: Path) -> None:
    """script_csv_total: the model showed total.py in a python fence and stopped."""
    from tether.assist.shown_code import NEW_FILE_SHOWN

    (tmp_path / "sales.csv").write_text("amount\n1.5\n")
    shown = f"Here's the script:\n\n```python\n{TOTAL_SCRIPT}```\n\nRun it with:\n```sh\npython total.py sales.csv amount\n```"
    tools = [t for t in FILE_TOOLS if t.name in ("read_file", "write_file")]
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "sales.csv"})), say(shown),
                   call(("write_file", {"filepath": "total.py", "content": TOTAL_SCRIPT})), say("Written.")],
        request=CSV_REQUEST, tools=[*tools, *write_and_run_tools()[1:]],
    )
    nudge = nudges_of(provider)[0]
    assert nudge.startswith(NEW_FILE_SHOWN.split("{")[0] + "total.py but did not create it")
    assert json.loads(nudge.rsplit("\n", 1)[1])["arguments"] == {"filepath": "total.py", "content": TOTAL_SCRIPT}
    assert (tmp_path / "total.py").read_text() == TOTAL_SCRIPT


EDIT_MENU = ("read_file", "write_file", "edit_file", "run_cmd")


@pytest.mark.parametrize(("request_text", "reply", "why"), [
    (CSV_REQUEST, f"```python\n{TOTAL_SCRIPT}```\n```python\nprint(1)\n```", "two python fences: which is it"),
    ("write the count to count.txt", "```\n12\n```", "a text file: a fence may hold a made-up count"),
    ("write a script total.py and another.py", f"```python\n{TOTAL_SCRIPT}```", "two files named"),
    (CSV_REQUEST, f"```js\n{TOTAL_SCRIPT}```", "a fence in another language"),
])
def test_no_new_file_is_offered_when_the_file_or_its_code_is_unclear(
    tmp_path: Path, request_text: str, reply: str, why: str,
) -> None:
    assert shown_new_file(reply, new_file_of(request_text, tmp_path)) is None, why


def new_file_of(request_text: str, root: Path) -> str | None:
    from tether.assist.request import new_code_file, read_request

    return new_code_file(read_request(request_text, [p.name for p in root.iterdir()]), root)


def test_a_file_that_exists_is_no_new_file(tmp_path: Path) -> None:
    code = f"```python\n{TOTAL_SCRIPT}```"
    assert shown_new_file(code, new_file_of(CSV_REQUEST, tmp_path)) == ("total.py", TOTAL_SCRIPT)
    (tmp_path / "total.py").write_text("print(0)\n")
    assert shown_new_file(code, new_file_of(CSV_REQUEST, tmp_path)) is None


def policy_file(args, ctx):  # noqa: ANN001
    return "23| \"\"\"How hard it tries.\"\"\"\n24| \n25| MAX_DOWNLOAD_RETRIES = 4\n26| MAX_UPLOAD_RETRIES = 11"


@pytest.mark.parametrize(("answer", "nudged"), [
    ("25", True),  # ask_retry_limit: the line number of MAX_DOWNLOAD_RETRIES, given as the count
    ("11", False),
    ("Line 25.", False),  # an answer about lines may give a line number
])
async def test_a_number_seen_only_as_a_line_number_is_not_seen(tmp_path: Path, answer: str, nudged: bool) -> None:
    from tether.assist.rules import UNSEEN_NUMBER

    provider, _, _ = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "uploader/policy.py"})), say(answer), say(answer)],
        request="How many times does the uploader retry a failed upload?", tools=[make_tool("read_file", policy_file)],
    )
    sent = [n for n in nudges_of(provider) if "no tool result showed" in n]  # steps get NO_NUMBER
    assert len(sent) == nudged and all(n.startswith(UNSEEN_NUMBER.format(number="25")) for n in sent)


# ---------------------------------------------------------------- a folder's count taken from one file

TODO_REQUEST = "count the lines that contain TODO in the python files under src/ and write just the number to todo_count.txt"


def todo_project(root: Path) -> None:
    (root / "src" / "app").mkdir(parents=True)
    (root / "src" / "app" / "orders.py").write_text("# TODO: paginate\n# TODO: filter\n")
    (root / "src" / "lib.py").write_text("x = 1  # TODO: name\n")
    (root / "docs").mkdir()
    (root / "docs" / "notes.md").write_text("- TODO: guide\n")


# ---------------------------------------------------------------- an edit that copies the file into both halves


async def test_an_edit_whose_two_halves_are_the_same_is_refused_with_the_request_repeated(tmp_path: Path) -> None:
    """script_csv_total, fix_pagination: right after read_file the model sent the file it had
    read as both old_content and new_content."""
    from tether.assist.call_guard import SAME_EDIT

    (tmp_path / "a.py").write_text("x = 1\n")
    same = call(("edit_file", {"filepath": "a.py", "old_content": "x = 1\n", "new_content": "x = 1\n"}))
    spacing = call(("edit_file", {"filepath": "a.py", "old_content": "x = 1", "new_content": "x  =  1"}))
    tools = [t for t in FILE_TOOLS if t.name in ("read_file", "edit_file")]
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "a.py"})), same, spacing, say("Done.")],
        request="set x to 2 in a.py", tools=[*tools, *write_and_run_tools()[1:]],
        menu_names=("read_file", "edit_file", "run_cmd"),
    )
    refused = result.evidence[1]
    assert refused.error and refused.result == SAME_EDIT.format(path="a.py", request="set x to 2 in a.py")
    assert not result.evidence[2].error, "a change of spacing alone is an edit"
    assert (tmp_path / "a.py").read_text() == "x  =  1\n"


# ---------------------------------------------------------------- a write of a file's text as it was read


async def run_reads_and_writes(tmp_path: Path, replies: list, request: str):  # noqa: ANN201
    """A small-profile turn with read_file, write_file and a run_cmd that is never called."""
    tools = [t for t in FILE_TOOLS if t.name in ("read_file", "write_file")]
    _, _, result = await run_nudged(tmp_path, replies, request=request, tools=[*tools, *write_and_run_tools()[1:]],
                                    menu_names=("read_file", "write_file", "run_cmd"))
    return result


async def test_a_write_of_the_text_the_file_already_holds_waits_once_with_the_request(tmp_path: Path) -> None:
    """Seen on a module to add a function to, one to take code out of and a JSON file: right
    after reading it, the model wrote the file back as it was, and "wrote it" read as the change
    made. Line-end spaces and the final newline do not make it a change."""
    from tether.assist.call_guard import SAME_WRITE

    (tmp_path / "a.py").write_text("def f():\n    pass\n")
    same = call(("write_file", {"filepath": "a.py", "content": "def f():  \n    pass"}))
    result = await run_reads_and_writes(
        tmp_path, [call(("read_file", {"filepath": "a.py"})), same, same, say("Done.")], "make f return 1 in a.py")
    waited = result.evidence[1]
    assert waited.error and waited.result == SAME_WRITE.format(path="a.py", request="make f return 1 in a.py")
    assert not result.evidence[2].error, "asked once: the same write sent again runs"
    assert (tmp_path / "a.py").read_text() == "def f():  \n    pass"


async def test_a_new_file_that_copies_a_file_read_waits_once_and_a_real_new_file_does_not(tmp_path: Path) -> None:
    """Asked for a new script like one the project has, the model wrote the one it read,
    word for word, under the new name."""
    from tether.assist.call_guard import COPIED_WRITE

    model = "import sys\n\nfor arg in sys.argv[1:]:\n    print(float(arg) * 2)\n"
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "double.py").write_text(model)
    request = "add scripts/half.py like scripts/double.py: it prints each argument halved"
    copy = call(("write_file", {"filepath": "scripts/half.py", "content": model}))
    own = call(("write_file", {"filepath": "scripts/half.py", "content": model.replace("* 2", "/ 2")}))
    result = await run_reads_and_writes(
        tmp_path, [call(("read_file", {"filepath": "scripts/double.py"})), copy, own, say("Added.")], request)
    waited = result.evidence[1]
    assert waited.error and waited.result == COPIED_WRITE.format(
        source="scripts/double.py", path="scripts/half.py", request=request)
    assert not result.evidence[2].error
    assert (tmp_path / "scripts" / "half.py").read_text() == model.replace("* 2", "/ 2")


async def test_a_module_written_over_its_test_file_waits_once(tmp_path: Path) -> None:
    """Asked for a module's test, the model wrote the module's text into the test file."""
    from tether.assist.call_guard import COPIED_WRITE

    module = "def slug(text):\n    return text.lower()\n"
    (tmp_path / "strings.py").write_text(module)
    (tmp_path / "test_strings.py").write_text("from strings import slug\n")
    request = "add a test of slug() to test_strings.py"
    over = call(("write_file", {"filepath": "test_strings.py", "content": module}))
    result = await run_reads_and_writes(
        tmp_path, [call(("read_file", {"filepath": "strings.py"})), call(("read_file", {"filepath": "test_strings.py"})),
                   over, say("Added.")], request)
    assert result.evidence[2].error and result.evidence[2].result == COPIED_WRITE.format(
        source="strings.py", path="test_strings.py", request=request)
    assert (tmp_path / "test_strings.py").read_text() == "from strings import slug\n"


async def test_a_copy_the_request_asks_for_runs_when_sent_again(tmp_path: Path) -> None:
    (tmp_path / "config.example.ini").write_text("[db]\nhost = localhost\n")
    copy = call(("write_file", {"filepath": "config.ini", "content": "[db]\nhost = localhost\n"}))
    result = await run_reads_and_writes(
        tmp_path, [call(("read_file", {"filepath": "config.example.ini"})), copy, copy, say("Copied.")],
        "copy config.example.ini to config.ini")
    assert result.evidence[1].error and not result.evidence[2].error
    assert (tmp_path / "config.ini").read_text() == "[db]\nhost = localhost\n"


# ---------------------------------------------------------------- a function added in place of another


STRINGS = "def title_case(text):\n    return text.title()\n\n\ndef truncate(text, width):\n    return text[:width]\n"
SLUGIFY = "def slugify(text):\n    return text.lower()\n"


async def test_an_edit_that_puts_the_new_function_in_place_of_an_old_one_waits_once(
    tmp_path: Path,
) -> None:
    """add_slugify: asked to add slugify(), the model replaced title_case() with it."""
    from tether.assist.call_guard import DROPPED_DEFINITIONS

    (tmp_path / "strings.py").write_text(STRINGS)
    old = "def title_case(text):\n    return text.title()\n"
    both = {"filepath": "strings.py", "old_content": old, "new_content": old.rstrip("\n") + "\n\n\n" + SLUGIFY}
    tools = [t for t in FILE_TOOLS if t.name in ("read_file", "edit_file")]
    provider, _, result = await run_nudged(
        tmp_path, [call(("edit_file", {"filepath": "strings.py", "old_content": old, "new_content": SLUGIFY})),
                   call(("edit_file", both)), say("Added.")],
        request="add a slugify(text) function to strings.py", tools=[*tools, *write_and_run_tools()[1:]],
        menu_names=("read_file", "edit_file", "run_cmd"),
    )
    refused = result.evidence[0]
    assert refused.error and refused.result.startswith(DROPPED_DEFINITIONS.split("{")[0] + "title_case() from strings.py")
    assert '"name": "edit_file"' not in refused.result  # no merged edit computed for the model
    text = (tmp_path / "strings.py").read_text()
    assert "def title_case" in text and "def slugify" in text and "def truncate" in text


@pytest.mark.parametrize(("request_text", "new"), [
    ("replace title_case with slugify in strings.py", SLUGIFY),  # asked to replace
    ("add a docstring to title_case", 'def title_case(text):\n    """Title."""\n    return text.title()\n'),  # kept
    ("make title_case faster", SLUGIFY),  # no add
])
async def test_an_edit_that_drops_a_definition_runs_when_the_request_allows_it(
    tmp_path: Path, request_text: str, new: str,
) -> None:
    (tmp_path / "strings.py").write_text(STRINGS)
    old = "def title_case(text):\n    return text.title()\n"
    tools = [t for t in FILE_TOOLS if t.name in ("read_file", "edit_file")]
    _, _, result = await run_nudged(
        tmp_path, [call(("edit_file", {"filepath": "strings.py", "old_content": old, "new_content": new})), say("Done.")],
        request=request_text, tools=[*tools, *write_and_run_tools()[1:]], menu_names=("read_file", "edit_file", "run_cmd"),
    )
    assert not result.evidence[0].error


# ---------------------------------------------------------------- a question about a number answered without one


@pytest.mark.parametrize(("answer", "nudged"), [
    ("The correct command should be `python tools/textstats.py --min-length 5 notes.txt`.", True),  # run_textstats
    ("1. **Locate** the function that counts.\n2. **Identify** the count it gives.", True),
    ("There are 12 of them.", False),
    ("There are twelve of them.", False),
    ("There are none.", False),
])
async def test_a_question_asking_how_many_answered_without_a_number_is_nudged_once(
    tmp_path: Path, answer: str, nudged: bool,
) -> None:
    from tether.assist.rules import NO_NUMBER

    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "notes.txt"})), say(answer), say(answer)],
        request="Using tools/textstats.py, how many unique words of 5 or more letters are in the notes?",
        tools=[make_tool("read_file", lambda args, ctx: "twelve words here, 12 of them long")],
    )
    assert (NO_NUMBER in nudges_of(provider)) is nudged
    assert result.text == answer


# ---------------------------------------------------------------- the same unseen number after more calls

CLIENT_READ = (
    "14|     for attempt in range(policy.MAX_UPLOAD_RETRIES + 1):\n"
    "[values this file reads from other files:\n"
    "  policy.MAX_UPLOAD_RETRIES = 11  (uploader/policy.py line 4)\n"
    "  policy.MAX_DOWNLOAD_RETRIES = 4  (uploader/policy.py line 3)]"
)


# ---------------------------------------------------------------- a program to run, changed instead


async def test_a_request_to_run_a_program_holds_back_a_change_once(tmp_path: Path) -> None:
    """interactive_signup: asked to run signup.py and register Ada, the model edited and then
    rewrote signup.py (the nudges offered the rewrite) and never answered the program."""
    from tether.assist.call_guard import RUN_NOT_CHANGE

    program = "name = input('Your name: ')\nprint('Ticket T-1 for', name)\n"
    (tmp_path / "signup.py").write_text(program)
    edit = {"filepath": "signup.py", "old_content": "Ticket T-1", "new_content": "Ticket T-2"}
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "signup.py"})), call(("edit_file", edit)),
                   call(("write_file", {"filepath": "signup.py", "content": "print('x')\n"})),
                   call(("write_file", {"filepath": "notes.txt", "content": "Ada, blue\n"})), say("Done.")],
        request="Run signup.py and register Ada on the blue team. What ticket number did it give?",
        tools=[*(t for t in FILE_TOOLS if t.name in ("read_file", "edit_file", "write_file")),
               *write_and_run_tools()[1:]],
        menu_names=("read_file", "edit_file", "write_file", "run_cmd"),
    )
    refused = [e for e in result.evidence if e.error]
    assert [e.call.name for e in refused] == ["edit_file"]  # held back once; the model decides after
    assert refused[0].result == RUN_NOT_CHANGE.format(path="signup.py")
    assert '"name": "run_cmd"' not in refused[0].result
    assert (tmp_path / "signup.py").read_text() == "print('x')\n"  # the second change ran
    assert (tmp_path / "notes.txt").exists()  # a new file is no change to the program


async def test_a_request_to_run_and_debug_holds_back_one_change_only(tmp_path: Path) -> None:
    """"start server.py and debug why it crashes": fixing db.py is the task. The guard reads
    the request's English, so it may hold a change back once, never every change of the turn."""
    from tether.assist.call_guard import RUN_NOT_CHANGE

    (tmp_path / "server.py").write_text("import db\ndb.connect()\n")
    (tmp_path / "db.py").write_text("def connect():\n    raise RuntimeError('no port')\n")
    fix = {"filepath": "db.py", "old_content": "raise RuntimeError('no port')", "new_content": "return None"}
    tidy = {"filepath": "db.py", "old_content": "return None", "new_content": "return 'ok'"}
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "db.py"})), call(("edit_file", fix)), call(("edit_file", fix)),
                   call(("edit_file", tidy)), say("db.connect raised; it now returns.")],
        request="start server.py and debug why it crashes",
        tools=[*(t for t in FILE_TOOLS if t.name in ("read_file", "edit_file")), *write_and_run_tools()[1:]],
        menu_names=("read_file", "edit_file", "run_cmd"),
    )
    refused = [e for e in result.evidence if e.error]
    assert [e.result[:40] for e in refused] == [RUN_NOT_CHANGE[:40]]
    assert "return 'ok'" in (tmp_path / "db.py").read_text()


async def test_a_request_with_a_run_word_but_no_script_to_run_may_change_files(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"plugins": []}\n')
    edit = {"filepath": "config.json", "old_content": '"plugins": []', "new_content": '"plugins": ["lint"]'}
    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "config.json"})), call(("edit_file", edit)), say("Registered.")],
        request="Register the lint plugin in config.json",
        tools=[*(t for t in FILE_TOOLS if t.name in ("read_file", "edit_file")), *write_and_run_tools()[1:]],
        menu_names=("read_file", "edit_file", "run_cmd"),
    )
    assert not any(e.error for e in result.evidence)
    assert (tmp_path / "config.json").read_text() == '{"plugins": ["lint"]}\n'


# ---------------------------------------------------------------- a call written out at the end of a message


def test_the_cue_follows_only_a_call_that_ends_the_last_message() -> None:
    from tether.assist.coach import SEND_CUE, with_send_cue
    from tether.core.messages import Message

    call_text = json.dumps({"name": "edit_file", "arguments": {"filepath": "x.py"}})
    ending = [Message.system("s"), Message.user(f"note:\n{call_text}\n")]
    assert with_send_cue(ending, call_text)[-1].text == f"note:\n{call_text}\n{SEND_CUE}"
    going_on = [Message.user(f"note:\n{call_text}\nThen answer.")]
    assert with_send_cue(going_on, call_text) == going_on
    from tether.engine.loop import pressure_note

    noted = [Message.user(f"note:\n{call_text}\n\n{pressure_note(14, 18)}")]
    assert with_send_cue(noted, call_text)[-1].text.startswith(f"note:\n{call_text}\n{SEND_CUE}\n\n(Note: 14 of 18")
    assert with_send_cue(ending, "") == ending  # the model has called since: nothing is offered


# ---------------------------------------------------------------- a file the request names, left unchanged


SLUG_REQUEST = ("add a slugify(text) function to textkit/strings.py - lowercase - and a test for it in "
                "tests/test_strings.py")


async def test_a_change_request_answered_with_a_named_file_unchanged_is_told_which(tmp_path: Path) -> None:
    """add_slugify (s9-f): slugify added to strings.py, then a summary; the test file the
    request names was never touched."""
    from tether.assist.named_files import NAMED_UNCHANGED

    (tmp_path / "textkit").mkdir()
    (tmp_path / "textkit" / "strings.py").write_text("def title_case(t):\n    return t.title()\n")
    write = call(("write_file", {"filepath": "textkit/strings.py",
                                 "content": "def title_case(t):\n    return t.title()\n\n\ndef slugify(t):\n    return t\n"}))
    provider, _, _ = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "textkit/strings.py"})), write,
                   say("I added slugify to textkit/strings.py."), say("Done."), say("Done.")],
        request=SLUG_REQUEST, tools=file_tools(tmp_path),
    )
    assert NAMED_UNCHANGED.format(paths="tests/test_strings.py") in nudges_of(provider)


@pytest.mark.parametrize(("request_text", "why"), [
    ("tests/test_core.py is failing. Fix the code so it passes, without changing the test.", "a test to run"),
    ("How many ERROR entries are in logs/server.log? Save the count to error_count.txt", "an input, and a question"),
    ("Run signup.py and register Ada on the blue team.", "a program to run"),
    ("add slugify to textkit/strings.py", "every named file changed"),
])
async def test_no_named_file_nudge_for_inputs_tests_kept_or_runs(tmp_path: Path, request_text: str, why: str) -> None:
    (tmp_path / "textkit").mkdir()
    write = call(("write_file", {"filepath": "textkit/strings.py", "content": "def slugify(t):\n    return t\n"}))
    provider, _, _ = await run_nudged(tmp_path, [write, say("Done."), say("Done."), say("Done.")],
                                      request=request_text, tools=file_tools(tmp_path))
    assert not any("The request also names" in n for n in nudges_of(provider)), why


async def test_a_file_the_turn_wrote_is_no_unread_file_to_overwrite(tmp_path: Path) -> None:
    """count_todos (s9-f): the count written, the same write sent again was refused as a write
    over a file never read, and the model, sent on, changed the right 9 to 10."""
    write = call(("write_file", {"filepath": "todo_count.txt", "content": "9\n"}))
    tools = [*(t for t in FILE_TOOLS if t.name in ("read_file", "write_file")),
             make_tool("search_in_file", lambda a, c: "src/a.py:1: # TODO\n(9 matching lines in 6 files)")]
    provider, _, result = await run_nudged(
        tmp_path, [call(("search_in_file", {"filepath": "src"})), write, write,
                   say("9 TODO lines; todo_count.txt says 9.")],
        request="count the TODO lines and write just the number to todo_count.txt", tools=tools,
    )
    assert [e.error for e in result.evidence] == [False, False, False], [e.result for e in result.evidence]
    assert result.evidence[2].result.startswith("Unchanged: todo_count.txt already held exactly this content")
    assert (tmp_path / "todo_count.txt").read_text() == "9\n"


# ---------------------------------------------------------------- a version offered must run; a warned change is no summary


async def test_a_version_that_drops_an_import_it_still_uses_is_not_offered(tmp_path: Path) -> None:
    """multi_rename_setting (s9-f): the version of feed/render.py shown in prose kept `ROOT`
    and dropped its import; offered and sent, it broke the program."""
    (tmp_path / "feed").mkdir()
    render = ("from .settings import ROOT\n\n\ndef render(settings):\n"
              "    items = (ROOT / settings['source']).read_text().splitlines()\n"
              "    return items[: settings.get('max_items', 10)]\n")
    (tmp_path / "feed" / "render.py").write_text(render)
    broken = render.replace("from .settings import ROOT\n", "from .settings import settings\n").replace(
        "max_items", "item_limit")
    kept = render.replace("max_items", "item_limit")
    tools = [t for t in FILE_TOOLS if t.name in ("read_file", "write_file")]
    for version, offered in ((broken, False), (kept, True)):
        provider, _, _ = await run_nudged(
            tmp_path, [call(("read_file", {"filepath": "feed/render.py"})), say(f"```python\n{version}```"),
                       say("Done.")],
            request="rename the max_items setting to item_limit in feed/render.py", tools=tools,
        )
        assert any("new version of feed/render.py" in n for n in nudges_of(provider)) == offered


async def test_an_empty_reply_after_a_change_whose_result_warns_is_told_to_fix_it(tmp_path: Path) -> None:
    from tether.assist.rules import CHANGE_WARNED

    (tmp_path / "feed").mkdir()
    (tmp_path / "feed" / "__init__.py").write_text("")
    (tmp_path / "feed" / "settings.py").write_text("ROOT = '.'\n")
    write = call(("write_file", {"filepath": "feed/render.py", "content": "from .settings import settings\n"}))
    tools = [t for t in FILE_TOOLS if t.name in ("read_file", "write_file")]
    provider, _, _ = await run_nudged(tmp_path, [write, say(""), say("Done.")],
                                      request="make feed/render.py read the settings", tools=tools)
    assert nudges_of(provider)[0] == "Your reply was empty. " + CHANGE_WARNED.format(path="feed/render.py")


# ---------------------------------------------------------------- a number worked out from what was seen


def ttl_read(args, ctx):  # noqa: ANN001
    return "1| CACHE_TTL_SECONDS = 7200\n2| MAX_ENTRIES = 4096\n3| FAILED = 3\n4| TOTAL = 12"


@pytest.mark.parametrize(("answer", "nudged"), [
    ("It is 2 hours.", False),  # 7200 seconds
    ("Entries live for 120 minutes.", False),
    ("Entries live 0.08 days.", False),  # rounded as the answer rounds it
    ("25% of the runs failed.", False),  # 3 of 12
    ("It holds 4 KiB of entries.", False),  # 4096 / 1024
    ("It is 2.5 hours.", True),  # no conversion of a seen number gives this
    ("It is 9000 seconds.", True),
])
async def test_a_number_converted_from_a_seen_one_is_not_called_unseen(
        tmp_path: Path, answer: str, nudged: bool) -> None:
    from tether.assist.rules import UNSEEN_NUMBER

    provider, _, _ = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "cache.py"})), say(answer), say(answer)],
        request="How long does the cache keep an entry?", tools=[make_tool("read_file", ttl_read)],
    )
    assert [n.startswith(UNSEEN_NUMBER.split("{")[0]) for n in nudges_of(provider)] == ([True] if nudged else [])


async def test_a_bare_file_name_the_turn_created_in_a_folder_counts_as_changed(tmp_path: Path) -> None:
    """A request naming `c2f.py` "next to the other scripts" is met by scripts/c2f.py: the model
    was told the request also named c2f.py, which it had just created."""
    (tmp_path / "scripts").mkdir()
    write = call(("write_file", {"filepath": "scripts/c2f.py", "content": "import sys\nprint(sys.argv)\n"}))
    provider, _, _ = await run_nudged(
        tmp_path, [write, say("Added scripts/c2f.py."), say("Done."), say("Done.")],
        request="Add a c2f.py next to the other helper scripts that prints its arguments.",
        tools=file_tools(tmp_path))
    assert not any("The request also names" in n for n in nudges_of(provider))


def empty_reply() -> list:
    """A reply with nothing in it: the model ended its turn at once (one token)."""
    from tether.core.messages import Done, Usage

    return [Done(Usage(900, 1), "end_turn")]


async def test_an_empty_reply_is_drawn_again_once_from_the_same_request_with_a_cue(tmp_path: Path) -> None:
    """One request in seven of a 1.5B model's after a tool result came back empty at
    temperature 0; the note that said so was echoed or drew another empty reply. With
    `redraw_empty`, the same request is sent again once with a cue at its end (at the same
    temperature: sampling drew nothing again seven times in ten), and nothing about the empty
    reply, nor the cue, enters the history."""
    from tether.engine.loop import REDRAW_CUE

    (tmp_path / "a.py").write_text("x = 1\n")
    provider = ScriptedProvider([call(("read_file", {"filepath": "a.py"})), empty_reply(), say("x is 1 in a.py.")])
    loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
    loop.mode = "text"
    loop.settings.redraw_empty = True
    conv = Conversation()
    result = await loop.run_turn(conv, "what is x in a.py?")
    assert result.text == "x is 1 in a.py."
    first, empty, again = provider.requests
    assert empty.options.temperature == again.options.temperature
    assert again.messages[:-1] == empty.messages[:-1]  # the same request, drawn again
    assert again.messages[-1].text == empty.messages[-1].text + "\n\n" + REDRAW_CUE
    assert nudges_in(conv) == [] and result.requests == 3
    assert REDRAW_CUE not in str([m.text for m in conv.messages])


async def test_a_reply_empty_twice_gets_the_rule_and_without_redraw_the_rule_at_once(tmp_path: Path) -> None:
    from tether.assist.rules import EMPTY_REPLY

    (tmp_path / "a.py").write_text("x = 1\n")
    for redraw, replies, nudged_at in ((True, 2, 3), (False, 1, 2)):
        script = [call(("read_file", {"filepath": "a.py"})), *[empty_reply()] * replies, say("x is 1 in a.py.")]
        provider = ScriptedProvider(script)
        loop, _ = menu_loop(provider, tmp_path, tools=file_tools(tmp_path), nudges=True)
        loop.mode = "text"
        loop.settings.redraw_empty = redraw
        result = await loop.run_turn(Conversation(), "what is x in a.py?")
        assert result.text == "x is 1 in a.py."
        assert len(provider.requests) == nudged_at + 1
        assert provider.requests[nudged_at].messages[-1].text.startswith(EMPTY_REPLY.split(".")[0])
