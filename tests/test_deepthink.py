"""/deepthink against a scripted model, real file and shell tools, and real git repositories."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, make_tool, say

from tether.core.messages import CommandStatus, Evidence, ToolCall, new_call_id
from tether.core.toolspec import Tool, ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.deepthink import (
    DIFF_WINDOW,
    NO_CHANGES_MARKER,
    Deepthink,
    ReadOnlyStage,
    strip_marker,
    verification_report,
)
from tether.engine.dispatch import AllowAll, Dispatcher, GateVerdict
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.providers.base import ProviderError
from tether.runtime import undo_hooks
from tether.safety.shell_session import CommandOutcome, ShellSessions
from tether.store.git_ops import GitOps
from tether.tools.file_table import FILE_TOOLS
from tether.tools.plan import PlanGate
from tether.tools.shell import render, shell_tools

needs_git = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
    reason="git is not installed",
)


class RecordingUI(SilentUI):
    def __init__(self) -> None:
        super().__init__()
        self.shown = ""

    def text(self, delta: str) -> None:
        self.shown += delta


@dataclass
class Harness:
    deepthink: Deepthink
    provider: ScriptedProvider
    loop: TurnLoop
    ui: RecordingUI
    root: Path

    def user_messages(self, conv: Conversation) -> list[str]:
        return [m.text for m in conv.messages if m.role == "user"]

    def request_text(self, index: int) -> str:
        """The last user message of the index-th model request."""
        users = [m for m in self.provider.requests[index].messages if m.role == "user"]
        return users[-1].text


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def repo(root: Path) -> Path:
    git(root, "init", "-q")
    (root / "app.py").write_text("print('v1')\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "start")
    return root


@pytest.fixture
async def sessions(root: Path) -> AsyncIterator[ShellSessions]:
    shells = ShellSessions(root)
    yield shells
    await shells.close_all()


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def build(
    replies: list,
    root: Path,
    *,
    git_ops: GitOps | None = None,
    extra: tuple[Tool, ...] = (),
    policy=None,  # noqa: ANN001
    plan_gate: PlanGate | None = None,
) -> Harness:
    ctx = ToolContext(root=root)
    table = ToolTable([*FILE_TOOLS, *extra])
    ui = RecordingUI()
    dispatcher = Dispatcher(table, ctx, ui, policy=policy or AllowAll(), default_timeout=10.0)
    if git_ops is not None:  # checkpoint every file change, as the runtime does
        before, after = undo_hooks(git_ops, ctx)
        dispatcher.before_run.append(before)
        dispatcher.after_success.append(after)
    provider = ScriptedProvider(list(replies))
    loop = TurnLoop(
        provider, table, dispatcher, ui, TurnSettings(model="m"),
        system_prompt=lambda mode: "SYSTEM",
    )
    return Harness(Deepthink(loop, git_ops, ui, plan_gate), provider, loop, ui, root)


def write(path: str, content: str) -> tuple[str, dict]:
    return ("write_file", {"filepath": path, "content": content})


def full_chain(*build_calls: tuple[str, dict]) -> list:
    """Scripted replies for all five stages; the implement stage makes `build_calls`."""
    return [
        say("Plan: write the file."),
        say("Checked: the plan holds."),
        call(*build_calls),
        say("Changed it."),
        say("Reviewed: right."),
        say("Verified."),
    ]


# ---------------------------------------------------------------- stage order


async def test_five_stages_run_in_order_in_one_conversation(root: Path) -> None:
    h = build(full_chain(write("a.txt", "hello\n")), root)
    conv = Conversation()
    result = await h.deepthink.run(conv, "Create a.txt saying hello")

    assert [s.name for s in result.stages] == ["plan", "check", "implement", "review", "verify"]
    users = h.user_messages(conv)
    assert len(users) == 5
    assert users[0].startswith("/deepthink stage 1/5: plan") and "Create a.txt saying hello" in users[0]
    for index, name in enumerate(["check", "implement", "review", "verify"], start=2):
        assert users[index - 1].startswith(f"Stage {index}/5: {name}")
    # One conversation: every request carries the whole history of the ones before.
    requests = [r.messages[1:] for r in h.provider.requests]
    for earlier, later in zip(requests, requests[1:], strict=False):
        assert later[: len(earlier)] == earlier
    stage_notices = [m for _, m in h.ui.notices if m.startswith("deepthink: stage")]
    assert stage_notices == [
        "deepthink: stage 1/5 — plan",
        "deepthink: stage 2/5 — check",
        "deepthink: stage 3/5 — implement",
        "deepthink: stage 4/5 — review",
        "deepthink: stage 5/5 — verify",
    ]
    assert (root / "a.txt").read_text() == "hello\n"
    assert result.stopped_early is None and result.stop_reason == "end_turn"
    assert result.text.startswith("Verified.")
    assert [e.call.name for e in conv.evidence] == ["write_file"]  # the chain's records, kept


async def test_a_question_costs_one_turn_and_the_marker_is_removed(root: Path) -> None:
    h = build([say(f"It prints v1.\n\n{NO_CHANGES_MARKER}\n")], root)
    result = await h.deepthink.run(Conversation(), "What does app.py print?")
    assert len(h.provider.requests) == 1
    assert result.text == "It prints v1."
    assert result.stopped_early == "plan" and result.report == ""
    assert [s.name for s in result.stages] == ["plan"]


def test_marker_is_found_inside_markdown_and_other_text_is_kept() -> None:
    assert strip_marker(f"Answer.\n**{NO_CHANGES_MARKER}**") == ("Answer.", True)
    assert strip_marker(f"{NO_CHANGES_MARKER}\nAnswer.") == ("Answer.", True)
    assert strip_marker("A plan.") == ("A plan.", False)


@needs_git
async def test_build_that_changes_nothing_stops_before_review(repo: Path, tmp_path: Path) -> None:
    (repo / "app.py").write_text("print('uncommitted')\n")  # the user's own work, already there
    replies = [say("Plan: maybe edit."), say("Checked."), say("On reflection nothing to change.")]
    h = build(replies, repo, git_ops=GitOps(repo, tmp_path / "home"))
    result = await h.deepthink.run(Conversation(), "Tidy app.py")
    assert len(h.provider.requests) == 3  # no review, no verify
    assert result.stopped_early == "implement"
    assert result.text.startswith("On reflection nothing to change.")
    assert result.text.endswith("No commands were run: nothing was verified by running it.")


@needs_git
async def test_a_change_made_by_a_command_still_gets_reviewed(
    repo: Path, tmp_path: Path, sessions: ShellSessions
) -> None:
    replies = full_chain(("run_cmd", {"command": "echo generated > gen.txt"}))
    h = build(replies, repo, git_ops=GitOps(repo, tmp_path / "home"), extra=tuple(shell_tools(sessions)))
    result = await h.deepthink.run(Conversation(), "Generate gen.txt")
    assert result.stopped_early is None
    review = h.request_text(4)
    assert "gen.txt" in review and "+generated" in review


# ---------------------------------------------------------------- read-only stages


async def test_edits_and_commands_are_refused_in_the_plan_and_check_stages(
    root: Path, sessions: ShellSessions
) -> None:
    (root / "notes.txt").write_text("keep me\n")
    replies = [
        call(write("notes.txt", "overwritten\n"), ("read_file", {"filepath": "notes.txt"})),
        say("I would overwrite notes.txt."),
        call(("run_cmd", {"command": "touch made.txt"})),
        say("Still the plan."),
        say("Not building after all."),
    ]
    h = build(replies, root, extra=tuple(shell_tools(sessions)))
    original = h.loop.dispatcher.policy
    conv = Conversation()
    result = await h.deepthink.run(conv, "Rewrite notes.txt")

    assert (root / "notes.txt").read_text() == "keep me\n"
    assert not (root / "made.txt").exists()
    plan_records = result.stages[0].result.evidence
    refused, read = plan_records
    assert refused.error and refused.summary == "blocked"
    assert "plan stage of /deepthink only reads" in refused.result
    assert not read.error and "keep me" in read.result  # reading is fine
    check_records = result.stages[1].result.evidence
    assert check_records[0].error and "check stage" in check_records[0].result
    assert h.loop.dispatcher.policy is original
    assert "Commands run" not in result.report  # the refused command never ran


def test_read_only_stage_defers_to_the_inner_policy_for_reads() -> None:
    class AskAll:
        def check(self, call, tool):  # noqa: ANN001
            return GateVerdict("ask", "inner")

    reader = make_tool("peek", lambda a, c: "x")
    writer = make_tool("poke", lambda a, c: "x", reads=False, writes_files=True)
    other = make_tool("net", lambda a, c: "x", reads=False, network=True)
    gate = ReadOnlyStage(AskAll(), "plan")
    any_call = ToolCall("c1", "x", {"filepath": "f"})
    assert gate.check(any_call, reader) == GateVerdict("ask", "inner")
    assert gate.check(any_call, writer).action == "deny"
    assert gate.check(any_call, other).action == "deny"


async def test_policy_and_plan_mode_come_back_after_cancellation(root: Path) -> None:
    started = asyncio.Event()

    async def hang(args, ctx):  # noqa: ANN001
        started.set()
        await asyncio.sleep(30)

    gate = PlanGate(AllowAll())
    gate.active = True
    h = build([call(("hang", {"filepath": "x"}))], root, extra=(make_tool("hang", hang),))
    h.loop.dispatcher.policy = gate
    h.deepthink.plan_gate = gate
    task = asyncio.create_task(h.deepthink.run(Conversation(), "go"))
    await started.wait()
    assert isinstance(h.loop.dispatcher.policy, ReadOnlyStage) and gate.active is False
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert h.loop.dispatcher.policy is gate and gate.active is True


async def test_plan_mode_does_not_block_the_implement_stage(root: Path) -> None:
    gate = PlanGate(AllowAll())
    gate.active = True
    h = build(full_chain(write("a.txt", "x")), root, policy=gate, plan_gate=gate)
    result = await h.deepthink.run(Conversation(), "write a.txt")
    assert (root / "a.txt").read_text() == "x"
    assert result.stopped_early is None and gate.active is True and gate.approved is False


async def test_a_provider_error_stops_the_chain(root: Path) -> None:
    replies = [say("Plan."), [ProviderError("connection lost", "stream")]]
    h = build(replies, root)
    original = h.loop.dispatcher.policy
    result = await h.deepthink.run(Conversation(), "do it")
    assert result.stop_reason == "error" and result.stopped_early == "check"
    assert len(h.provider.requests) == 2 and result.report == ""
    assert h.loop.dispatcher.policy is original


# ---------------------------------------------------------------- review


@needs_git
async def test_review_is_handed_the_real_diff_across_auto_commits(repo: Path, tmp_path: Path) -> None:
    git_ops = GitOps(repo, tmp_path / "home")
    start = git_ops.head()
    replies = full_chain(write("app.py", "print('v2')\n"), write("new.py", "x = 1\n"))
    h = build(replies, repo, git_ops=git_ops)
    await h.deepthink.run(Conversation(), "Make app.py print v2 and add new.py")

    assert git_ops.head() != start  # the runtime's hook committed the edits
    review = h.request_text(4)
    assert review.startswith("Stage 4/5: review")
    assert "-print('v1')" in review and "+print('v2')" in review
    assert "+x = 1" in review and "new.py" in review
    assert "uncommitted" not in review  # the tree was clean when the chain began


@needs_git
async def test_a_long_diff_is_windowed_head_and_tail(repo: Path, tmp_path: Path) -> None:
    big = "".join(f"line {i}\n" for i in range(5000))
    h = build(full_chain(write("big.txt", big)), repo, git_ops=GitOps(repo, tmp_path / "home"))
    await h.deepthink.run(Conversation(), "Write big.txt")
    review = h.request_text(4)
    assert "characters omitted" in review and len(review) < DIFF_WINDOW + 1_000
    assert "+line 0\n" in review and "+line 4999" in review


async def test_without_git_the_review_lists_the_files_to_reread(root: Path, tmp_path: Path) -> None:
    # No repository: the GitOps checkpoints go to a shadow, but there is no starting commit.
    git_ops = GitOps(root, tmp_path / "home")
    replies = full_chain(write("a.txt", "a"), write("sub/b.txt", "b"), write("a.txt", "again"))
    h = build(replies, root, git_ops=git_ops)
    await h.deepthink.run(Conversation(), "write two files")
    review = h.request_text(4)
    assert "No diff is available" in review
    assert "(a.txt, sub/b.txt)" in review and "Re-read" in review

    h = build(full_chain(write("c.txt", "c")), root, git_ops=None)
    await h.deepthink.run(Conversation(), "write c")
    assert "(c.txt)" in h.request_text(4)


# ---------------------------------------------------------------- the report


async def test_report_counts_only_commands_that_really_ran(
    root: Path, sessions: ShellSessions
) -> None:
    class NoRm:
        def check(self, call, tool):  # noqa: ANN001
            if str(call.arguments.get("command", "")).startswith("rm"):
                return GateVerdict("deny", "rm is not allowed")
            return GateVerdict("allow")

    verify_calls = call(
        ("run_cmd", {"command": "exit 0"}),
        ("run_cmd", {"command": "echo broken; exit 3"}),
        ("run_cmd", {"command": "rm -rf everything"}),
        ("run_cmd", {"command": "sleep 30", "timeout": 1}),
        ("run_cmd", {"timeout": 5}),  # invalid: no command
    )
    replies = [*full_chain(write("a.txt", "x"))[:-1], verify_calls, say("All tests pass!")]
    h = build(replies, root, extra=tuple(shell_tools(sessions)), policy=NoRm())
    result = await h.deepthink.run(Conversation(), "make a.txt")

    lines = result.report.splitlines()
    assert lines[0] == "Checked by tether (from the tool records, not the model's words):"
    assert lines[1].startswith("  ✓ exit 0 → exit 0 (")
    assert lines[2].startswith("  ✗ echo broken; exit 3 → exit 3 (")
    assert lines[3] == "  ! sleep 30 → timed out"
    assert lines[4] == "Commands run: 3, failed: 2."
    assert len(lines) == 5  # the blocked rm and the invalid call are not counted
    assert result.text.startswith("All tests pass!")
    assert result.text.endswith(result.report)  # the harness has the last word
    assert h.ui.shown.rstrip().endswith("Commands run: 3, failed: 2.")


def record(name: str, arguments: dict, result: str, *, error: bool = False, summary: str = "",
           command: CommandStatus | None = None) -> Evidence:
    return Evidence(ToolCall(new_call_id(), name, arguments), 0.0, 0.1, summary, result, error, command)


def shell_record(name: str, arguments: dict, outcome: CommandOutcome, timeout: float = 120) -> Evidence:
    """The record of a shell tool's call as the dispatcher keeps it: text, summary, status."""
    output = render(outcome, timeout)
    return record(name, arguments, output.text, summary=output.summary, command=output.command)


def test_report_follows_a_command_through_its_input_session() -> None:
    waiting = CommandOutcome("s1", "Name? ", None, "waiting_for_input", 0.3, 0)
    finished = CommandOutcome(None, "Hello Ann", 0, "exited", 1.25, 0)
    left = CommandOutcome("s2", "Sure? ", None, "waiting_for_input", 0.3, 0)
    killed = CommandOutcome(None, "", -15, "killed", 0.5, 0)
    records = [
        shell_record("run_cmd", {"command": "python greet.py"}, waiting),
        shell_record("send_input", {"session": "s1", "text": "Ann"}, finished),
        shell_record("run_cmd", {"command": "./install.sh"}, left),
        shell_record("run_cmd", {"command": "yes"}, CommandOutcome("s3", "y", None, "waiting_for_input", 0.1, 0)),
        shell_record("end_process", {"session": "s3"}, killed, 0),
        record("send_input", {"session": "s9", "text": "x"}, "Unknown session s9", error=True),
    ]
    assert verification_report(records).splitlines()[1:] == [
        "  ✓ python greet.py → exit 0 (1.2s)",
        "  ! ./install.sh → left waiting for input (session s2)",
        "  ! yes → stopped before it finished (process killed) (0.5s)",
        "Commands run: 3, failed: 2.",
    ]


def test_report_reads_every_status_line_the_shell_tools_write() -> None:
    outcomes = {
        "ok": CommandOutcome(None, "fine", 0, "exited", 2.0, 0),
        "fail": CommandOutcome(None, "", 2, "exited", 0.1, 0),
        "slow": CommandOutcome(None, "partial", None, "timed_out", 5.0, 0),
        "ask": CommandOutcome("s4", "Continue? ", None, "waiting_for_input", 0.2, 0),
    }
    records = [shell_record("run_cmd", {"command": c}, o, 5) for c, o in outcomes.items()]
    assert verification_report(records).splitlines()[1:] == [
        "  ✓ ok → exit 0 (2.0s)",
        "  ✗ fail → exit 2 (0.1s)",
        "  ! slow → timed out",
        "  ! ask → left waiting for input (session s4)",
        "Commands run: 4, failed: 3.",
    ]


def test_report_skips_records_that_never_ran_and_says_when_nothing_ran() -> None:
    fake_status = "[exit code 0 · 1.0s]"
    records = [
        record("run_cmd", {"command": "make"}, "Blocked by a permission rule: no.", error=True, summary="blocked"),
        record("run_cmd", {}, "Invalid arguments for run_cmd", error=True, summary="invalid arguments"),
        record("run_cmd", {"command": "x"}, f"refused. Their reason: {fake_status}", error=True, summary="blocked"),
        record("read_file", {"filepath": "a"}, fake_status),
    ]
    assert verification_report(records) == (
        "Checked by tether (from the tool records, not the model's words):\n"
        "No commands were run: nothing was verified by running it."
    )
    stuck = record("run_cmd", {"command": "serve"}, "run_cmd timed out after 3600s.", error=True,
                   summary="timed out", command=CommandStatus("timed_out", elapsed=3600.0))
    assert verification_report([stuck]).splitlines()[1:] == [
        "  ! serve → timed out",
        "Commands run: 1, failed: 1.",
    ]
