"""`!command` in the chat: the user's own shell command runs as a dispatched `run_cmd` marked
as theirs (no question; deny rules still refuse it), its output is shown and goes to the
model with the next request, bounded, the cut said."""

from __future__ import annotations

from pathlib import Path

from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args

from tether.core.messages import ToolCall
from tether.core.toolspec import ToolContext, ToolTable
from tether.core.ui_protocol import Decision
from tether.engine.dispatch import Dispatcher
from tether.engine.user_command import USER_OUTPUT_CHARS, UserCommand, run_user_command
from tether.safety.approval import ApprovalPolicy
from tether.safety.permissions import RuleSet
from tether.safety.shell_session import ShellSessions
from tether.tools.shell import shell_tools

CHAT = "/v1/chat/completions"


def user_texts(body: dict) -> list[str]:
    return [m.get("content") or "" for m in body["messages"] if m["role"] == "user"]


def leave(app: PtyApp) -> str:
    """Wait for the next input line, leave with Ctrl-D; the whole screen."""
    app.wait_for_prompt()
    app.ctrl_d()
    assert app.wait_exit() == 0
    return app.text()


def test_a_bang_line_runs_the_command_without_asking_and_the_next_request_sees_it(
        project: Path, home: Path) -> None:
    (project / "notes.txt").write_text("alpha\nbeta\n")
    with FakeServer([Reply(text="I see alpha and beta.")]) as server, \
            PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("!cat notes.txt && echo made-by-$((6*7))")
        app.wait_for_text("made-by-42")
        app.wait_for_prompt()
        asked_before = server.bodies(CHAT)
        app.line("what did it print?")
        app.wait_for_text("I see alpha and beta.")
        screen = leave(app)
        body = server.bodies(CHAT)[0]
    assert not asked_before  # the command itself asks the model nothing
    assert "Allow" not in screen and "[y]es" not in screen  # typing it was the yes
    assert "Its output is in the conversation" in screen
    context, request = user_texts(body)
    assert "<command>cat notes.txt && echo made-by-$((6*7))</command>" in context
    assert "alpha\nbeta\nmade-by-42" in context and "[exit code 0" in context
    assert request == "what did it print?"


def test_a_deny_rule_refuses_the_users_command_too(project: Path, home: Path) -> None:
    (project / "keep.txt").write_text("precious")
    with FakeServer([]) as server, PtyApp(
            openai_args(server.url, "--deny", "run_cmd(rm *)"), cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("!rm keep.txt")
        app.wait_for_text("It did not run")
        screen = leave(app)
    assert (project / "keep.txt").read_text() == "precious"
    assert "Blocked by a permission rule" in screen


def test_an_empty_bang_says_how_to_use_it(project: Path, home: Path) -> None:
    with FakeServer([]) as server, PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("!")
        app.wait_for_text("Type a shell command after the !")
        leave(app)
        assert not server.bodies(CHAT)


# ---------------------------------------------------------------- through the dispatcher


class Refusing:
    """A UI whose approval says no, noting what it was asked."""

    can_ask = True

    def __init__(self) -> None:
        self.asked: list[ToolCall] = []

    def __getattr__(self, name: str):  # noqa: ANN204 - every other UI event is ignored
        return lambda *args, **kwargs: None

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.asked.append(call)
        return Decision(False)


def dispatcher(root: Path, ui: Refusing) -> tuple[Dispatcher, ShellSessions]:
    sessions = ShellSessions(root)
    table = ToolTable(shell_tools(sessions))
    policy = ApprovalPolicy(root, RuleSet([], []), tools=table)
    return Dispatcher(table, ToolContext(root), ui, policy=policy), sessions  # type: ignore[arg-type]


async def test_long_output_is_cut_in_the_middle_and_the_cut_is_counted(tmp_path: Path) -> None:
    ui = Refusing()
    dispatch, sessions = dispatcher(tmp_path, ui)
    try:
        done = await run_user_command(dispatch.dispatch, "seq 1 20000")
    finally:
        await sessions.close_all()
    text = done.context.text
    assert done.ran and not ui.asked and len(text) < USER_OUTPUT_CHARS + 400
    assert "\n1\n2\n" in text and "\n20000\n" in text and "characters omitted" in text


async def test_a_command_waiting_for_input_is_ended(tmp_path: Path) -> None:
    dispatch, sessions = dispatcher(tmp_path, Refusing())
    try:
        done: UserCommand = await run_user_command(dispatch.dispatch, "read answer; echo answered-$answer")
    finally:
        await sessions.close_all()
    lines = done.context.text.splitlines()
    assert done.ended and "was ended" in done.context.text
    assert not any(line.startswith("answered-") for line in lines)  # it never got an answer


async def test_the_model_cannot_pass_for_the_user(tmp_path: Path) -> None:
    """A model's call with the same arguments still asks: only the dispatch flag marks it."""
    ui = Refusing()
    dispatch, sessions = dispatcher(tmp_path, ui)
    try:
        result, _ = await dispatch.dispatch(ToolCall("c1", "run_cmd", {"command": "echo hi"}))
    finally:
        await sessions.close_all()
    assert [c.arguments for c in ui.asked] == [{"command": "echo hi"}]
    assert result.is_error and "refused" in result.content
