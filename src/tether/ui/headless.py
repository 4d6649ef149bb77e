"""The one-shot writer behind `tether -p`: text, json or stream-json.

text: the final answer on stdout, progress on stderr. json: one result object.
stream-json: one JSON object per line as things happen, the result object last.
Nobody is there to approve, so `can_ask` is False and side effects are refused
unless a rule or --auto allowed them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from ..core.messages import INVALID_JSON_KEY, Evidence, ToolCall, Usage, arguments_fields
from ..core.ui_protocol import Decision, NoticeLevel
from ..engine.dispatch import NEEDS_APPROVAL, first_line
from ..host import clean_data, discard_output, write_safely, writes_utf8
from ..safety.visible import visible
from .contract import SCHEMA_VERSION, RunRecord
from .text_answer import TextAnswer

FORMATS = ("text", "json", "stream-json")
LINE_BREAKS_ESCAPED = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"})
"""Characters a reader's splitlines() takes for line ends (json.dumps escapes the others);
inside a JSON string the escape means the same, so one object stays one line."""


def outcome_mark(evidence: Evidence) -> str:
    """✓ worked, ✗ the call failed, ! it ran but what it ran failed (a non-zero exit, a timeout)."""
    if evidence.error:
        return "✗"
    if evidence.command is not None and evidence.command.failed:
        return "!"
    return "✓"


class HeadlessUI:
    can_ask = False

    def __init__(
        self, output_format: str = "text", out: TextIO | None = None, err: TextIO | None = None,
        auto: bool = False, on_output_closed: Callable[[], None] | None = None,
    ) -> None:
        self.format = output_format
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.auto = auto
        self.on_output_closed = on_output_closed
        """Called once when stdout's reader goes away (`tether -p ... | head`): the run
        should end, as a program killed by SIGPIPE would."""
        self.closed: set[int] = set()
        """ids of the streams whose reader went away; nothing more is written to them."""
        self.answer = TextAnswer(lambda text: self._write(self.out, text), self._stderr_line,
                                 streams=is_terminal(self.out)) if output_format == "text" else None
        """text mode's stdout: the answer (streamed on a terminal) and how the run ended."""
        self.record = RunRecord()
        """The run's tool calls and commits, for the result's files, commits and refusals."""
        self.checks: list[str] = []
        """What the answer checks found: printed after the answer in text mode."""
        self.session_id = ""
        """The saved session the run's exchange goes to: the result names it (json formats)."""
        self.before_init: list[dict[str, Any]] | None = []
        """stream-json's notices sent before the init event (a missing sandbox, say found while
        the runtime is built): held, so the stream starts with init as the contract says; None
        once init is out."""

    # ------------------------------------------------------------ UI protocol

    def text(self, delta: str) -> None:
        if self.format == "stream-json":
            self.emit({"type": "text", "text": delta})
        elif self.answer is not None:
            self.answer.text(delta)

    def thinking(self, delta: str) -> None:
        if self.format == "stream-json":
            self.emit({"type": "thinking", "text": delta})

    def tool_start(self, call: ToolCall) -> None:
        if self.format == "stream-json":
            self.emit({"type": "tool_start", "id": call.id, "name": call.name,
                       **arguments_fields(call.arguments)})
        elif self.answer is not None:
            self.answer.tool_started()
            self.progress(f"→ {call.name} {describe_arguments(call.arguments)}")

    def request_ended(self, usage: Usage, elapsed_ms: float, stop_reason: str) -> None:
        if self.format == "stream-json":
            self.emit({"type": "request", "usage": usage.as_dict(),
                       "elapsed_ms": round(elapsed_ms, 1), "stop_reason": stop_reason})

    def tool_end(self, evidence: Evidence) -> None:
        self.record.saw(evidence)
        if self.format == "stream-json":
            self.emit({"type": "tool_end", "id": evidence.call.id, **evidence.as_dict()})
        elif self.format == "text":
            # a command's summary carries its own time: one duration on the line
            took = "" if evidence.command is not None else f" ({evidence.elapsed:.1f}s)"
            self.progress(f"  {outcome_mark(evidence)} {evidence.summary}{took}")
            if evidence.summary in ("blocked", "blocked by a hook"):  # say why, so the user knows what would allow it
                hint = "" if self.auto or NEEDS_APPROVAL not in evidence.result else (
                    " Use --auto or --allow RULE to let such calls run.")
                self.progress("    " + first_line(evidence.result, 200) + hint)

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        return Decision(False, "nobody is available to approve in one-shot mode")

    def notice(self, message: str, level: NoticeLevel = "info") -> None:
        if self.format == "stream-json":
            event = {"type": "notice", "level": level, "message": message}
            if self.before_init is not None:
                self.before_init.append(event)
            else:
                self.emit(event)
        else:
            prefix = {"error": "error: ", "warning": "warning: "}.get(level, "")
            self.progress(prefix + message)

    def answer_checks(self, warnings: list[str]) -> None:
        """stream-json: one line now; text: after the answer, on stderr; json: the result's
        `checks`."""
        self.checks = list(warnings)
        if self.format == "stream-json":
            self.emit({"type": "checks", "checks": self.checks})

    def agent_event(self, event: dict[str, Any]) -> None:
        """A sub-agent's event: its own stream-json line (with the parent call's id); in text
        mode its tool calls and its end as progress lines naming the agent."""
        if self.format == "stream-json":
            self.emit(event)
        elif self.format == "text":
            name = event.get("agent_name", "agent")
            if event["type"] == "agent_tool_start":
                self.progress(f"  [agent {name}] → {event['name']} {describe_arguments(event['arguments'])}")
            elif event["type"] == "agent_end":
                self.progress(f"  [agent {name}] {event['state']} after {event['steps']} steps")
            elif event["type"] == "agent_notice":
                self.progress(f"  [agent {name}] {event['message']}")

    # ------------------------------------------------------------ writing

    def emit(self, obj: dict[str, Any]) -> None:
        """One JSON line, with the contract's `schema_version`. Strings are cleaned of what
        UTF-8 cannot encode, and a stream that is not UTF-8 gets pure-ASCII JSON (\\u
        escapes), so the line is always valid."""
        obj = {"type": obj["type"], "schema_version": SCHEMA_VERSION, **obj}
        line = json.dumps(clean_data(obj), ensure_ascii=not writes_utf8(self.out), default=str)
        self._write(self.out, line.translate(LINE_BREAKS_ESCAPED) + "\n")

    def progress(self, line: str) -> None:
        if self.answer is not None:
            self.answer.before_progress()
        self._stderr_line(line)

    def _stderr_line(self, line: str) -> None:
        self._write(self.err, visible(line) + "\n")  # tool lines carry the model's text

    def _write(self, stream: TextIO, text: str) -> None:
        if id(stream) in self.closed:
            return
        try:
            write_safely(stream, text)
        except BrokenPipeError:
            self.closed.add(id(stream))
            discard_output(stream)
            if stream is self.out and self.on_output_closed is not None:
                self.on_output_closed()

    def init(self, info: dict[str, Any]) -> None:
        if self.format == "stream-json":
            self.emit({"type": "init", **info})
            self._release_notices()
        elif self.answer is not None:
            self.answer.max_steps = info.get("max_steps")

    def result(self, obj: dict[str, Any]) -> None:
        """Write the final result in the chosen format (an error's partial answer too)."""
        if self.answer is not None:
            self.answer.finish(obj)
            for warning in self.checks:  # after the answer, on stderr
                self.progress(f"check: {warning}")
        else:
            self._release_notices()  # a run that ended before init still says what it noticed
            session = {"session_id": self.session_id} if self.session_id else {}
            self.emit({**obj, **session, **self.record.fields()})

    def _release_notices(self) -> None:
        held, self.before_init = self.before_init or [], None
        for event in held:
            self.emit(event)


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # a closed or odd stream
        return False


def describe_arguments(arguments: dict[str, Any], limit: int = 80) -> str:
    """The main argument first and short: what a person needs to see on one line, with
    control characters made visible and a count of the lines not shown."""
    if INVALID_JSON_KEY in arguments:
        raw = str(arguments[INVALID_JSON_KEY])
        return _one_line(f"(arguments that are not valid JSON: {raw})", limit)
    for key in ("command", "filepath", "path", "pattern", "source", "url", "query"):
        if key in arguments:
            return _one_line(str(arguments[key]), limit)
    return _one_line(json.dumps(arguments, ensure_ascii=False), limit)


def _one_line(text: str, limit: int) -> str:
    shown = visible(text)
    more = sum(1 for line in shown.split("\n") if line.strip()) - 1
    head = first_line(shown, limit)
    return f"{head} (+{more} more lines)" if more > 0 else head
