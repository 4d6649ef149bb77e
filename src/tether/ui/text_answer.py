"""`tether -p` in text mode: the answer on stdout, and how the run ended.

On a terminal the answer streams as it arrives; elsewhere (a pipe, a file) it is written
whole at the end, so a script reads exactly the answer. Either way the end is told: an
interrupted run keeps its partial answer and says so, the step cap and a reply cut off at
the output token limit get a line on stderr, and a run that ends without any answer says
what happened on stdout instead of leaving it empty (at the step cap, or when the model's
last reply was empty: the last line a script or a user reads is never a silent blank).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..safety.visible import visible

NO_ANSWER_AT_CAP = ("(no answer: the step cap was reached before the model wrote one; tools "
                    "were off for its last reply, so a call in it did not run)")
NO_ANSWER_EMPTY = "(no answer: the model ended its turn with an empty reply{calls})"


def no_answer_note(calls: int) -> str:
    """Said instead of an empty answer: what happened, and where the work it did is shown."""
    done = f"; it made {calls} tool call(s)" if calls else ""
    return NO_ANSWER_EMPTY.format(calls=done)


class TextAnswer:
    """What text mode writes to stdout, and its closing notes on stderr."""

    def __init__(self, write: Callable[[str], None], note: Callable[[str], None],
                 streams: bool) -> None:
        self.write = write
        """Writes to stdout (the writer's broken-pipe handling included)."""
        self.note = note
        """Writes one line to stderr."""
        self.streams = streams
        """stdout is a terminal: write text as it arrives."""
        self.max_steps: int | None = None
        self._since_tool: list[str] = []
        """Reply text since the last tool call: the answer so far, kept for an interrupt."""
        self._mid_line = False

    def text(self, delta: str) -> None:
        self._since_tool.append(delta)
        if self.streams and delta:
            self.write(visible(delta))
            self._mid_line = not delta.endswith("\n")

    def tool_started(self) -> None:
        """Text before a call was the model's narration, not the answer."""
        self._since_tool = []

    def before_progress(self) -> None:
        """A stderr line comes (the same terminal, often): end a streamed line first."""
        if self._mid_line:
            self.write("\n")
            self._mid_line = False

    def finish(self, result: dict[str, Any]) -> None:
        stop = result.get("stop_reason", "")
        answer = self._answer(result)
        streamed = self.streams and any(self._since_tool)
        if streamed:
            self.before_progress()
        elif answer:  # printed to a terminal as often as not: its escapes are drawn, not obeyed
            self.write(visible(answer.rstrip("\n")) + "\n")
        elif stop == "max_steps":
            self.write(NO_ANSWER_AT_CAP + "\n")
        elif stop == "end_turn":
            self.write(no_answer_note(len(result.get("tool_calls") or [])) + "\n")
        self._closing_note(stop, bool(answer or streamed))

    def _answer(self, result: dict[str, Any]) -> str:
        if result.get("stop_reason") == "cancelled":
            return "".join(self._since_tool)
        if result["is_error"]:
            return str(result.get("partial_result", ""))
        return str(result["result"])

    def _closing_note(self, stop: str, answered: bool) -> None:
        if stop == "cancelled":
            self.note("interrupted: " + ("the answer above is incomplete" if answered
                                         else "no answer had arrived"))
        elif stop == "max_steps":
            cap = f" ({self.max_steps} steps)" if self.max_steps else ""
            self.note(f"stopped at the step cap{cap}: the answer may be incomplete; "
                      "--max-steps raises the cap")
        elif stop == "max_tokens":
            self.note("warning: the answer was cut off at the output token limit; it is incomplete")
