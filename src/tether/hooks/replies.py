"""What a hook's run says: Claude Code's conventions for exit codes and JSON output.

Exit 0 is success: stdout may be a JSON object (`decision`/`reason`, `continue`/
`stopReason`, `systemMessage`, `hookSpecificOutput` with `permissionDecision`,
`updatedInput` and `additionalContext`); for UserPromptSubmit and SessionStart plain
stdout is context for the model. Exit 2 blocks, with stderr as the reason. Any other
exit, a timeout or invalid JSON is a failure: told to the user, and a block only for a
`strict` hook. A hook that cannot start at all is an error of its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..core.ui_protocol import NoticeLevel
from ..engine.dispatch import first_line
from .config import HookSpec
from .runner import HookRun

BLOCK_EXIT = 2
NOT_STARTED_EXITS = (126, 127)
"""bash's exits for a program it cannot find or execute: the hook never started."""
PLAIN_CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")
REASON_CAP = 4000


@dataclass
class HookReply:
    """One hook's answer, read from its run."""

    block: str = ""
    """Why it blocks ("" when it does not)."""
    updated_input: dict[str, Any] | None = None
    context: str = ""
    """Text for the model (PostToolUse, UserPromptSubmit, SessionStart)."""
    message: str = ""
    """Text for the user (systemMessage, a failure)."""
    level: NoticeLevel = "info"
    """How the message is told: "error" for a hook that could not start."""


def read_reply(spec: HookSpec, run: HookRun) -> HookReply:
    """What `run` of `spec` decided."""
    if not run.started:
        return _failure(spec, f"could not start: {run.start_error}", "error")
    if run.exit_code in NOT_STARTED_EXITS:
        why = first_line(run.stderr) or f"exit {run.exit_code}"
        return _failure(spec, f"could not start: {why}", "error")
    if run.timed_out:
        return _failure(spec, f"timed out after {spec.timeout:g}s and was stopped", "warning")
    if run.exit_code == BLOCK_EXIT:
        return HookReply(block=_capped(run.stderr.strip() or run.stdout.strip()
                                       or f"blocked by a {spec.event} hook"))
    if run.exit_code != 0:
        detail = first_line(run.stderr) or first_line(run.stdout)
        return _failure(spec, f"failed (exit {run.exit_code})" + (f": {detail}" if detail else ""),
                        "warning")
    return _success(spec, run.stdout)


def _success(spec: HookSpec, stdout: str) -> HookReply:
    text = stdout.strip()
    if not text.startswith("{"):
        return HookReply(context=_capped(text) if spec.event in PLAIN_CONTEXT_EVENTS else "")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return _failure(spec, f"printed JSON that cannot be read ({exc.msg}, line {exc.lineno})",
                        "warning")
    if not isinstance(data, dict):
        return _failure(spec, "printed JSON that is not an object", "warning")
    return _from_json(spec, data)


def _from_json(spec: HookSpec, data: dict[str, Any]) -> HookReply:
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reply = HookReply(message=_string(data.get("systemMessage")))
    reason = _string(data.get("reason")) or _string(specific.get("permissionDecisionReason"))
    halt = data.get("continue") is False
    if halt and spec.event == "Stop":
        pass  # `continue: false` ends the turn, which is what a Stop hook that blocks would not do
    elif data.get("decision") == "block" or specific.get("permissionDecision") == "deny":
        reply.block = _capped(reason or f"blocked by a {spec.event} hook")
    elif halt:
        reply.block = _capped(_string(data.get("stopReason")) or reason
                              or f"stopped by a {spec.event} hook")
    updated = specific.get("updatedInput", data.get("updatedInput"))
    if isinstance(updated, dict):
        reply.updated_input = updated
    elif updated is not None:
        return _failure(spec, "gave an updatedInput that is not a JSON object", "warning")
    reply.context = _capped(_string(specific.get("additionalContext")))
    return reply


def _failure(spec: HookSpec, what: str, level: NoticeLevel) -> HookReply:
    message = f"{spec.event} hook `{first_line(spec.command)}` ({spec.source}) {what}"
    if spec.strict:  # a strict hook that fails is a hook that blocks
        return HookReply(block=f"a strict {spec.event} hook {what}", message=message, level=level)
    return HookReply(message=message, level=level)


def _string(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _capped(text: str) -> str:
    return text if len(text) <= REASON_CAP else text[:REASON_CAP] + " […]"

