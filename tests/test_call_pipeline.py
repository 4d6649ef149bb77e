"""Every call crosses the one dispatch pipeline, refused, reused or run: the PreToolUse hooks
see a call the tool menu or a call guard refuses, the PostToolUse hooks read the result with
the harness's notes (what the model will read), and a read answered from an earlier one is
still a dispatch: the UI is told, and there is evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from scripted import ScriptedProvider, call, make_tool, say

from tether.assist.rules import REPEATED_CALL, REPEATED_FAILURE
from tether.assist.turn import Assist
from tether.core.messages import Evidence, ToolCall
from tether.core.toolspec import Tool, ToolContext, ToolError, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import Dispatcher, Screening
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.engine.toolmenu import ToolMenu, tool_search_tool


@dataclass
class RecordingHooks:
    """PreToolUse and PostToolUse hooks that let everything through and keep what they saw."""

    screened: list[ToolCall] = field(default_factory=list)
    results: list[str] = field(default_factory=list)

    async def screen(self, call: ToolCall, tool: Tool) -> Screening:
        self.screened.append(call)
        return Screening()

    async def after_result(self, call: ToolCall, tool: Tool, result: str, is_error: bool) -> str:
        self.results.append(result)
        return ""


class RecordingUI(SilentUI):
    def __init__(self) -> None:
        super().__init__()
        self.started: list[str] = []
        self.ended: list[Evidence] = []

    def tool_start(self, call: ToolCall) -> None:
        self.started.append(call.name)

    def tool_end(self, evidence: Evidence) -> None:
        self.ended.append(evidence)


def hooked_loop(tmp_path: Path, replies: list, tools: list[Tool], *, menu: tuple[str, ...] | None = None,
                nudges: bool = True) -> tuple[TurnLoop, RecordingHooks, RecordingUI]:
    table = ToolTable(tools)
    tool_menu = None
    if menu is not None:
        tool_menu = ToolMenu(table, list(menu))
        table.add(tool_search_tool(tool_menu))
    ui, hooks = RecordingUI(), RecordingHooks()
    dispatcher = Dispatcher(table, ToolContext(root=tmp_path), ui, hooks=hooks)
    loop = TurnLoop(ScriptedProvider(replies), table, dispatcher, ui, TurnSettings(model="m", nudges=nudges),
                    system_prompt=lambda mode: "SYSTEM", menu=tool_menu,
                    assist=Assist(tmp_path, dispatcher.dispatch, dispatcher.ctx.files.names))
    return loop, hooks, ui


def tool_results(conv: Conversation) -> list[str]:
    return [r.content for m in conv.messages if m.role == "tool" for r in m.tool_results]


async def test_a_pre_tool_use_hook_sees_a_call_the_tool_menu_refuses(tmp_path: Path) -> None:
    ran: list[str] = []

    def diff(args, ctx):  # noqa: ANN001
        ran.append(args.filepath)
        return "diff"

    tools = [make_tool("read_file", lambda a, c: "text"), make_tool("git_diff", diff)]
    loop, hooks, ui = hooked_loop(tmp_path, [call(("git_diff", {"filepath": "a"})), say("done")], tools,
                                  menu=("read_file",))
    conv = Conversation()
    result = await loop.run_turn(conv, "show the diff of a")
    assert [c.name for c in hooks.screened] == ["git_diff"]
    assert hooks.screened[0].arguments == {"filepath": "a"}
    assert ran == [] and hooks.results == []  # refused all the same, and no PostToolUse for it
    [evidence] = result.evidence
    assert evidence.error and evidence.summary == "not run" and "not loaded yet" in evidence.result
    assert ui.started == ["git_diff"] and ui.ended == [evidence]


async def test_a_post_tool_use_hook_reads_the_result_notes_the_model_reads(tmp_path: Path) -> None:
    def broken(args, ctx):  # noqa: ANN001
        raise ToolError(f"no such file: {args.filepath}")

    same = ("read_file", {"filepath": "gone.py"})
    loop, hooks, _ = hooked_loop(tmp_path, [call(same), call(same), say("It is gone.")],
                                 [make_tool("read_file", broken)])
    conv = Conversation()
    await loop.run_turn(conv, "what does gone.py say?")
    first, second = tool_results(conv)
    assert REPEATED_FAILURE not in first and second.endswith(REPEATED_FAILURE)
    assert hooks.results == [first, second]


async def test_a_read_answered_from_an_earlier_one_is_still_dispatched(tmp_path: Path) -> None:
    reads: list[str] = []

    def read(args, ctx):  # noqa: ANN001
        reads.append(args.filepath)
        return "TODO one"

    same = ("read_file", {"filepath": "a.py"})
    loop, hooks, ui = hooked_loop(tmp_path, [call(same), call(same), say("One TODO.")],
                                  [make_tool("read_file", read)])
    conv = Conversation()
    result = await loop.run_turn(conv, "how many TODO lines are in a.py?")
    assert reads == ["a.py"]
    assert [c.name for c in hooks.screened] == ["read_file", "read_file"]
    assert ui.started == ["read_file", "read_file"] and ui.ended == result.evidence
    assert [e.summary for e in result.evidence][1] == "reused earlier result"
    assert tool_results(conv) == ["TODO one", REPEATED_CALL]
    assert hooks.results == ["TODO one", REPEATED_CALL]
