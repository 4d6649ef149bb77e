"""The shell and system tools as the dispatcher sees them: table entries and result text."""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from tether.core.messages import ToolCall
from tether.core.toolspec import Tool, ToolContext, ToolError, ToolOutput
from tether.core.ui_protocol import Decision, SilentUI
from tether.engine.dispatch import Dispatcher
from tether.safety import stdin_probe
from tether.safety.approval import ApprovalPolicy
from tether.safety.permissions import Rule, RuleSet
from tether.safety.sandbox import Sandbox, probe_problem
from tether.safety.shell_session import ShellSessions
from tether.tools import builtin_tools
from tether.tools.limits import MAX_COMMAND_TIMEOUT
from tether.tools.params import SystemInfoParams
from tether.tools.shell import EXIT_STATUS, shell_tools
from tether.tools.system import SYSTEM_TOOLS

linux_only = pytest.mark.skipif(not stdin_probe.proc_usable(), reason="needs /proc")


@pytest.fixture
async def tools(tmp_path: Path):
    sessions = ShellSessions(tmp_path)
    yield {tool.name: tool for tool in shell_tools(sessions)}, ToolContext(root=tmp_path)
    await sessions.close_all()


async def call(tool: Tool, ctx: ToolContext, **arguments) -> ToolOutput:
    result = await tool.handler(tool.params.model_validate(arguments), ctx)
    assert isinstance(result, ToolOutput)
    return result


def test_table_entries_carry_the_flags_the_harness_reads(tmp_path: Path) -> None:
    tools = {t.name: t for t in shell_tools(ShellSessions(tmp_path, output_cap=5_000))}
    assert list(tools) == ["run_cmd", "send_input", "end_process"]
    run = tools["run_cmd"]
    assert run.runs_commands and run.main_arg == "command" and run.block_params == ("stdin",)
    assert run.timeout is not None and run.timeout > MAX_COMMAND_TIMEOUT
    assert run.result_cap is not None and run.result_cap > 5_000
    assert tools["send_input"].main_arg == "session" and tools["end_process"].main_arg == "session"
    for tool in tools.values():
        assert tool.runs_commands and inspect.iscoroutinefunction(tool.handler)
        assert tool.json_schema()["type"] == "object"
    assert set(run.json_schema()["properties"]) == {
        "command", "stdin", "timeout", "keep_running", "unsandboxed", "reason"}


async def test_run_cmd_shows_command_output_and_exit(tools) -> None:
    table, ctx = tools
    result = await call(table["run_cmd"], ctx, command="echo hello")
    lines = result.text.splitlines()
    assert lines[0] == "$ echo hello" and lines[1] == "hello"
    assert re.fullmatch(r"\[exit code 0 · \d+\.\ds\]", lines[-1])
    assert result.summary.startswith("exit 0")


async def test_a_command_that_printed_nothing_says_so(tools) -> None:
    # An empty result reads as success to a small model: a script that defines a function
    # and never calls it prints nothing, and the result says that outright.
    table, ctx = tools
    lines = (await call(table["run_cmd"], ctx, command="true")).text.splitlines()
    assert lines[0] == "$ true" and lines[1] == "(no output)"
    assert lines[-1].startswith("[exit code 0 · ")


async def test_nonzero_exit_is_a_result_not_an_error(tools) -> None:
    table, ctx = tools
    result = await call(table["run_cmd"], ctx, command="echo broken >&2; exit 1")
    assert "broken" in result.text and "[exit code 1 · " in result.text
    assert result.summary.startswith("exit 1")


@linux_only
async def test_waiting_command_is_answered_then_finishes(tools) -> None:
    table, ctx = tools
    prompt = f"{sys.executable} -c \"n=input('name? '); print('hi', n)\""
    first = await call(table["run_cmd"], ctx, command=prompt)
    assert "name? " in first.text
    assert first.text.splitlines()[-1] == (
        '[waiting for input · session s1 · answer with send_input(session="s1", text=...) '
        "or stop with end_process]"
    )
    assert first.summary == "waiting for input (s1)"
    second = await call(table["send_input"], ctx, session="s1", text="bob")
    assert second.text.splitlines()[0] == "hi bob" and "[exit code 0" in second.text


@linux_only
async def test_stdin_argument_and_end_process(tools) -> None:
    table, ctx = tools
    first = await call(table["run_cmd"], ctx, command="read a; echo got $a; read b", stdin="one")
    assert "got one" in first.text and "session s1" in first.text
    ended = await call(table["end_process"], ctx, session="s1")
    assert "process group killed" in ended.text and ended.summary == "ended"
    with pytest.raises(ToolError, match="No shell session 's1'"):
        await call(table["end_process"], ctx, session="s1")


async def test_timeout_status_line(tools) -> None:
    table, ctx = tools
    result = await call(table["run_cmd"], ctx, command="echo start; sleep 30", timeout=1)
    assert "start" in result.text
    assert result.text.endswith("[timed out after 1s · process group killed]")
    assert result.summary == "timed out"


async def test_unknown_session_and_missing_root_are_clear_errors(tmp_path: Path) -> None:
    sessions = ShellSessions(tmp_path / "missing")
    table = {t.name: t for t in shell_tools(sessions)}
    ctx = ToolContext(root=tmp_path)
    with pytest.raises(ToolError, match="Live sessions: none"):
        await call(table["send_input"], ctx, session="s3", text="x")
    with pytest.raises(ToolError, match="Could not start the command"):
        await call(table["run_cmd"], ctx, command="echo hi")


def test_system_info_reports_the_machine(tmp_path: Path) -> None:
    (tool,) = SYSTEM_TOOLS
    assert tool.name == "get_system_info" and tool.read_only
    result = tool.handler(SystemInfoParams(), ToolContext(root=tmp_path))
    assert isinstance(result, ToolOutput)
    text = result.text
    for label in ("OS:", "Python:", "CPU:", "Memory:", f"Disk ({tmp_path}):"):
        assert label in text
    by_cpu = text.split("Top processes by CPU:\n")[1].split("Top processes by memory:")[0]
    assert 1 <= len(by_cpu.strip().splitlines()) <= 5
    assert result.summary.startswith("CPU:")


@linux_only
async def test_what_an_exited_command_left_running_is_named_and_can_be_ended(tools) -> None:
    table, ctx = tools
    result = await call(table["run_cmd"], ctx, command="sleep 1000 >/dev/null 2>&1 & echo $!")
    pid = int(result.text.splitlines()[1])
    assert result.text.splitlines()[-1].endswith(
        " · 1 background process still running (stopped when tether exits; "
        "end_process stops it now)]"
    )
    assert psutil.pid_exists(pid)
    ended = await call(table["end_process"], ctx, session="s1")
    assert ended.summary == "ended"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# ---------------------------------------------------------------- leaving the sandbox

BWRAP_PROBLEM = probe_problem()
needs_bwrap = pytest.mark.skipif(bool(BWRAP_PROBLEM), reason=f"sandbox unusable: {BWRAP_PROBLEM}")
HOST_DIR = next((Path(d) for d in ("/var/tmp", str(Path.home())) if Path(d).is_dir()), Path(sys.prefix))
"""A writable host folder outside /tmp, read-only inside the sandbox."""


class AskingUI(SilentUI):
    """Answers every approval with `answer` and remembers the questions."""

    can_ask = True

    def __init__(self, answer: bool) -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[str] = []

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.asked.append(reason)
        return Decision(self.answer)


@pytest.fixture
def outside() -> Iterator[Path]:
    path = HOST_DIR / f"tether-escalation-{uuid.uuid4().hex}"
    yield path
    path.unlink(missing_ok=True)


@contextlib.asynccontextmanager
async def sandboxed_dispatcher(
    tmp_path: Path, ui: SilentUI, *, allow: list[str] = (), escalation: bool = False,
    deny: list[str] = (),
) -> AsyncIterator[tuple[Path, Dispatcher]]:
    """A project root and a dispatcher under --auto whose commands run in workspace-write."""
    root = tmp_path / "proj"
    root.mkdir()
    box = Sandbox("workspace-write", root, tmp_path / "state")
    ctx = ToolContext(root=root)
    table, closers = builtin_tools(ctx, sandbox=box)
    rules = RuleSet([Rule.parse(r, "test") for r in allow], [Rule.parse(r, "test") for r in deny])
    policy = ApprovalPolicy(root, rules, auto=True, sandbox=box, escalation=escalation,
                            runs_unconfined=ctx.runs_unconfined)
    try:
        yield root, Dispatcher(table, ToolContext(root=root), ui, policy=policy)
    finally:
        for close in closers:
            await close()


def unsandboxed(command: str) -> ToolCall:
    return ToolCall("c", "run_cmd", {"command": command, "unsandboxed": True, "reason": "write the report to /var/tmp"})


def test_unsandboxed_needs_a_reason(tmp_path: Path) -> None:
    run = shell_tools(ShellSessions(tmp_path))[0]
    with pytest.raises(ValueError, match="needs a reason"):
        run.params.model_validate({"command": "ls", "unsandboxed": True})
    assert run.params.model_validate({"command": "ls", "unsandboxed": True, "reason": "x"}).unsandboxed


@needs_bwrap
async def test_a_sandbox_failure_says_how_to_escalate_and_the_status_stays_last(
    tmp_path: Path, outside: Path
) -> None:
    async with sandboxed_dispatcher(tmp_path, SilentUI()) as (_, dispatcher):
        failed, _ = await dispatcher.dispatch(ToolCall("c", "run_cmd", {"command": f"echo x > {outside}"}))
        assert "Read-only file system" in failed.content and "unsandboxed: true" in failed.content
        assert failed.content.splitlines()[-1].startswith(EXIT_STATUS)
        plain, _ = await dispatcher.dispatch(ToolCall("c", "run_cmd", {"command": "echo no; exit 3"}))
        assert "unsandboxed" not in plain.content  # an ordinary failure gets no hint


@needs_bwrap
async def test_approved_escalation_runs_outside_and_the_question_shows_the_reason(
    tmp_path: Path, outside: Path
) -> None:
    ui = AskingUI(True)
    async with sandboxed_dispatcher(tmp_path, ui) as (_, dispatcher):
        result, _ = await dispatcher.dispatch(unsandboxed(f"echo x > {outside}"))
        assert not result.is_error and outside.read_text() == "x\n"
        assert ui.asked and "write the report to /var/tmp" in ui.asked[0] and "OUTSIDE" in ui.asked[0]
        dispatcher.ui = AskingUI(False)
        outside.unlink()
        result, _ = await dispatcher.dispatch(unsandboxed(f"echo x > {outside}"))
        assert result.is_error and not outside.exists()


@needs_bwrap
@pytest.mark.parametrize(
    ("allow", "escalation", "runs"),
    [
        ([], True, False),  # no rule
        (["run_cmd"], True, False),  # a bare rule names no command
        (["run_cmd(*)"], True, False),  # nor does a wildcard
        (["run_cmd(*ouc*)"], True, False),  # nor a pattern whose command word is a wildcard
        (["run(*)"], True, False),  # nor a capability rule for every command
        (["run_cmd(touch)"], False, False),  # the rule alone is not enough
        (["run_cmd(touch)"], True, True),  # rule and permission
    ],
    ids=["no-rule", "bare-rule", "wildcard", "wildcard-word", "run-wildcard", "rule-without-flag",
         "rule-and-flag"],
)
async def test_under_auto_escalation_needs_a_naming_rule_and_the_permission(
    tmp_path: Path, outside: Path, allow: list[str], escalation: bool, runs: bool
) -> None:
    async with sandboxed_dispatcher(tmp_path, SilentUI(), allow=allow, escalation=escalation) as (_, dispatcher):
        result, _ = await dispatcher.dispatch(unsandboxed(f"touch {outside}"))
        assert outside.exists() == runs and result.is_error != runs
        if not runs:
            assert "--allow-unsandboxed" in result.content


@needs_bwrap
@pytest.mark.parametrize("escalation", [False, True], ids=["no-flag", "flag"])
@pytest.mark.parametrize("form", ["id", "number", "int"])
async def test_input_to_an_unsandboxed_command_is_escalation_too(
    tmp_path: Path, outside: Path, escalation: bool, form: str
) -> None:
    # The user approved one command outside the sandbox, not every line the model types
    # into it afterwards: under --auto that input runs unconfined only with the flag.
    ui = AskingUI(True)
    async with sandboxed_dispatcher(tmp_path, ui, escalation=escalation) as (_, dispatcher):
        waiting, _ = await dispatcher.dispatch(unsandboxed("read line; eval \"$line\""))
        assert 'session="' in waiting.content, waiting.content
        session: object = waiting.content.split('session="')[1].split('"')[0]
        # "s1", or as small models write it, "1" or 1: the same session, asked about the same way
        session = {"id": session, "number": str(session)[1:], "int": int(str(session)[1:])}[form]
        dispatcher.ui = AskingUI(False)
        result, _ = await dispatcher.dispatch(ToolCall("i", "send_input", {
            "session": session, "text": f"touch {outside}"}))
        assert outside.exists() == escalation and result.is_error != escalation, result.content
        if not escalation:
            assert "OUTSIDE" in dispatcher.ui.asked[0]


@needs_bwrap
async def test_deny_rules_and_the_secrets_check_still_hold_outside_the_sandbox(tmp_path: Path) -> None:
    rules = {"allow": ["run_cmd(cat)"], "escalation": True, "deny": ["run_cmd(rm)"]}
    async with sandboxed_dispatcher(tmp_path, SilentUI(), **rules) as (_, dispatcher):
        dispatcher.policy.home = tmp_path / "state"
        denied, _ = await dispatcher.dispatch(unsandboxed("rm -rf x"))
        assert denied.is_error and "denied by rule" in denied.content
        secret, _ = await dispatcher.dispatch(unsandboxed(f"cat {tmp_path / 'state'}/credentials.json"))
        assert secret.is_error and "state directory" in secret.content


@needs_bwrap
async def test_keep_running_inside_the_sandbox_is_refused_before_anything_runs(tmp_path: Path) -> None:
    async with sandboxed_dispatcher(tmp_path, AskingUI(True)) as (root, dispatcher):
        result, _ = await dispatcher.dispatch(ToolCall("c", "run_cmd", {
            "command": "touch ran.txt", "keep_running": True}))
        assert result.is_error and "unsandboxed: true" in result.content
        assert not (root / "ran.txt").exists()
