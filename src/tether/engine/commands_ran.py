"""The commands a turn really ran and how each ended, read from the tool records alone (the
evidence's CommandStatus), never from the model's words. /deepthink's report and the answer
checks both read them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.messages import CommandState, Evidence
from .dispatch import first_line

COMMAND_SHOWN = 70
RUN_TOOL = "run_cmd"
FOLLOW_UP_TOOLS = ("send_input", "end_process")


@dataclass
class RanCommand:
    """How one command really ended, as its tool records say."""

    command: str
    state: CommandState
    exit_code: int | None = None
    elapsed: float | None = None
    session: str | None = None

    @property
    def passed(self) -> bool:
        return self.state == "exited" and self.exit_code == 0

    def line(self) -> str:
        shown = first_line(self.command, COMMAND_SHOWN) or "(empty command)"
        took = f" ({self.elapsed:.1f}s)" if self.elapsed is not None else ""
        if self.state == "exited":
            mark = "✓" if self.exit_code == 0 else "✗"
            return f"  {mark} {shown} → exit {self.exit_code}{took}"
        if self.state == "timed_out":
            return f"  ! {shown} → timed out"
        if self.state == "waiting_for_input":
            return f"  ! {shown} → left waiting for input (session {self.session})"
        return f"  ! {shown} → stopped before it finished (process killed){took}"


def commands_run(evidence: Sequence[Evidence]) -> list[RanCommand]:
    """One entry per command that really ran; answers to a waiting command update its entry."""
    ran: list[RanCommand] = []
    waiting: dict[str, RanCommand] = {}
    for record in evidence:
        name = record.call.name
        if name == RUN_TOOL or (record.command is not None and name not in FOLLOW_UP_TOOLS):
            command = _ran(record)  # run_cmd, or a tool that runs one (a skill's script)
            if command is not None:
                ran.append(command)
        elif name in FOLLOW_UP_TOOLS:
            command = waiting.pop(str(record.call.arguments.get("session", "")), None)
            if command is not None:
                _continue(command, record)
        else:
            continue
        if command is not None and command.state == "waiting_for_input" and command.session:
            waiting[command.session] = command
    return ran


def _ran(record: Evidence) -> RanCommand | None:
    """The command's outcome, or None when it never ran (blocked, invalid, failed to start)."""
    command = str(record.call.arguments.get("command", "") or record.call.name)
    outcome = RanCommand(command, "exited")
    if _continue(outcome, record):
        return outcome
    return None


def _continue(outcome: RanCommand, record: Evidence) -> bool:
    """Update `outcome` from one record's command status; False when the record has none
    (the call was refused, invalid, or the command could not start)."""
    status = record.command
    if status is None:
        return False
    outcome.state, outcome.session = status.state, status.session
    if status.state == "exited":
        outcome.exit_code = status.exit_code
    if status.state in ("exited", "killed"):
        outcome.elapsed = (outcome.elapsed or 0.0) + status.elapsed
    return True
