"""The small-model profile: selection, the deferred-tool menu, one edit mode, the project map,
nudges (sent once, never a call invented) and the wiring into the runtime and the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from pydantic import BaseModel
from scripted import ScriptedProvider, TextArgs, call, make_tool, say
from test_cli import run_cli

from tether.assist.rules import (
    AFTER_FAILURE,
    EMPTY_REPLY,
    LOOK_FIRST,
    NOT_APPLIED,
    REPEATED_FAILURE,
)
from tether.assist.turn import Assist
from tether.core.messages import ToolCall
from tether.core.profile import (
    SMALL,
    billions_in_name,
    billions_stated,
    choose_profile,
    profile_named,
)
from tether.core.toolspec import ToolContext, ToolError, ToolTable
from tether.core.ui_protocol import Decision, SilentUI
from tether.engine import projectmap
from tether.engine.dispatch import Dispatcher
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.engine.projectmap import project_map
from tether.engine.toolmenu import TOOL_SEARCH, ToolMenu, tool_search_tool
from tether.runtime import RunOptions, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI

# ---------------------------------------------------------------- selection


@pytest.mark.parametrize(
    ("name", "billions"),
    [
        ("qwen2.5-coder:1.5b", 1.5),
        ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1.5),
        ("llama3.2:3b", 3.0),
        ("qwen2.5:7b-instruct", 7.0),
        ("gemma3n:e4b", 4.0),
        ("gemma3:270m", 0.27),
        ("mixtral:8x7b", 56.0),
        ("llama3.1:70b", 70.0),
        ("gpt-4o-mini", None),
        ("claude-sonnet-4", None),
        ("fake", None),
    ],
)
def test_size_in_a_model_name(name: str, billions: float | None) -> None:
    assert billions_in_name(name) == pytest.approx(billions) if billions else billions_in_name(name) is None


@pytest.mark.parametrize(
    ("stated", "billions"), [("1.5B", 1.5), ("494.03M", 0.49403), ("8.0B", 8.0), ("big", None), (None, None)]
)
def test_size_ollama_states(stated: object, billions: float | None) -> None:
    assert billions_stated(stated) == (pytest.approx(billions) if billions else None)


@pytest.mark.parametrize(
    ("setting", "model", "stated", "expected"),
    [
        ("auto", "phi3:mini", 3.8, ("small", "phi3:mini, 3.8B parameters (from the server)")),
        ("auto", "mystery", 9.2, ("full", "mystery, 9.2B parameters (from the server)")),
        ("auto", "llama3.1:70b", None, ("full", "llama3.1:70b, 70B parameters (from its name)")),
        ("auto", "qwen2.5-coder-1.5b", 70.0, ("small", "qwen2.5-coder-1.5b, 1.5B parameters (from its name)")),
        ("auto", "gemma3:270m", None, ("small", "gemma3:270m, 270M parameters (from its name)")),
        ("auto", "local-model", None, ("full", "local-model, size unknown")),  # local or not: unknown is full
        ("auto", "gpt-4o", None, ("full", "gpt-4o, size unknown")),
        ("auto", "llama-3.1-8b-instant", None, ("small", "llama-3.1-8b-instant, 8B parameters (from its name)")),
        ("full", "qwen2.5-coder-1.5b", None, ("full", "")),
        ("small", "claude-sonnet-4", None, ("small", "")),
    ],
)
def test_profile_choice(setting: str, model: str, stated: float | None, expected: tuple[str, str]) -> None:
    choice = choose_profile(setting, model, stated)
    assert (choice.name, choice.reason) == expected


async def _auto_choice(tmp_path: Path, home: Path, provider: str, url_setting: str, url: str, model: str):  # noqa: ANN202
    loaded, _ = load_settings({"provider": provider, "model": model, url_setting: url}, {}, home)
    runtime = build_runtime(loaded, RunOptions(root=tmp_path, home=home), HeadlessUI(), {})
    try:
        runtime.apply_profile(await runtime.resolve_profile())
    finally:
        await runtime.aclose()
    return runtime.profile.name, runtime.profile_shown()


async def test_a_large_model_on_a_local_openai_server_gets_the_full_profile(tmp_path: Path, home: Path) -> None:
    """gpt-4o behind a local OpenAI-compatible proxy got the small profile (nudges, re-asked
    answers) only because the server was local; a name without a size asks the server."""
    with FakeServer(models=["gpt-4o"]) as server:
        shown = await _auto_choice(tmp_path, home, "openai", "openai_base_url", server.url + "/v1", "gpt-4o")
        asked = [path for path, _ in server.requests]
    assert shown == ("full", "full profile: gpt-4o, size unknown, model table: gpt-4o (built-in)")
    assert asked == ["/v1/models"]


async def test_llama_cpp_states_the_parameter_count_of_a_model_without_a_size_in_its_name(
        tmp_path: Path, home: Path) -> None:
    with FakeServer(models=["model.gguf"]) as server:
        server.parameter_count = 1_543_714_304
        shown = await _auto_choice(tmp_path, home, "openai", "openai_base_url", server.url + "/v1", "model.gguf")
    assert shown == ("small", "small profile: model.gguf, 1.5B parameters (from the server)")


async def test_a_size_in_the_name_decides_without_asking_the_server(tmp_path: Path, home: Path) -> None:
    with FakeServer(models=["qwen2.5-coder:1.5b"]) as server:
        server.parameter_count = 70_000_000_000  # not asked: the name says
        shown = await _auto_choice(tmp_path, home, "ollama", "ollama_host", server.url, "qwen2.5-coder:1.5b")
        asked = [path for path, _ in server.requests]
    assert shown == ("small", "small profile: qwen2.5-coder:1.5b, 1.5B parameters (from its name), "
                     "model table: qwen2.5-coder (built-in)")
    assert asked == []


async def test_ollama_states_the_exact_parameter_count(tmp_path: Path, home: Path) -> None:
    with FakeServer(models=["coder"]) as server:
        server.parameter_count, server.parameter_size = 7_615_616_512, "70B"  # the exact count wins
        shown = await _auto_choice(tmp_path, home, "ollama", "ollama_host", server.url, "coder")
    assert shown == ("small", "small profile: coder, 7.6B parameters (from the server)")


async def test_a_server_that_cannot_be_asked_leaves_the_size_unknown(tmp_path: Path, home: Path) -> None:
    with FakeServer() as server:
        url = server.url  # stopped at the end of the block: nothing listens there any more
    shown = await _auto_choice(tmp_path, home, "openai", "openai_base_url", url + "/v1", "local-model")
    assert shown == ("full", "full profile: local-model, size unknown")


def test_levers_can_be_switched_off_by_name() -> None:
    profile = profile_named("small", "menu,nudges")
    assert not profile.short_menu and not profile.nudges and profile.simple_edit
    assert "menu" not in profile.levers() and "edit" in profile.levers()
    # the checks after a change are the levers every profile has
    assert profile_named("full", "menu").levers() == ["verify", "leftovers", "missing", "progress"]
    assert profile_named("full", "verify").levers() == []
    assert profile_named("full", "leftovers").levers() == ["verify", "missing"]
    small = profile_named("small", "echo,guard").levers()
    assert "empty" in small and "leftovers" in small and "echo" not in small and "guard" not in small
    with pytest.raises(ValueError, match="unknown profile lever 'menus'"):
        SMALL.without(["menus"])


# ---------------------------------------------------------------- the deferred-tool menu


def _read(args, ctx):  # noqa: ANN001
    return f"read {args.filepath}"


def menu_table() -> ToolTable:
    return ToolTable([make_tool(n, _read) for n in ("read_file", "git_diff", "git_status", "copy_file")])


def test_menu_offers_core_tools_and_tool_search_only() -> None:
    table = menu_table()
    menu = ToolMenu(table, ["read_file"])
    table.add(tool_search_tool(menu))
    assert [t.name for t in menu.offered()] == ["read_file", TOOL_SEARCH]
    assert "git_diff, git_status, copy_file" in table.get(TOOL_SEARCH).description


def test_select_loads_exact_names_and_they_stay() -> None:
    table = menu_table()
    menu = ToolMenu(table, ["read_file"])
    table.add(tool_search_tool(menu))
    answer = menu.search("select:git_diff, nope")
    assert "git_diff(filepath)" in answer and "Unknown: nope." in answer
    assert [t.name for t in menu.offered()] == ["read_file", "git_diff", TOOL_SEARCH]


def test_keywords_find_tools_by_name_and_description() -> None:
    table = menu_table()
    menu = ToolMenu(table, ["read_file"])
    assert menu.search("git status").splitlines()[1].startswith("- git_status")
    assert "No tool matches 'teleport'" in menu.search("teleport")
    assert "copy_file" not in [t.name for t in menu.offered()] or "copy_file" in menu.loaded


def test_tool_search_leaves_the_menu_when_nothing_waits() -> None:
    table = menu_table()
    menu = ToolMenu(table, ["read_file"])
    table.add(tool_search_tool(menu))
    menu.search("select:git_diff,git_status,copy_file")
    assert TOOL_SEARCH not in [t.name for t in menu.offered()]


def test_a_resumed_history_counts_its_tools_as_loaded() -> None:
    table = menu_table()
    menu = ToolMenu(table, ["read_file"])
    from tether.core.messages import Message

    history = [Message("assistant", [ToolCall("c1", "git_diff", {"filepath": "a"})])]
    loaded: set[str] = set()
    menu.start_conversation(history, loaded)
    assert loaded == {"git_diff"} and menu.refusal("git_diff") is None


class AllowingUI(SilentUI):
    can_ask = True

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        return Decision(True, "")


MENU = ("read_file", "write_file", "run_cmd", "send_input", "search_in_file")


def menu_loop(provider: ScriptedProvider, tmp_path: Path, tools=None, nudges: bool = False,  # noqa: ANN001
              menu_names: tuple[str, ...] = MENU):
    table = ToolTable(tools if tools is not None else [make_tool(n, _read) for n in ("read_file", "git_diff")])
    ui = AllowingUI()
    menu = ToolMenu(table, list(menu_names))
    table.add(tool_search_tool(menu))
    dispatcher = Dispatcher(table, ToolContext(root=tmp_path), ui, default_timeout=5.0)
    loop = TurnLoop(
        provider, table, dispatcher, ui,
        TurnSettings(model="m", nudges=nudges), system_prompt=lambda mode: "SYSTEM", menu=menu,
        assist=Assist(tmp_path, dispatcher.dispatch, dispatcher.ctx.files.names),
    )
    return loop, ui


async def test_a_deferred_tool_called_before_loading_says_how_to_load_it(tmp_path: Path) -> None:
    provider = ScriptedProvider([
        call(("git_diff", {"filepath": "a"})),
        call((TOOL_SEARCH, {"query": "select:git_diff"})),
        call(("git_diff", {"filepath": "a"})),
        say("done"),
    ])
    loop, _ = menu_loop(provider, tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "show the diff of a")
    first, _, third = result.evidence
    assert first.error and 'tool_search: {"query": "select:git_diff"}' in first.result
    assert not third.error and third.result == "read a"
    offered = [[t.name for t in r.tools] for r in provider.requests]
    assert offered[0] == ["read_file", TOOL_SEARCH] and offered[-1] == ["read_file", "git_diff"]
    assert conv.loaded_tools == {"git_diff"}  # stays loaded for the next turn
    provider.replies = [say("ok")]
    await loop.run_turn(conv, "thanks")
    assert "git_diff" in [t.name for t in provider.requests[-1].tools]


# ---------------------------------------------------------------- one edit mode


def small_runtime(tmp_path: Path, home: Path, **settings: object):
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    given = {"provider": "openai", "model": "qwen2.5-coder-1.5b", "openai_base_url": "http://127.0.0.1:9/v1",
             **settings}
    loaded, _ = load_settings(given, {}, home)
    runtime = build_runtime(loaded, RunOptions(root=root, home=home, auto=True), HeadlessUI(), {})
    return runtime, root


async def test_small_edit_file_takes_one_mode_and_shows_the_right_form(tmp_path: Path, home: Path) -> None:
    runtime, root = small_runtime(tmp_path, home)
    runtime.apply_profile(SMALL)
    (root / "a.py").write_text("x = 1\ny = 2\n")
    edit = runtime.table.get("edit_file")
    assert set(edit.json_schema()["properties"]) == {"filepath", "old_content", "new_content"}
    ctx = ToolContext(root=root)
    mixed = edit.params.model_validate({"filepath": "a.py", "old_content": "x = 1", "new_content": "x = 3",
                                        "start_anchor": "1:1"})
    with pytest.raises(ToolError, match=r"not start_anchor.*Send: \{\"name\": \"edit_file\""):
        edit.handler(mixed, ctx)
    assert (root / "a.py").read_text() == "x = 1\ny = 2\n"
    missed = edit.params.model_validate({"filepath": "a.py", "old_content": "x = 9", "new_content": "x = 3"})
    with pytest.raises(ToolError) as caught:
        edit.handler(missed, ctx)
    assert "start_anchor" not in str(caught.value) and "The whole file now reads" in str(caught.value)
    assert "reads (copy old_content from it exactly):\nx = 1\ny = 2\n" in str(caught.value)
    assert '"name": "edit_file"' not in str(caught.value)  # no edit computed for the model
    good = edit.params.model_validate({"filepath": "a.py", "old_content": "y = 2", "new_content": "y = 5"})
    edit.handler(good, ctx)
    assert (root / "a.py").read_text() == "x = 1\ny = 5\n"
    copied = edit.params.model_validate({"filepath": "a.py", "old_content": "x = 1\n2:cd|y = 5",
                                         "new_content": "1| x = 7\n2| y = 5"})
    edit.handler(copied, ctx)  # read_file's prefixes (all lines but the first) are not the file's
    assert (root / "a.py").read_text() == "x = 7\ny = 5\n"
    searched = edit.params.model_validate({"filepath": "a.py", "old_content": "a.py:1: x = 7",
                                           "new_content": "a.py:1: x = 8"})
    edit.handler(searched, ctx)  # copied from search_in_file's matches of this file
    assert (root / "a.py").read_text() == "x = 8\ny = 5\n"
    other = edit.params.model_validate({"filepath": "a.py", "old_content": "b.py:1: x = 8", "new_content": "x = 7"})
    with pytest.raises(ToolError):  # another file's match line is no line of this one
        edit.handler(other, ctx)
    edit.handler(edit.params.model_validate({"filepath": "a.py", "old_content": "x = 8", "new_content": "x = 7"}), ctx)
    read = runtime.table.get("read_file")
    shown = read.handler(read.params.model_validate({"filepath": "a.py"}), ctx)
    assert shown.text == "1| x = 7\n2| y = 5"
    assert '1| print("Hello")' in runtime.system_prompt("text")
    runtime.apply_profile(SMALL.with_levers(["plain"]))  # plain: the file's text, no numbers
    read = runtime.table.get("read_file")
    shown = read.handler(read.params.model_validate({"filepath": "a.py"}), ctx)
    assert shown.text == "x = 7\ny = 5"
    assert "shown as it is" in read.description and "1| print" not in runtime.system_prompt("text")
    assert 'read_file\']\nprint("Hello")' in runtime.system_prompt("text")  # the example reads so too
    runtime.apply_profile(SMALL)  # numbered again, the example too
    read = runtime.table.get("read_file")
    assert read.handler(read.params.model_validate({"filepath": "a.py"}), ctx).text == "1| x = 7\n2| y = 5"
    edit = runtime.table.get("edit_file")
    (root / "a.txt").write_text("x = 7\ny = 5\n")  # text: the edit below would not be valid Python
    kept = edit.params.model_validate({"filepath": "a.txt", "old_content": "x = 7\ny = 5",
                                       "new_content": "10:ab|x\ny = 5"})  # one prefix: the file's text
    edit.handler(kept, ctx)
    assert (root / "a.txt").read_text() == "10:ab|x\ny = 5\n"
    runtime.apply_profile(profile_named("full"))  # the full tool comes back
    assert "start_anchor" in runtime.table.get("edit_file").json_schema()["properties"]
    full_read = runtime.table.get("read_file")
    assert full_read.handler(full_read.params.model_validate({"filepath": "a.py"}), ctx).text.startswith("1:")
    assert TOOL_SEARCH not in runtime.table and runtime.loop.menu is None


async def test_small_profile_settings_respect_what_the_user_set(tmp_path: Path, home: Path) -> None:
    runtime, _ = small_runtime(tmp_path, home)
    runtime.apply_profile(SMALL)
    turn = runtime.loop.settings
    assert (turn.temperature, turn.max_steps, turn.nudges) == (SMALL.temperature, SMALL.max_steps, True)
    runtime, _ = small_runtime(tmp_path, home, temperature=0.7, max_steps=30)
    runtime.apply_profile(SMALL)
    assert (runtime.loop.settings.temperature, runtime.loop.settings.max_steps) == (0.7, 30)


async def test_auto_picks_small_for_the_local_model_and_text_protocol(tmp_path: Path, home: Path) -> None:
    runtime, _ = small_runtime(tmp_path, home)
    profile = await runtime.resolve_profile()
    runtime.apply_profile(profile)
    assert profile.name == "small" and await runtime.resolve_protocol() == "text"
    runtime, _ = small_runtime(tmp_path, home, profile="full")
    assert (await runtime.resolve_profile()).name == "full"


async def test_ollama_stated_size_decides(tmp_path: Path, home: Path) -> None:
    with FakeServer() as server:
        server.parameter_size = "70.6B"
        loaded, _ = load_settings({"provider": "ollama", "model": "mystery", "ollama_host": server.url}, {}, home)
        runtime = build_runtime(loaded, RunOptions(root=tmp_path, home=home), HeadlessUI(), {})
        try:
            assert (await runtime.resolve_profile()).name == "full"
        finally:
            await runtime.aclose()


# ---------------------------------------------------------------- the project map


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_project_map_lists_paths_and_sizes_and_skips_ignored(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x" * 1500)
    (tmp_path / "README.md").write_text("hi\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.bin").write_text("junk")
    git(tmp_path, "init", "-q")
    text = project_map(tmp_path, 500)
    assert text.splitlines() == [".gitignore 7B", "README.md 3B", "src/app.py 1.5K"]


def test_project_map_folds_folders_to_fit_the_budget(tmp_path: Path) -> None:
    (tmp_path / "big").mkdir()
    for k in range(60):
        (tmp_path / "big" / f"module_{k:02}.py").write_text("pass\n")
    (tmp_path / "main.py").write_text("print(1)\n")
    text = project_map(tmp_path, 200)
    assert len(text) <= 200 and "big/ (60 files)" in text and "main.py 9B" in text


def test_without_a_budget_no_file_is_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The full profile's map has no budget: its start runs no git to list the files."""
    (tmp_path / "main.py").write_text("print(1)\n")
    git(tmp_path, "init", "-q")
    monkeypatch.setattr(projectmap, "project_files", lambda root: pytest.fail("the files were listed"))
    assert project_map(tmp_path, 0) == ""


# ---------------------------------------------------------------- nudges


def nudges_of(provider: ScriptedProvider) -> list[str]:
    """The user messages the harness added after the first, in order."""
    return [
        m.text for r in provider.requests[-1:] for m in r.messages[2:] if m.role == "user" and not m.tool_results
    ]


async def run_nudged(tmp_path: Path, replies: list, request: str = "what does a.py print?", tools=None,  # noqa: ANN001
                     menu_names: tuple[str, ...] = MENU):
    provider = ScriptedProvider(replies)
    loop, _ = menu_loop(provider, tmp_path, tools=tools, nudges=True, menu_names=menu_names)
    conv = Conversation()
    result = await loop.run_turn(conv, request)
    return provider, conv, result


async def test_an_answer_without_looking_gets_look_first_once(tmp_path: Path) -> None:
    provider, conv, result = await run_nudged(tmp_path, [say("It prints 1977."), say("It prints 1977.")])
    assert result.text == "It prints 1977." and result.evidence == []  # nothing was invented
    assert nudges_of(provider) == [LOOK_FIRST]


async def test_a_nudged_retry_counts_as_a_request(tmp_path: Path) -> None:
    provider, conv, result = await run_nudged(tmp_path, [say("It prints 1977."), say("It prints 1977.")])
    assert result.requests == len(provider.requests) == 2
    assert conv.requests == 2


async def test_no_nudge_for_a_greeting_or_when_nudges_are_off(tmp_path: Path) -> None:
    provider, _, _ = await run_nudged(tmp_path, [say("Hello!")], request="hi there")
    assert len(provider.requests) == 1
    provider = ScriptedProvider([say("It prints 1977.")])
    loop, _ = menu_loop(provider, tmp_path, nudges=False)
    await loop.run_turn(Conversation(), "what does a.py print?")
    assert len(provider.requests) == 1


async def test_an_empty_reply_is_nudged_once(tmp_path: Path) -> None:
    provider, _, result = await run_nudged(tmp_path, [
        call(("read_file", {"filepath": "a.py"})), say(""), say(""),
    ])
    assert nudges_of(provider) == [EMPTY_REPLY] and result.text == ""
    assert len(result.evidence) == 1


async def test_a_final_answer_after_a_failed_call_is_nudged_once(tmp_path: Path) -> None:
    def missing(args, ctx):  # noqa: ANN001
        raise ToolError(f"File not found: {args.filepath}.")

    provider, _, result = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "src/a.py"})), say("I could not find it."), say("Sorry.")],
        tools=[make_tool("read_file", missing)],
    )
    assert nudges_of(provider) == [AFTER_FAILURE.format(error="File not found: src/a.py.")]
    assert result.text == "Sorry." and len(result.evidence) == 1


async def test_a_fix_shown_but_not_applied_is_nudged_once(tmp_path: Path) -> None:
    fix = "Change it like this:\n```python\nx = 2\n```"
    provider, _, result = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "a.py"})), say(fix), say(fix)],
        request="set x to 2 in a.py",
    )
    assert nudges_of(provider) == [NOT_APPLIED]
    assert [e.call.name for e in result.evidence] == ["read_file"]  # no write was invented


async def test_an_applied_change_needs_no_nudge(tmp_path: Path) -> None:
    def write(args, ctx):  # noqa: ANN001
        return "written"

    tools = [make_tool("read_file", _read), make_tool("write_file", write, TextArgs, reads=False, writes_files=True)]
    provider, _, result = await run_nudged(
        tmp_path,
        [call(("write_file", {"filepath": "a.toml", "content": "x = 2\n"})), say("Done:\n```toml\nx = 2\n```")],
        request="set x to 2 in a.toml", tools=tools,
    )
    assert len(provider.requests) == 2 and result.text.startswith("Done")


class CommandArgs(BaseModel):
    command: str


def write_and_run_tools() -> list:
    def write(args, ctx):  # noqa: ANN001
        return "written"

    def run(args, ctx):  # noqa: ANN001
        return "hello\n[exit code 0 · 0.0s]"

    return [
        make_tool("write_file", write, TextArgs, reads=False, writes_files=True),
        make_tool("run_cmd", run, CommandArgs, reads=False, runs_commands=True, main_arg="command"),
    ]


async def test_an_answer_after_changing_code_it_never_ran_is_nudged_once(tmp_path: Path) -> None:
    from tether.assist.rules import UNCHECKED

    write = call(("write_file", {"filepath": "hello.py", "content": "print('hello')\n"}))
    provider, _, result = await run_nudged(
        tmp_path, [write, say("Done."), say("Done, really.")], request="make hello.py print hello",
        tools=write_and_run_tools(),
    )
    assert nudges_of(provider) == [UNCHECKED.format(path="hello.py")]
    assert result.text == "Done, really." and [e.call.name for e in result.evidence] == ["write_file"]


async def test_code_that_was_run_after_its_last_change_needs_no_check(tmp_path: Path) -> None:
    (tmp_path / "hello.py").write_text("print('hi')\n")
    run = call(("run_cmd", {"command": "python hello.py"}))
    write = call(("write_file", {"filepath": "hello.py", "content": "print('hello')\n"}))
    provider, _, _ = await run_nudged(
        tmp_path, [write, run, say("Done: it prints hello.")], request="make hello.py print hello",
        tools=write_and_run_tools(),
    )
    assert nudges_of(provider) == []
    # run, then change it again: that change is unchecked
    provider, _, _ = await run_nudged(
        tmp_path, [run, write, say("Done."), say("Done.")], request="make hello.py print hello",
        tools=write_and_run_tools(),
    )
    assert len(nudges_of(provider)) == 1 and "hello.py" in nudges_of(provider)[0]


async def test_a_repeated_failing_call_gets_a_note_once(tmp_path: Path) -> None:
    def missing(args, ctx):  # noqa: ANN001
        raise ToolError("File not found: b.py.")

    same = ("read_file", {"filepath": "b.py"})
    provider, conv, result = await run_nudged(
        tmp_path, [call(same), call(same), call(same), say("It is missing.")],
        tools=[make_tool("read_file", missing)],
    )
    results = [r.content for m in conv.messages if m.role == "tool" for r in m.tool_results]
    assert [REPEATED_FAILURE in r for r in results] == [False, True, False]
    assert len(result.evidence) == 3


# ---------------------------------------------------------------- the CLI says which profile


def test_json_and_stream_json_say_which_profile(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.txt").write_text("The answer is 42.\n")
    script = [Reply(tool_calls=[("read_file", {"filepath": "a.txt"})]), Reply(text="It says 42.")]
    with FakeServer(script, models=["fake"]) as server:
        server.parameter_count = 1_543_714_304  # "fake" says no size: llama.cpp's model list does
        args = ["-p", "What does a.txt say?", "--output-format", "stream-json", "--provider", "openai",
                "--base-url", server.url + "/v1", "--model", "fake", "--auto"]
        proc = run_cli(args, project, home, TETHER_PROFILE="auto")
        first_body = next(b for path, b in server.requests if path.endswith("/chat/completions"))
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    init, result = lines[0], lines[-1]
    assert init["type"] == "init" and init["profile"] == "small" and init["protocol"] == "text"
    assert init["profile_reason"] == "fake, 1.5B parameters (from the server)"
    assert TOOL_SEARCH in init["tools"] and "git_diff" not in init["tools"]
    assert result["profile"] == "small" and result["result"] == "It says 42."
    assert first_body["temperature"] == SMALL.temperature == 0.0 and "tools" not in first_body
    assert "# Project files (path size)\na.txt 18B" in first_body["messages"][1]["content"]
    with FakeServer([Reply(text="hi")]) as server:
        args[-5:-1] = ["--base-url", server.url + "/v1", "--model", "fake"]
        proc = run_cli([*args, "--profile", "full", "--output-format", "json"], project, home)
    assert json.loads(proc.stdout)["profile"] == "full"


# ---------------------------------------------------------------- "not found" names what exists


@pytest.mark.parametrize(
    ("asked", "message"),
    [
        ("src/textutils.py",
         "File not found: src/textutils.py (the directory src does not exist). "
         "Closest existing paths: textutils.py."),
        ("config.yml", "File not found: config.yml. Closest existing paths: lib/config.yaml."),
        ("textutil.py", "File not found: textutil.py. Similar names there: textutils.py."),
    ],
)
def test_not_found_names_the_closest_existing_paths(tmp_path: Path, asked: str, message: str) -> None:
    from tether.tools.files import read_file
    from tether.tools.params import ReadFileParams

    (tmp_path / "textutils.py").write_text("x = 1\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "config.yaml").write_text("a: 1\n")
    with pytest.raises(ToolError) as caught:
        read_file(ReadFileParams(filepath=asked), ToolContext(root=tmp_path))
    assert str(caught.value) == message


def test_not_found_suggests_nothing_when_nothing_is_alike(tmp_path: Path) -> None:
    from tether.tools.files import read_file
    from tether.tools.params import ReadFileParams

    (tmp_path / "main.py").write_text("")
    with pytest.raises(ToolError, match=r"^File not found: zebra\.txt\.$"):
        read_file(ReadFileParams(filepath="zebra.txt"), ToolContext(root=tmp_path))


async def test_the_opening_note_follows_the_request_and_stays_in_the_history(tmp_path: Path) -> None:
    from tether.assist.rules import OPENING_NOTE

    provider = ScriptedProvider([call(("read_file", {"filepath": "a.py"})), say("It prints 1.")])
    loop, _ = menu_loop(provider, tmp_path)
    loop.settings.opening_note = True
    conv = Conversation()
    await loop.run_turn(conv, "what does a.py print?")
    first, second = (r.messages for r in provider.requests)
    assert first[-1].text == OPENING_NOTE and first[-2].text == "what does a.py print?"
    # kept where it was sent: the next request starts with all the first one sent
    assert second[: len(first)] == first and len(second) > len(first)
    assert [m.text for m in conv.messages[:2]] == ["what does a.py print?", OPENING_NOTE]


async def test_a_number_no_result_showed_is_nudged_once(tmp_path: Path) -> None:
    from tether.assist.rules import UNSEEN_NUMBER

    def server(args, ctx):  # noqa: ANN001
        return "3: HTTPServer((cfg.host, cfg.port), Handler)"

    provider, _, result = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "server.py"})), say("It listens on port 8000."),
         say("It listens on port 8000.")],
        request="which port does it listen on?", tools=[make_tool("read_file", server)],
    )
    assert nudges_of(provider) == [UNSEEN_NUMBER.format(number="8000")]
    assert len(result.evidence) == 1


async def test_a_number_a_result_showed_needs_no_nudge(tmp_path: Path) -> None:
    def defaults(args, ctx):  # noqa: ANN001
        return "PORT = 7341"

    provider, _, result = await run_nudged(
        tmp_path, [call(("read_file", {"filepath": "defaults.py"})), say("Port 7,341 (set in defaults.py).")],
        request="which port does it listen on?", tools=[make_tool("read_file", defaults)],
    )
    assert len(provider.requests) == 2 and result.text.startswith("Port 7,341")


async def test_a_blind_overwrite_of_an_existing_file_waits_once(tmp_path: Path) -> None:
    from tether.assist.call_guard import UNREAD_OVERWRITE

    written = []

    def write(args, ctx):  # noqa: ANN001
        written.append(args.content)
        (ctx.root / args.filepath).write_text(args.content)
        return "written"

    (tmp_path / "app.json").write_text('{"timeout": 10, "retries": 3}\n')
    tools = [make_tool("read_file", _read), make_tool("write_file", write, TextArgs, reads=False, writes_files=True)]
    blind = ("write_file", {"filepath": "app.json", "content": '{"timeout": 45}\n'})
    provider, conv, result = await run_nudged(
        tmp_path, [call(blind), call(blind), say("Done.")], request="set the timeout to 45", tools=tools,
    )
    first, second = result.evidence
    # The refusal shows what the file holds, so the next call can be the right write.
    shown = 'It holds now:\n{"timeout": 10, "retries": 3}\n'
    assert first.error and first.result == UNREAD_OVERWRITE.format(path="app.json", shown=shown)
    assert not second.error and written == ['{"timeout": 45}\n']  # the model chose to send it again


async def test_a_blind_overwrite_refusal_shows_no_file_a_deny_rule_or_size_keeps_back(
    tmp_path: Path,
) -> None:
    from tether.assist.call_guard import SHOW_UNREAD_CHARS, overwrite_refusal
    from tether.engine.turn_record import TurnEvidence

    secret, big = tmp_path / "secret.env", tmp_path / "big.txt"
    secret.write_text("TOKEN=abc\n")
    big.write_text("x" * (SHOW_UNREAD_CHARS + 1))
    watch = TurnEvidence("write things")
    refusal = overwrite_refusal(watch, secret, "secret.env", readable=False)
    assert refusal is not None and "TOKEN" not in refusal[1] and "Read it with read_file first" in refusal[1]
    refusal = overwrite_refusal(watch, big, "big.txt", readable=True)
    assert refusal is not None and "xxx" not in refusal[1] and "Read it with read_file first" in refusal[1]


async def test_the_loop_shows_no_file_in_the_refusal_when_a_deny_rule_covers_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.env").write_text("TOKEN=abc\n")
    tools = [make_tool("read_file", _read), make_tool("write_file", lambda a, c: "written", TextArgs, reads=False, writes_files=True)]
    provider = ScriptedProvider([call(("write_file", {"filepath": "app.env", "content": "X=1\n"})), say("Done.")])
    loop, _ = menu_loop(provider, tmp_path, tools=tools, nudges=True)
    loop.dispatcher.ctx.may_read = lambda path: path.name != "app.env"
    result = await loop.run_turn(Conversation(), "set X to 1 in app.env")
    assert result.evidence[0].error and "TOKEN" not in result.evidence[0].result


async def test_a_write_after_reading_or_of_a_new_file_runs_at_once(tmp_path: Path) -> None:
    def write(args, ctx):  # noqa: ANN001
        return "written"

    (tmp_path / "app.json").write_text("{}\n")
    tools = [make_tool("read_file", _read), make_tool("write_file", write, TextArgs, reads=False, writes_files=True)]
    _, _, result = await run_nudged(tmp_path, [
        call(("read_file", {"filepath": "app.json"})),
        call(("write_file", {"filepath": "app.json", "content": '{"a": 1}\n'})),
        call(("write_file", {"filepath": "new.py", "content": "print(1)\n"})),
        say("Done."),
    ], request="rewrite app.json and add new.py", tools=tools)
    assert [e.error for e in result.evidence] == [False, False, False]


# ---------------------------------------------------------------- terse history


async def run_terse(tmp_path: Path, replies: list, request: str, terse: bool = True):  # noqa: ANN001
    provider = ScriptedProvider(replies)
    loop, _ = menu_loop(provider, tmp_path, nudges=True)
    loop.settings.terse_history = terse
    conv = Conversation()
    await loop.run_turn(conv, request)
    return provider, conv


def assistant_texts(provider: ScriptedProvider) -> list[str]:
    return [m.text for m in provider.requests[-1].messages if m.role == "assistant"]


async def test_terse_history_keeps_a_replys_call_without_its_prose(tmp_path: Path) -> None:
    plan = "First I will count the error messages, then answer."
    replies = [call(("read_file", {"filepath": "a.py"}), text=plan), say("It prints hello.")]
    provider, conv = await run_terse(tmp_path, replies, "what does a.py print?")
    assert assistant_texts(provider) == [""]  # the call alone went back to the model
    calls = [p for m in conv.messages for p in m.parts if isinstance(p, ToolCall)]
    assert [c.name for c in calls] == ["read_file"]
    provider, _ = await run_terse(tmp_path, [call(("read_file", {"filepath": "a.py"}), text=plan),
                                             say("It prints hello.")], "what does a.py print?", terse=False)
    assert assistant_texts(provider) == [plan]


async def test_terse_history_drops_an_answer_a_nudge_rejects_but_keeps_a_fix_to_apply(
    tmp_path: Path,
) -> None:
    provider, conv = await run_terse(
        tmp_path, [say("It prints 1977."), call(("read_file", {"filepath": "a.py"})), say("It prints 1.")],
        "what does a.py print?",
    )
    assert LOOK_FIRST in [m.text for m in conv.messages if m.role == "user"]
    assert "1977" not in " ".join(m.text for m in provider.requests[1].messages)
    fix = "Change it like this:\n```python\nx = 2\n```"
    provider, _ = await run_terse(
        tmp_path, [call(("read_file", {"filepath": "a.py"})), say(fix), say("Done.")], "set x to 2 in a.py",
    )
    assert fix in [m.text for m in provider.requests[-1].messages if m.role == "assistant"]


async def test_an_answer_to_a_question_that_quotes_the_code_is_not_nudged_to_apply(tmp_path: Path) -> None:
    answer = "As MAX_UPLOAD_RETRIES says:\n```python\nretries = MAX_UPLOAD_RETRIES\n```"
    provider, _, result = await run_nudged(
        tmp_path,
        [call(("read_file", {"filepath": "policy.py"})), say(answer), say(answer)],
        request="How many times does the uploader retry a failed upload before it gives up?",
    )
    from tether.assist.rules import NO_NUMBER

    assert nudges_of(provider) == [NO_NUMBER] and result.text == answer  # no number, but nothing to apply


@pytest.mark.parametrize("request_text, question", [
    ("How many times does the uploader retry?", True),
    ("which port does the ledger listen on by default?", True),
    ("Where is the code that decides whether a coupon expired? Give me the file.", True),
    ("Can you fix the parser so the tests pass?", False),
    ("make hello.py greet Ann", False),
    ("count the TODO lines and write the number to todo.txt", False),
])
def test_questions_are_told_from_requests_for_a_change(request_text: str, question: bool) -> None:
    from tether.assist.request import read_request

    assert read_request(request_text, ()).asks_question is question


def test_the_tries_lever_asks_for_more_fixes_unless_the_user_set_how_many() -> None:
    from tether.runtime import fix_attempts

    tries = profile_named("small", "", "tries")
    assert "tries" in tries.levers() and "tries" not in profile_named("small").levers()
    assert fix_attempts(tries, 2, frozenset()) == 4
    assert fix_attempts(tries, 1, frozenset({"verify_after_change"})) == 1  # the user's number
    assert fix_attempts(profile_named("small"), 2, frozenset()) == 2
    assert fix_attempts(profile_named("small", "verify", "tries"), 2, frozenset()) == 0
