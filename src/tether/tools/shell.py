"""The shell tools: run a command, answer it when it waits for input, or end it.

`run_cmd` never hangs on a prompt: a command that waits for input comes back
with a session id, and the model answers with `send_input` or stops it with
`end_process`. Each command enforces its own timeout (stopping everything it
started), so the tool's dispatcher timeout is set well above it. What a command
leaves running in the background is stopped when tether exits, unless the call
says `keep_running` (which always needs the user's yes).

Inside a sandbox, a command that fails the way the sandbox makes commands fail
gets a line saying so; `unsandboxed: true` with a `reason` asks to run it
outside (the approval policy decides who must agree). Inside the sandbox its
background processes end with the command (a pid namespace), so `keep_running`
needs `unsandboxed` too.

Commands and their processes, in detail:

`ShellSessions` (in `safety/shell_session.py`) runs each command as `bash -c` in its own session with a
stdin pipe it keeps, and returns at exit, at the timeout, or when `/proc` shows the command
blocked reading that pipe and the output pipe is empty (`_Session.unread`, FIONREAD: a prompt
written while `/proc` was being read is still in the pipe, so "reading" alone does not mean the
prompt was seen). `processes.CommandProcesses` keeps every process of a command findable:

- each command's environment gets `TETHER_COMMAND=<run token>.<session id>` (`.keep` appended
  for `keep_running`); `/proc/PID/environ` shows it for life, whatever group or session the
  process moved to;
- tether is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`, set when the first
  `CommandProcesses` is made), so orphans become its children; only those environments are read;
- a command's family is the marked processes, its first process's group and session (while that
  pid names the same process), everything seen in it before (pid and start time), and all their
  descendants; a sweep every second (`ShellSessions._sweep_while_tracked`) remembers families and
  reaps adopted zombies; only ones it saw in a family, never a child tether started itself
  (that would steal a `Popen`'s exit status). An orphan that ends before any scan saw it stays a
  zombie until tether exits.
- a *stranger* (`CommandProcesses.strangers`) is an adopted orphan no scan attributed: a direct
  child of tether in another session than tether's (git and the regex worker stay in tether's),
  not a command's first process, not one of tether's own helpers in a session of their own
  (`processes.OWN_HELPERS`: a stdio MCP server registers there when it starts, and what runs in
  its session is spared with it, whichever runtime's shell sessions sweep: `/connect` closes the
  old runtime's while the new one's servers run), carrying no marker of this run (it ran `env -i` and
  `setsid -f`, and its parent exited between scans). Each scan gives it to the one command whose
  life (its first process's start time to the first scan that found nothing of it alive) covers
  its start time; with two candidates it stays a stranger, and `close_all` stops every stranger
  at exit. An opt-in post-commit hook runs in its own session too: stopped if it is still
  running when tether exits.

`stop_processes` sends SIGTERM, looks again for anything started meanwhile, and SIGKILLs what is
left after `KILL_GRACE`; psutil re-checks every pid before a signal. An exited command that left
processes stays in `ShellSessions._finished`, so `end_process` can still stop them and
`close_all` (the runtime's closer) stops them at exit, sparing `keep_running` commands. The
approval policy asks for every `keep_running` call (`approval.keep_running_verdict`), above
rules and `--auto`. `cli.until_terminated` turns SIGTERM and SIGHUP (and a `cli.RunStopper`
call: `HeadlessUI` makes one when a write to stdout fails with a closed pipe, after pointing the
descriptor at /dev/null so the interpreter's last flush cannot fail) into a cancellation of the
run, so the same `finally` clean-up runs as after Ctrl-C; `App.run_cancellable` re-raises such
a cancellation after saving the session instead of treating it as a stopped turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.core.messages import CommandStatus
from tether.core.toolspec import Tool, ToolContext, ToolError, ToolOutput
from tether.safety.shell_session import CommandOutcome, SessionError, ShellSessions

from .limits import DEFAULT_COMMAND_TIMEOUT, params_named

if TYPE_CHECKING:
    from tether.safety.sandbox import Sandbox

    from .params import EndProcessParams, RunCmdParams, SendInputParams

DISPATCH_TIMEOUT = 3600.0
"""Above any command timeout plus the kill grace, so the command's own timeout always wins."""
RESULT_MARGIN = 2_000
"""Room for the command line and status line on top of the captured output."""

# How each status line begins (for the model; reports read `ToolOutput.command` instead).
EXIT_STATUS = "[exit code "
NO_OUTPUT = "(no output)"
TIMED_OUT_STATUS = "[timed out after "
WAITING_STATUS = "[waiting for input · session "
ENDED_STATUS = "[ended · process group killed · "


def _seconds(value: float) -> str:
    return f"{value:.1f}s"


def status_line(outcome: CommandOutcome, timeout: float) -> str:
    """The last line of a result: how the command ended, or how to answer it."""
    if outcome.state == "waiting_for_input":
        sid = outcome.session_id
        return (
            f"{WAITING_STATUS}{sid} · answer with "
            f'send_input(session="{sid}", text=...) or stop with end_process]'
        )
    if outcome.state == "timed_out":
        return f"{TIMED_OUT_STATUS}{timeout:g}s · process group killed]"
    if outcome.state == "killed":
        return f"{ENDED_STATUS}{_seconds(outcome.elapsed)}]"
    return f"{EXIT_STATUS}{outcome.exit_code} · {_seconds(outcome.elapsed)}{_background_note(outcome)}]"


def _background_note(outcome: CommandOutcome) -> str:
    """What an exited command left running, and who stops it."""
    count = outcome.background
    if not count:
        return ""
    what = f"{count} background process{'es' if count > 1 else ''}"
    fate = "kept running after tether exits" if outcome.kept else "stopped when tether exits"
    return f" · {what} still running ({fate}; end_process stops it now)"


def summary_of(outcome: CommandOutcome) -> str:
    if outcome.state == "waiting_for_input":
        return f"waiting for input ({outcome.session_id})"
    if outcome.state == "timed_out":
        return "timed out"
    if outcome.state == "killed":
        return "ended"
    return f"exit {outcome.exit_code} · {_seconds(outcome.elapsed)}"


def command_status(outcome: CommandOutcome) -> CommandStatus:
    """The typed outcome the reports read (the status line says the same to the model)."""
    return CommandStatus(outcome.state, outcome.exit_code, outcome.elapsed, outcome.session_id)


def render(outcome: CommandOutcome, timeout: float, header: str = "", note: str = "") -> ToolOutput:
    """The result: an optional header line, the output, a note, then the status line, with
    the outcome itself in `command`."""
    lines = [header] if header else []
    if outcome.output:
        lines.append(outcome.output.rstrip("\n"))
    elif outcome.state == "exited":
        lines.append(NO_OUTPUT)  # said outright: a small model reads an empty result as success
    if note:
        lines.append(note)
    lines.append(status_line(outcome, timeout))
    return ToolOutput("\n".join(lines), summary=summary_of(outcome), command=command_status(outcome))


def confines(sandbox: Sandbox | None) -> bool:
    return sandbox is not None and sandbox.confinement != "off"


def sandbox_hint(outcome: CommandOutcome, sandbox: Sandbox | None) -> str:
    """How to escalate, when a sandboxed command failed the way the sandbox makes them fail."""
    if sandbox is None or outcome.state != "exited" or outcome.exit_code == 0:
        return ""
    return sandbox.failure_hint(outcome.output)


def shell_tools(sessions: ShellSessions, sandbox: Sandbox | None = None) -> list[Tool]:
    """run_cmd, send_input and end_process, all working on `sessions` (confined by `sandbox`)."""

    async def run_cmd(args: RunCmdParams, ctx: ToolContext) -> ToolOutput:
        timeout = args.timeout or DEFAULT_COMMAND_TIMEOUT
        if args.keep_running and not args.unsandboxed and confines(sandbox):
            raise ToolError(
                "keep_running cannot work inside the sandbox: everything a sandboxed command "
                "starts ends with it. Nothing was run. If it must outlive tether, call run_cmd "
                "again with keep_running, unsandboxed: true and a reason (the user is asked)."
            )
        try:
            outcome = await sessions.run(
                args.command, stdin=args.stdin, timeout=timeout, keep_running=args.keep_running,
                unconfined=args.unsandboxed,
            )
        except SessionError as exc:
            raise ToolError(str(exc)) from None
        except OSError as exc:
            raise ToolError(f"Could not start the command: {exc}") from None
        note = "" if args.unsandboxed else sandbox_hint(outcome, sandbox)
        return render(outcome, timeout, header=f"$ {args.command}", note=note)

    async def send_input(args: SendInputParams, ctx: ToolContext) -> ToolOutput:
        timeout = args.timeout or DEFAULT_COMMAND_TIMEOUT
        try:
            outcome = await sessions.send_input(
                args.session, args.text, timeout=timeout, eof=args.eof
            )
        except SessionError as exc:
            raise ToolError(str(exc)) from None
        return render(outcome, timeout)

    async def end_process(args: EndProcessParams, ctx: ToolContext) -> ToolOutput:
        try:
            outcome = await sessions.end(args.session)
        except SessionError as exc:
            raise ToolError(str(exc)) from None
        return render(outcome, 0)

    cap = sessions.output_cap + RESULT_MARGIN
    return [
        Tool(
            name="run_cmd",
            description=(
                "Run a shell command (bash -c) in the project root and return its output and "
                "exit code. If the command stops to wait for input, you get a session id: answer "
                "with send_input or stop it with end_process. Give known answers up front in "
                "`stdin`. The command is killed with all its children after `timeout` seconds; what "
                "it leaves running in the background is stopped when tether exits. It may run in a "
                "sandbox (no network, read-only outside the project and .git); the result says "
                "when the sandbox stopped it."
            ),
            params=params_named("RunCmdParams"),
            handler=run_cmd,
            runs_commands=True,
            main_arg="command",
            block_params=("stdin",),
            result_cap=cap,
            timeout=DISPATCH_TIMEOUT,
        ),
        Tool(
            name="send_input",
            description=(
                "Send a line of input to a command that is waiting for input (a session from "
                "run_cmd), then return its new output, as run_cmd does."
            ),
            params=params_named("SendInputParams"),
            handler=send_input,
            runs_commands=True,
            main_arg="session",
            result_cap=cap,
            timeout=DISPATCH_TIMEOUT,
        ),
        Tool(
            name="end_process",
            description=(
                "Stop a command session from run_cmd, killing it and every process it started "
                "(also the background processes of a command that has exited)."
            ),
            params=params_named("EndProcessParams"),
            handler=end_process,
            runs_commands=True,
            main_arg="session",
            result_cap=cap,
        ),
    ]
