"""/deepthink: one request worked through as five stages of one conversation.

plan -> check -> implement -> review -> verify. Each stage is an ordinary
`run_turn` on the same `Conversation`, with a short stage instruction as the
user message. The first two stages only read: their calls pass through a
policy that refuses anything with side effects. The review stage is handed the
real diff since the chain began (or, without git, the list of files to
re-read), never asked to remember what it did. After the last stage the
harness itself writes a verification report from the tool records, so the
last thing the user reads is what really ran and how it ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.conversation import Conversation
from ..core.messages import Evidence, Usage
from ..core.toolspec import ToolTable
from ..core.ui_protocol import UI
from ..store.git_ops import DIFF_UNAVAILABLE, GitOps
from ..tools.plan import PlanGate
from .commands_ran import commands_run
from .dispatch import CallPolicy, window_text
from .loop import TurnLoop, TurnResult
from .read_only import ReadOnlyPolicy

STAGES = ("plan", "check", "implement", "review", "verify")
NO_CHANGES_MARKER = "NO_CHANGES_NEEDED"
DIFF_WINDOW = 12_000
"""Characters of diff (head and tail) handed to the review stage."""

PLAN_INSTRUCTION = (
    "/deepthink stage 1/5: plan. The request:\n\n{request}\n\n"
    "Read what you need but change nothing: edits and commands are refused in this stage. "
    "Then give a short plan: what you would change, where, and how you will check it works. "
    "If nothing needs changing (a question, or it is already done), answer it fully instead "
    "and end with a line " + NO_CHANGES_MARKER + "."
)
CHECK_INSTRUCTION = (
    "Stage 2/5: check. Argue against your plan: what could be wrong, what did you assume "
    "without reading it? Read to settle that (still no changes), then give the revised plan."
)
IMPLEMENT_INSTRUCTION = (
    "Stage 3/5: implement. Make the changes of the revised plan now, then say briefly what "
    "you changed."
)
REVIEW_DIFF_INSTRUCTION = (
    "Stage 4/5: review. The real diff since the request began{note}:\n\n```diff\n{diff}\n```\n\n"
    "Check it against the request: mistakes, leftovers, missing pieces. Fix what is wrong, "
    "or say that it is right."
)
REVIEW_EMPTY_DIFF_INSTRUCTION = (
    "Stage 4/5: review. The diff since the request began is empty: the files are as they "
    "were. Check whether that is right for the request, and fix it if not."
)
REVIEW_FILES_INSTRUCTION = (
    "Stage 4/5: review. No diff is available (no git history to compare with). Re-read "
    "{what} and check them against the request: mistakes, leftovers, missing pieces. Fix "
    "what is wrong, or say that it is right."
)
VERIFY_INSTRUCTION = (
    "Stage 5/5: verify. Run the program or the tests to check that the change works, then "
    "report exactly what came back. Claim nothing you did not see."
)
READ_ONLY_REASON = (
    "the {stage} stage of /deepthink only reads, so nothing may change yet. "
    "Say in your answer what you would change instead"
)

REPORT_HEADER = "Checked by tether (from the tool records, not the model's words):"
NO_COMMANDS_LINE = "No commands were run: nothing was verified by running it."

"""Tools that continue a command `run_cmd` left waiting for input (see tools/shell.py)."""

# ---------------------------------------------------------------- results


@dataclass
class StageOutcome:
    name: str
    result: TurnResult


@dataclass
class DeepthinkResult:
    stages: list[StageOutcome]
    text: str
    """The final stage's answer with the harness's report after it."""
    report: str
    """The verification report ("" when the chain stopped before anything could change)."""
    stopped_early: str | None
    """The stage after which the chain stopped, or None when all five ran."""
    stop_reason: str
    """The last stage's stop reason (end_turn, max_steps, max_tokens, error)."""


# ---------------------------------------------------------------- read-only stages


class ReadOnlyStage(ReadOnlyPolicy):
    """The policy for the stages that must not change anything: only read-only tools pass."""

    def __init__(self, inner: CallPolicy, stage: str) -> None:
        super().__init__(inner, READ_ONLY_REASON.format(stage=stage), "/deepthink")


# ---------------------------------------------------------------- the chain


@dataclass
class _Start:
    """Where the chain began: HEAD, and the diff the tree already had (None: no diff possible)."""

    head: str | None = None
    baseline: str | None = None


@dataclass
class _Chain:
    conv: Conversation
    start: _Start
    outcomes: list[StageOutcome] = field(default_factory=list)

    @property
    def last(self) -> TurnResult:
        return self.outcomes[-1].result

    @property
    def failed(self) -> bool:
        return self.last.stop_reason == "error"


class Deepthink:
    """Runs /deepthink requests through `loop`; `git` (if any) supplies the real diff."""

    def __init__(
        self, loop: TurnLoop, git: GitOps | None, ui: UI, plan_gate: PlanGate | None = None
    ) -> None:
        self.loop = loop
        self.git = git
        self.ui = ui
        self.plan_gate = plan_gate

    async def run(self, conv: Conversation, request: str) -> DeepthinkResult:
        """Plan, check, implement, review, verify; stops early when there is nothing to build."""
        gate_was_active = self.plan_gate.active if self.plan_gate else False
        if self.plan_gate:  # the plan and check stages take plan mode's place
            self.plan_gate.active = False
        try:
            return await self._run_chain(conv, request)
        finally:
            if self.plan_gate:
                self.plan_gate.active = gate_was_active

    async def _run_chain(self, conv: Conversation, request: str) -> DeepthinkResult:
        chain = _Chain(conv, await self._starting_point())
        await self._stage(chain, PLAN_INSTRUCTION.format(request=request), read_only=True)
        if chain.failed:
            return self._finish(chain, stopped="plan")
        answer, nothing_to_build = strip_marker(chain.last.text)
        if nothing_to_build:
            self.ui.notice("deepthink: nothing to change; stopped after the plan.")
            return self._finish(chain, stopped="plan", text=answer)
        await self._stage(chain, CHECK_INSTRUCTION, read_only=True)
        if chain.failed:
            return self._finish(chain, stopped="check")
        await self._stage(chain, IMPLEMENT_INSTRUCTION)
        if chain.failed:
            return self._finish(chain, stopped="implement")
        review = await self._review_instruction(chain)
        if review is None:
            self.ui.notice("deepthink: the implement stage changed nothing; stopped before review.")
            return self._finish(chain, stopped="implement")
        for instruction in (review, VERIFY_INSTRUCTION):
            await self._stage(chain, instruction)
            if chain.failed:
                return self._finish(chain, stopped=chain.outcomes[-1].name)
        return self._finish(chain, stopped=None)

    # ------------------------------------------------------------ steps

    async def _stage(self, chain: _Chain, instruction: str, *, read_only: bool = False) -> None:
        index = len(chain.outcomes) + 1
        name = STAGES[index - 1]
        self.ui.notice(f"deepthink: stage {index}/{len(STAGES)} — {name}")
        dispatcher, settings = self.loop.dispatcher, self.loop.settings
        original, checking = dispatcher.policy, settings.answer_checks
        if read_only:
            dispatcher.policy = ReadOnlyStage(original, name)
        settings.answer_checks = False  # a stage answers the chain; the report says what ran
        try:
            result = await self.loop.run_turn(chain.conv, instruction)
        finally:  # also on cancellation: the next request must not inherit a read-only gate
            dispatcher.policy, settings.answer_checks = original, checking
        chain.outcomes.append(StageOutcome(name, result))

    async def _starting_point(self) -> _Start:
        if self.git is None:
            return _Start()
        head = await asyncio.to_thread(self.git.head)
        baseline = await self._diff_since(head)
        # Without a starting commit, "the diff" would be every file in the project.
        return _Start(head, baseline) if baseline is not None else _Start()

    async def _diff_since(self, rev: str | None) -> str | None:
        if self.git is None or rev is None:
            return None
        diff = await asyncio.to_thread(self.git.diff_since, rev)
        return None if diff.startswith(DIFF_UNAVAILABLE) else diff

    async def _review_instruction(self, chain: _Chain) -> str | None:
        """The review stage's message, or None when the implement stage changed nothing."""
        build = chain.last.evidence
        paths = changed_paths(build, self.loop.table)
        diff = await self._diff_since(chain.start.head)
        if diff is not None:
            if not paths and diff == chain.start.baseline:
                return None
            return review_with_diff(diff, chain.start.baseline or "")
        if not paths and not commands_run(build):
            return None
        return review_without_diff(paths)

    def _finish(self, chain: _Chain, stopped: str | None, text: str | None = None) -> DeepthinkResult:
        evidence = [e for outcome in chain.outcomes for e in outcome.result.evidence]
        chain.conv.evidence = evidence  # the whole chain is one request
        answer = chain.last.text if text is None else text
        report = ""
        if len(chain.outcomes) >= STAGES.index("implement") + 1:
            report = verification_report(evidence)
            shown = report.replace("\n", "  \n")  # markdown hard breaks: one line per command
            self.ui.text(("\n\n" if answer.strip() else "") + shown + "\n")
            answer = f"{answer.rstrip()}\n\n{report}" if answer.strip() else report
        return DeepthinkResult(chain.outcomes, answer, report, stopped, chain.last.stop_reason)


# ---------------------------------------------------------------- stage helpers


def strip_marker(text: str) -> tuple[str, bool]:
    """The answer without the nothing-to-change marker, and whether the marker was there."""
    if NO_CHANGES_MARKER not in text:
        return text, False
    kept = []
    for line in text.splitlines():
        if NO_CHANGES_MARKER in line:
            line = line.replace(NO_CHANGES_MARKER, "")
            if not line.strip(" \t*`_-:.>"):  # only markdown dressing was around the marker
                continue
        kept.append(line)
    return "\n".join(kept).strip(), True


def changed_paths(evidence: Sequence[Evidence], table: ToolTable) -> list[str]:
    """The paths named by the successful calls of file-changing tools, in order, once each."""
    found: list[str] = []
    for record in evidence:
        tool = table.get(record.call.name)
        if record.error or tool is None or not tool.writes_files:
            continue
        for value in tool.path_values(record.call.arguments, written_only=True).values():
            if value not in found:
                found.append(value)
    return found


def review_with_diff(diff: str, baseline: str) -> str:
    if not diff.strip():
        return REVIEW_EMPTY_DIFF_INSTRUCTION
    note = " (it also holds changes left uncommitted before the request)" if baseline else ""
    return REVIEW_DIFF_INSTRUCTION.format(note=note, diff=window_text(diff.rstrip("\n"), DIFF_WINDOW))


def review_without_diff(paths: Sequence[str]) -> str:
    if paths:
        what = "the files you changed (" + ", ".join(paths) + ")"
    else:
        what = "whatever your commands changed (no file tool changed anything)"
    return REVIEW_FILES_INSTRUCTION.format(what=what)


# ---------------------------------------------------------------- the report


def verification_report(evidence: Sequence[Evidence]) -> str:
    """What the commands of these records really did, read from the records alone."""
    ran = commands_run(evidence)
    lines = [REPORT_HEADER, *(command.line() for command in ran)]
    if ran:
        failed = sum(not command.passed for command in ran)
        lines.append(f"Commands run: {len(ran)}, failed: {failed}.")
    else:
        lines.append(NO_COMMANDS_LINE)
    return "\n".join(lines)


async def deepthink_turn(chain: Deepthink, conv: Conversation, request: str) -> TurnResult:
    """Run the chain and fold its stages into one TurnResult, as a plain turn reports."""
    outcome = await chain.run(conv, request)
    results = [s.result for s in outcome.stages]
    usage = Usage()
    for r in results:
        usage = usage + r.usage
    error = next((r.error for r in results if r.error), None)
    return TurnResult(
        text=outcome.text,
        stop_reason=outcome.stop_reason,
        requests=sum(r.requests for r in results),
        usage=usage,
        evidence=list(conv.evidence),
        error=error,
    )
