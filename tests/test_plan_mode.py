"""Plan mode: nothing changes before the user approves a plan, through the real loop and dispatcher."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, make_tool, say

from tether.core.messages import ToolCall
from tether.core.toolspec import ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import AllowAll, Dispatcher, GateVerdict
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.tools.file_table import FILE_TOOLS
from tether.tools.plan import SUBMIT_PLAN, ApprovePlan, PlanGate, plan_tools, set_plan_mode


class Approver:
    """Stands in for the user: answers each plan from a list, remembering what it was shown."""

    def __init__(self, *answers: tuple[bool, str]) -> None:
        self.answers = list(answers)
        self.shown: list[str] = []

    async def __call__(self, plan: str) -> tuple[bool, str]:
        self.shown.append(plan)
        return self.answers.pop(0)


def build(replies: list, root: Path, approve: ApprovePlan | None, inner=None):  # noqa: ANN001
    gate = PlanGate(inner or AllowAll())
    gate.active = True
    table = ToolTable([*FILE_TOOLS, *plan_tools(gate, approve)])
    ui = SilentUI()
    dispatcher = Dispatcher(table, ToolContext(root=root), ui, policy=gate, default_timeout=5.0)
    provider = ScriptedProvider(list(replies))
    loop = TurnLoop(provider, table, dispatcher, ui, TurnSettings(model="m"), lambda mode: "S")
    return loop, gate, provider


def write(path: str, content: str) -> tuple[str, dict]:
    return ("write_file", {"filepath": path, "content": content})


def submit(plan: str) -> tuple[str, dict]:
    return (SUBMIT_PLAN, {"plan": plan})


def results(conv: Conversation) -> list:
    return [r for m in conv.messages if m.role == "tool" for r in m.tool_results]


async def test_writes_are_refused_before_a_plan_is_approved(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    replies = [call(write("a.txt", "new\n"), ("read_file", {"filepath": "a.txt"})), say("ok")]
    loop, gate, _ = build(replies, tmp_path, Approver())
    conv = Conversation()
    await loop.run_turn(conv, "change a.txt")
    refused, read = results(conv)
    assert refused.is_error and SUBMIT_PLAN in refused.content
    assert refused.content.startswith("Blocked by plan mode:") and "permission rule" not in refused.content
    assert not read.is_error and "old" in read.content
    assert (tmp_path / "a.txt").read_text() == "old\n"


async def test_approval_opens_the_gate_for_this_request_only(tmp_path: Path) -> None:
    approver = Approver((True, ""))
    replies = [call(submit("Write a.txt with hi.")), call(write("a.txt", "hi")), say("done")]
    loop, gate, _ = build(replies, tmp_path, approver)
    conv = Conversation()
    await loop.run_turn(conv, "write a.txt")
    approved, wrote = results(conv)
    assert approved.content == "Plan approved: go ahead." and not approved.is_error
    assert not wrote.is_error and (tmp_path / "a.txt").read_text() == "hi"
    assert approver.shown == ["Write a.txt with hi."]
    assert gate.approved
    gate.new_request()
    assert gate.check(ToolCall("c", "write_file", {}), loop.table.get("write_file")).action == "deny"


async def test_rejection_feedback_reaches_the_model_and_the_gate_stays_shut(tmp_path: Path) -> None:
    approver = Approver((False, "use b.txt instead"), (False, ""))
    replies = [
        call(submit("Write a.txt.")),
        call(write("a.txt", "x"), submit("Write a.txt.")),  # the same plan again asks again
        say("I will ask what they want."),
    ]
    loop, gate, provider = build(replies, tmp_path, approver)
    conv = Conversation()
    await loop.run_turn(conv, "write something")
    first, refused, second = results(conv)
    assert "rejected" in first.content and "use b.txt instead" in first.content
    assert "use b.txt instead" in provider.requests[1].messages[-1].tool_results[0].content
    assert refused.is_error and not (tmp_path / "a.txt").exists()
    assert "no reason" in second.content
    assert approver.shown == ["Write a.txt.", "Write a.txt."] and not gate.approved


async def test_with_nobody_to_approve_the_model_is_told_so(tmp_path: Path) -> None:
    replies = [call(submit("Write a.txt.")), call(write("a.txt", "x")), say("Here is my plan.")]
    loop, gate, _ = build(replies, tmp_path, None)
    conv = Conversation()
    await loop.run_turn(conv, "write a.txt")
    told, refused = results(conv)
    assert told.is_error and "Nobody can approve plans in this mode" in told.content
    assert refused.is_error and not (tmp_path / "a.txt").exists()


async def test_submitting_is_never_asked_about_by_the_inner_policy(tmp_path: Path) -> None:
    class AskEverything:
        def check(self, call, tool):  # noqa: ANN001
            return GateVerdict("ask", "inner policy")

    # SilentUI cannot ask: anything the inner policy wants to ask about is blocked.
    replies = [call(submit("plan")), call(write("a.txt", "x")), say("ok")]
    loop, gate, _ = build(replies, tmp_path, Approver((True, "")), inner=AskEverything())
    conv = Conversation()
    await loop.run_turn(conv, "go")
    approved, asked = results(conv)
    assert approved.content == "Plan approved: go ahead."
    assert asked.is_error and "needs the user's approval" in asked.content  # inner policy still rules


def test_an_inactive_gate_is_just_the_inner_policy(tmp_path: Path) -> None:
    gate = PlanGate(AllowAll())
    writer = make_tool("poke", lambda a, c: "x", reads=False, writes_files=True)
    assert gate.check(ToolCall("c", "poke", {}), writer) == GateVerdict("allow")
    gate.active = True
    assert gate.check(ToolCall("c", "poke", {}), writer).action == "deny"


async def test_submitting_with_plan_mode_off_needs_no_approval(tmp_path: Path) -> None:
    approver = Approver()
    loop, gate, _ = build([call(submit("plan")), say("ok")], tmp_path, approver)
    gate.active = False
    conv = Conversation()
    await loop.run_turn(conv, "go")
    assert "Plan mode is off" in results(conv)[0].content and approver.shown == []


@pytest.mark.parametrize(
    ("argument", "active", "said"),
    [("on", True, "Plan mode is on"), (" OFF ", False, "Plan mode is off"), ("", False, "Plan mode is off")],
)
def test_planmode_command(argument: str, active: bool, said: str) -> None:
    gate = PlanGate(AllowAll())
    gate.approved = True
    message = set_plan_mode(gate, argument)
    assert gate.active is active and message.startswith(said)
    if argument.strip():
        assert gate.approved is False


def test_planmode_command_rejects_other_words_clearly() -> None:
    gate = PlanGate(AllowAll())
    message = set_plan_mode(gate, "maybe")
    assert "Unknown /planmode argument 'maybe'" in message and gate.active is False


def test_the_plan_tool_flags() -> None:
    (tool,) = plan_tools(PlanGate(AllowAll()), None)
    assert tool.name == SUBMIT_PLAN and tool.block_params == ("plan",)
    assert not tool.read_only  # never reused as a duplicate read
    assert tool.json_schema()["required"] == ["plan"]
