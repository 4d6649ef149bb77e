"""`!command` in the chat: the user's own shell command, run as a `run_cmd` call through the
dispatcher, its output kept in the history as context for the next request.

It crosses the one choke point like a model's call (PreToolUse hooks, deny rules, the keys
guard, the sandbox its handler runs it in, evidence), marked as typed by the user: typing it
is the yes an "ask" would want, so it asks nothing, but what the rules or a hook refuse
stays refused. It never runs `unsandboxed`. A command that stops to wait for input is ended
(a `!` line has no input to give it) with `end_process`, through the dispatcher too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..core.messages import Evidence, Message, ToolCall, ToolResult, new_call_id
from ..core.textclip import keep_ends

SHELL_TOOL = "run_cmd"
END_TOOL = "end_process"
USER_OUTPUT_CHARS = 8_000
"""Characters of a `!command`'s result kept in the history: its head and tail, the middle
counted."""
USER_OUTPUT_HEAD = 3_000


class CallDispatch(Protocol):
    async def __call__(self, call: ToolCall, steps: None = None,
                       by_user: bool = False) -> tuple[ToolResult, Evidence]: ...


@dataclass(frozen=True)
class UserCommand:
    command: str
    result: ToolResult
    ran: bool
    """The command started (False: refused by a rule or a hook before it ran)."""
    ended: bool = False
    """It waited for input and was ended."""

    @property
    def context(self) -> Message:
        """The user message that tells the model what the user ran and what came back."""
        what = "ran this shell command myself" if self.ran else "tried to run this shell command; it was refused"
        ended = "\n[It stopped to wait for input and was ended: a `!` command gets none.]" if self.ended else ""
        return Message.user(
            f"I {what}. Its output, for context:\n<command>{self.command}</command>\n"
            f"<output>\n{bounded(self.result.content)}{ended}\n</output>"
        )


def bounded(text: str) -> str:
    """The result within `USER_OUTPUT_CHARS`, the middle cut and counted."""
    if len(text) <= USER_OUTPUT_CHARS:
        return text
    return keep_ends(text, USER_OUTPUT_HEAD, USER_OUTPUT_CHARS - USER_OUTPUT_HEAD)


async def run_user_command(dispatch: CallDispatch, command: str) -> UserCommand:
    """Run `command` as the user's `run_cmd`; one that waits for input is ended."""
    result, evidence = await dispatch(ToolCall(new_call_id(), SHELL_TOOL, {"command": command}),
                                      by_user=True)
    status = evidence.command
    if status is None or status.state != "waiting_for_input" or not status.session:
        return UserCommand(command, result, ran=status is not None)
    end = ToolCall(new_call_id(), END_TOOL, {"session": status.session})
    ended, _ = await dispatch(end, by_user=True)
    whole = ToolResult(result.call_id, result.name, result.content + "\n" + ended.content,
                       result.is_error)
    return UserCommand(command, whole, ran=True, ended=True)
