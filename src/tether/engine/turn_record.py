"""What one turn has done: the loop records each call here, and hands out frozen snapshots.

`TurnRecord` is the loop's own bookkeeping (no one else writes to it); `TurnEvidence` is a
snapshot of it, immutable, with the reply being judged. The rules that read a turn's
evidence (assist/rules.py) and the reasons a call waits (assist/call_guard.py) see only
snapshots: a rule is a pure function of one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..core.messages import Evidence, ToolCall
from ..core.toolspec import ToolError
from .dispatch import first_line

CODE_SUFFIXES = frozenset({
    ".py", ".js", ".mjs", ".ts", ".sh", ".bash", ".rb", ".go", ".rs", ".java", ".kt", ".c",
    ".h", ".cc", ".cpp", ".cs", ".php", ".pl", ".lua", ".swift", ".r", ".jl",
})
"""Files whose change is worth running before the answer (a config value needs no run)."""
SEEN_TEXT_CAP = 400_000
READS = ("read_file",)
CHANGES = ("write_file", "edit_file")


class RequestView(Protocol):
    """The request as read once (assist/request.py's `RequestReading`), for the rules."""

    @property
    def asks_question(self) -> bool:
        """A question about the project that asks neither for a change nor for a run."""
        ...

    @property
    def change(self) -> bool:
        """Asks for a change to the project."""
        ...

    @property
    def asks_only_to_run(self) -> bool:
        """Asks to run something and for no change to the files."""
        ...

    @property
    def files(self) -> tuple[str, ...]:
        """The project's files the request names (project-relative), in the request's order."""
        ...

    @property
    def named(self) -> tuple[str, ...]:
        """The files the request names, those the project has first."""
        ...


def failed(evidence: Evidence) -> bool:
    """The call failed, or what it ran did (a non-zero exit, a timeout)."""
    summary = evidence.summary
    return evidence.error or summary == "timed out" or (
        summary.startswith("exit ") and not summary.startswith("exit 0")
    )


def waiting_prompt(result: str) -> str:
    """The question a waiting program asked last: the last line of its output above the
    status line ("Your guess:")."""
    lines = [line for line in result.splitlines() if line.strip() and not line.startswith("[")]
    return lines[-1] if lines else ""


@dataclass(frozen=True)
class TurnEvidence:
    """One turn's evidence at one moment, and the reply being judged ("" between calls)."""

    request: str
    reading: RequestView | None = None
    """The request as read once (assist/request.py); None: nothing is known of it."""
    reply: str = ""
    result_first: bool = False
    """The reply began with a tool result and was cut there (text protocol)."""
    calls: int = 0
    acted: bool = False
    """A file tool changed something, or a command ran and succeeded."""
    last_call: ToolCall | None = None
    """The turn's last call, when it worked."""
    last_failure: str | None = None
    """The first line of the last call's result, when it failed."""
    last_warned: bool = False
    """The last call's result carries a tool's warning (broken Python, a missing import, ...)."""
    failures: frozenset[str] = frozenset()
    """The keys (name and arguments) of the calls that failed."""
    seen: tuple[str, ...] = ()
    """Each call's arguments and result (capped): what the turn has been shown."""
    read_paths: frozenset[Path] = frozenset()
    touched: Mapping[Path, str] = field(default_factory=dict)
    """Files read or edited (resolved path -> as the model named it)."""
    written: frozenset[str] = frozenset()
    """The paths write_file and edit_file changed, as the calls named them."""
    unchecked: str | None = None
    """The code file changed last since the last command that ran (None: checked or none)."""
    commands: frozenset[str] = frozenset()
    """The commands run_cmd ran."""
    inputs_sent: int = 0
    """How many send_input calls ran."""
    waiting: str | None = None
    """The session of the last command still waiting for input (None: none is)."""
    waiting_prompt: str = ""
    tools: Mapping[str, str | None] = field(default_factory=dict)
    """The tools on offer and each one's main argument."""
    root: Path | None = None

    @property
    def asks_question(self) -> bool:
        """The request is a question about the project and asks for no change and no run."""
        return self.reading is not None and self.reading.asks_question

    @property
    def asks_change(self) -> bool:
        return self.reading is not None and self.reading.change and not self.reading.asks_question

    @property
    def asks_to_run(self) -> bool:
        return self.reading is not None and self.reading.asks_only_to_run


@dataclass
class TurnRecord:
    """The loop's record of one turn, fed each finished call; `snapshot` freezes it."""

    request: str
    reading: RequestView | None = None
    tools: dict[str, str | None] = field(default_factory=dict)
    root: Path | None = None
    resolve: Callable[[str], Path] | None = None
    """The path a call names, resolved as the tools resolve it (raises when it cannot be)."""
    calls: int = 0
    acted: bool = False
    last_call: ToolCall | None = None
    last_failure: str | None = None
    last_warned: bool = False
    failures: set[str] = field(default_factory=set)
    seen: list[str] = field(default_factory=list)
    seen_chars: int = 0
    read_paths: set[Path] = field(default_factory=set)
    touched: dict[Path, str] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    unchecked: str | None = None
    commands: set[str] = field(default_factory=set)
    inputs_sent: int = 0
    waiting: str | None = None
    waiting_prompt: str = ""

    def saw(self, key: str, evidence: Evidence, changes_things: bool) -> None:
        """Record one finished call (`key`: its name and arguments)."""
        self.calls += 1
        call = evidence.call
        self._saw_path(call)
        self.last_call = call if not failed(evidence) else None
        if self.seen_chars < SEEN_TEXT_CAP:
            # the call's own arguments count as seen: a number in a path it named was not made up
            seen = " ".join(str(v) for v in call.arguments.values()) + "\n" + evidence.result
            self.seen.append(seen)
            self.seen_chars += len(seen)
        if evidence.command is not None:
            waits = evidence.command.state == "waiting_for_input"
            self.waiting = evidence.command.session if waits else None
            self.waiting_prompt = waiting_prompt(evidence.result) if waits else ""
        self.inputs_sent += call.name == "send_input"
        if call.name == "run_cmd":
            self.commands.add(str(call.arguments.get("command", "")).strip())
        if failed(evidence):
            self.last_failure = first_line(evidence.result, 160) or evidence.summary
            self.failures.add(key)
            return
        self.last_failure, self.last_warned = None, "\nWarning: " in evidence.result
        self.acted = self.acted or changes_things
        self._saw_success(call)

    def noted(self, text: str, commands: Sequence[str] = ()) -> None:
        """What the harness added to the latest results (the check after a change) and the
        commands it ran for it: a warning in it is the last call's, as if its result had said
        it, and the change is no longer unchecked."""
        if commands:
            self.commands.update(command.strip() for command in commands)
            self.unchecked = None
        if self.seen_chars < SEEN_TEXT_CAP:
            self.seen.append(text)
            self.seen_chars += len(text)
        self.last_warned = self.last_warned or text.startswith("Warning: ") or "\nWarning: " in text

    def _saw_path(self, call: ToolCall) -> None:
        """A file the call read or edited, whatever came of it (the model has seen it named)."""
        filepath = call.arguments.get("filepath")
        if call.name not in READS + CHANGES or not isinstance(filepath, str) or self.resolve is None:
            return
        try:
            path = self.resolve(filepath).resolve()
        except (OSError, RuntimeError, ValueError, ToolError):  # the call itself says why
            return
        if call.name in READS:
            self.read_paths.add(path)
        if call.name != "write_file":
            self.touched[path] = filepath

    def _saw_success(self, call: ToolCall) -> None:
        if call.name == "run_cmd":
            self.unchecked = None
        elif call.name in CHANGES:
            path = call.arguments.get("filepath")
            if isinstance(path, str):
                self.written.add(os.path.normpath(path))
                if Path(path).suffix.lower() in CODE_SUFFIXES:
                    self.unchecked = path

    def snapshot(self, reply: str = "", result_first: bool = False) -> TurnEvidence:
        return TurnEvidence(
            request=self.request, reading=self.reading, reply=reply, result_first=result_first,
            calls=self.calls, acted=self.acted, last_call=self.last_call,
            last_failure=self.last_failure, last_warned=self.last_warned,
            failures=frozenset(self.failures), seen=tuple(self.seen),
            read_paths=frozenset(self.read_paths), touched=dict(self.touched),
            written=frozenset(self.written), unchecked=self.unchecked,
            commands=frozenset(self.commands), inputs_sent=self.inputs_sent,
            waiting=self.waiting, waiting_prompt=self.waiting_prompt,
            tools=dict(self.tools), root=self.root,
        )
