"""The one choke point every tool call crosses, refused, reused or run.

look up the tool -> the turn's checks (`CallSteps.refusal`: the tool menu, the call
guards) -> validate -> screening hooks (PreToolUse: block or rewrite, the rewrite
validated again; they also see a call the turn's checks refused, which then stays
refused) -> gates (policy, approval) -> an earlier identical read's result
(`CallSteps.reused`) or before-hooks (the undo snapshot) and run (worker thread,
timeout) -> window -> result notes (`CallSteps.finished`) -> result hooks
(PostToolUse: context for the model, after reading what the model will read) ->
evidence -> after-hooks (auto-commit). Every failure is a ToolResult with
`is_error`; nothing here raises into the loop except cancellation.

The screening runs before the gates, so the permission rules and the user's
approval see the arguments that will really run.

Blocking handlers run in daemon threads of their own, not in asyncio's default
executor: `asyncio.run` and interpreter exit both join that executor's threads,
so one handler stuck for good (a hung file system) would keep tether from
exiting long after its call timed out.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..core.messages import INVALID_JSON_KEY, CommandStatus, Evidence, ToolCall, ToolResult
from ..core.textclip import clip_words, keep_ends
from ..core.toolspec import (
    CURRENT_CALL,
    DEFAULT_RESULT_CAP,
    Tool,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolTable,
)
from ..core.ui_protocol import UI
from ..core.verdict import CallPolicy, GateVerdict
from ..host import bad_char_fields, cleaned_with_note

if TYPE_CHECKING:
    from pydantic import ValidationError

NEEDS_APPROVAL = "needs the user's approval"
"""How a refusal reads when nobody can approve: an allow rule or --auto would let the call run."""


# ---------------------------------------------------------------- windowing


def window_text(text: str, cap: int) -> str:
    """Keep the head and tail of `text` within `cap` characters, marking the cut."""
    if len(text) <= cap:
        return text
    keep = max(cap - 60, 20)  # room for the marker
    head = window_kept_head(cap)
    return keep_ends(text, head, keep - head)


class ResultStore(Protocol):
    """Keeps a whole result that is too long for the conversation (store/result_files.py)."""

    def save(self, tool_name: str, text: str, kept_head: int) -> str:
        """Save `text`; the note telling the model where it is and how to page it (the
        window keeps `kept_head` characters of its head). OSError if it cannot."""
        ...


def window_kept_head(cap: int) -> int:
    """How many characters of its head `window_text` keeps within `cap`."""
    keep = max(cap - 60, 20)
    return keep * 2 // 3


# ---------------------------------------------------------------- gates


class AllowAll:
    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        return GateVerdict("allow")


BeforeHook = Callable[[ToolCall, Tool], None]
"""Runs right before a call that passed the gates (the undo snapshot); one that raises is
reported as a warning and the call still runs."""
AfterHook = Callable[[ToolCall, Tool, ToolOutput], "str | None"]
"""Runs after a successful call; returns a notice for the user, or None."""


@dataclass(frozen=True)
class Screening:
    """What the hooks that screen a call decided before the gates."""

    refusal: str = ""
    """Why the call must not run ("" when it may)."""
    arguments: dict[str, Any] | None = None
    """The arguments to run the call with instead of the model's (None: unchanged)."""


class ToolHooks(Protocol):
    """Commands the user configured around each call (hooks/engine.py implements it)."""

    async def screen(self, call: ToolCall, tool: Tool) -> Screening: ...

    async def after_result(self, call: ToolCall, tool: Tool, result: str, is_error: bool) -> str:
        """Context for the model to read after the result ("" for none)."""
        ...


class CallSteps(Protocol):
    """The steps a turn adds to the pipeline (engine/call_steps.py): without them a call is
    only checked against the table, the hooks and the gates."""

    def refusal(self, call: ToolCall) -> str | None:
        """Why the call may not run in this turn (a tool not loaded yet, a call guard), or None."""
        ...

    def reused(self, call: ToolCall) -> str | None:
        """The text to answer with instead of running the call again (an identical read
        earlier in the turn), or None to run it."""
        ...

    def finished(self, call: ToolCall, text: str, evidence: Evidence, ran: bool) -> str:
        """Told each call's outcome (`call` as the model sent it; `ran`: its handler ran);
        the notes to add to its result ("" for none)."""
        ...


# ---------------------------------------------------------------- dispatcher


class _Outcome(NamedTuple):
    call: ToolCall
    """The call as it ran (a hook may have rewritten it)."""
    output: ToolOutput
    is_error: bool
    ran: bool
    """Whether the handler was started (no PostToolUse hook runs for a call that never ran)."""
    reused: bool = False
    """The text is an earlier identical read's, not a new run."""


@dataclass
class _Asked:
    """How long a call waited for the user's approval (and for another question to end)."""

    seconds: float = 0.0


@dataclass
class Dispatcher:
    table: ToolTable
    ctx: ToolContext
    ui: UI
    policy: CallPolicy = field(default_factory=AllowAll)
    default_timeout: float = 120.0
    default_cap: int = DEFAULT_RESULT_CAP
    caps: dict[str, int] = field(default_factory=dict)
    before_run: list[BeforeHook] = field(default_factory=list)
    after_success: list[AfterHook] = field(default_factory=list)
    hooks: ToolHooks | None = None
    results: ResultStore | None = None
    """Where a too-long result of a tool with `keeps_full_result` is saved whole."""
    _approval_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    async def dispatch(self, call: ToolCall, steps: CallSteps | None = None,
                       by_user: bool = False) -> tuple[ToolResult, Evidence]:
        """Run `call` through the pipeline. `by_user`: the user typed this call (`!command`);
        typing it is the approval an "ask" would want, and everything else (hooks, deny
        rules, the guards that deny, the sandbox the handler runs it in) is as for a model's."""
        started = time.time()
        self.ui.tool_start(call)
        tool = self.table.get(call.name)
        token = CURRENT_CALL.set(call)
        asked = _Asked()
        try:
            outcome = await self._checked_run(call, tool, asked, steps, by_user)
        finally:
            CURRENT_CALL.reset(token)
        ran, output, is_error = outcome.call, outcome.output, outcome.is_error
        # Results enter the history here: text UTF-8 cannot encode (a file name that
        # is not UTF-8) is escaped once, with a note, so the model knows what it sees.
        text = self._windowed(call.name, tool, cleaned_with_note(output.text))
        if ran is not call:
            text += f"\n[A hook changed the arguments; what ran was: {ran.arguments}]"
        evidence = Evidence(
            call=ran,
            started=started,
            elapsed=max(0.0, time.time() - started - asked.seconds),  # the call's time, not the user's
            summary=output.summary or summarize(output.text),
            result=text,
            error=is_error,
            command=output.command,
            details=output.details,
            changed_paths=() if is_error else tuple(str(p) for p in output.changed_paths),
        )
        if steps is not None:
            text += steps.finished(call, text, evidence, outcome.ran and not outcome.reused)
        if tool is not None and self.hooks is not None and outcome.ran:
            text += cleaned_with_note(await self.hooks.after_result(ran, tool, text, is_error))
        evidence = replace(evidence, result=text)
        if not is_error and tool is not None and not outcome.reused:
            self._after(ran, tool, output)
        self.ui.tool_end(evidence)
        return ToolResult(call.id, call.name, text, is_error), evidence

    async def _checked_run(
        self, call: ToolCall, tool: Tool | None, asked: _Asked, steps: CallSteps | None,
        by_user: bool = False,
    ) -> _Outcome:
        if tool is None:
            names = ", ".join(self.table.names())
            return _refused(call, f"Unknown tool '{call.name}'. Available tools: {names}.", "unknown tool")
        turn_refusal = steps.refusal(call) if steps is not None else None
        if turn_refusal is not None:
            if self.hooks is not None:
                await self.hooks.screen(call, tool)  # seen, and logged if a hook wants; refused anyway
            return _refused(call, turn_refusal, "not run")
        args, problem = self._validate(call, tool)
        if problem:
            return _refused(call, problem, "invalid arguments")
        call, args, refusal = await self._screen(call, tool, args)
        if refusal:
            return _refused(call, refusal, "blocked by a hook")
        refusal = await self._gate(call, tool, asked, by_user)
        if refusal:
            return _refused(call, refusal, "blocked")
        earlier = steps.reused(call) if steps is not None else None
        if earlier is not None:
            return _Outcome(call, ToolOutput(earlier, summary="reused earlier result"), False, ran=True, reused=True)
        self._before(call, tool)
        output, is_error = await self._run(tool, args)
        return _Outcome(call, output, is_error, ran=True)

    async def _screen(self, call: ToolCall, tool: Tool, args: Any) -> tuple[ToolCall, Any, str]:
        """The PreToolUse hooks: a refusal, or arguments to use instead, validated again
        against the tool's schema (a hook is no more trusted to send valid ones than a model)."""
        if self.hooks is None:
            return call, args, ""
        screening = await self.hooks.screen(call, tool)
        if screening.refusal:
            return call, args, (
                f"Blocked by a hook: {screening.refusal}\nThis {call.name} call did not run; "
                "do not retry it unchanged."
            )
        if screening.arguments is None:
            return call, args, ""
        rewritten = ToolCall(call.id, call.name, screening.arguments)
        new_args, problem = self._validate(rewritten, tool, exact=True)  # a program's output: no leniency
        if problem:
            return call, args, f"Blocked: a hook rewrote the arguments, and they are invalid. {problem}"
        return rewritten, new_args, ""

    def _validate(self, call: ToolCall, tool: Tool, exact: bool = False) -> tuple[Any, str]:
        if INVALID_JSON_KEY in call.arguments:
            raw = str(call.arguments[INVALID_JSON_KEY])[:200]
            return None, (
                f"The arguments of your {tool.name} call were not valid JSON ({raw!r}). "
                "Nothing was run. Send the call again with a valid JSON object."
            )
        broken = bad_char_fields(call.arguments)
        if broken:
            return None, (
                f"The arguments of your {tool.name} call hold a broken character (a lone "
                f"UTF-16 surrogate) in {', '.join(broken[:5])}. Nothing was run; send the "
                "call again with plain text."
            )
        from pydantic import ValidationError  # the models' own: loaded with the first of them

        try:
            return tool.params.model_validate(call.arguments), ""
        except ValidationError as exc:
            retyped = None if exact else numbers_as_text(call.arguments, tool)  # a model's "session": 1
            if retyped is not None:
                with contextlib.suppress(ValidationError):
                    return tool.params.model_validate(retyped), ""
            return None, describe_validation_error(tool, exc)

    async def _gate(self, call: ToolCall, tool: Tool, asked: _Asked, by_user: bool = False) -> str:
        try:
            verdict = self.policy.check(call, tool)
        except Exception as exc:  # e.g. a NUL byte in a path: refuse rather than crash the turn
            return (
                f"Blocked: the {call.name} call could not be checked against the permission "
                f"rules ({type(exc).__name__}: {exc}). Fix the arguments before trying again."
            )
        if verdict.action == "allow":
            return ""
        if verdict.action == "deny" and verdict.by:
            return f"Blocked by {verdict.by}: {verdict.reason or call.name}."
        if verdict.action == "deny":
            return (
                f"Blocked by a permission rule: {verdict.reason or call.name}. "
                "This call will not run; do not retry it. Continue without it or tell the user."
            )
        if by_user:  # the user typed it: that is the yes the question would ask for
            return ""
        if not self.ui.can_ask:
            return (
                f"Blocked: {call.name} {NEEDS_APPROVAL} ({verdict.reason or 'it has side effects'}) "
                "and nobody is available to approve it in this mode. Do not retry it; "
                "finish without it and tell the user what was blocked and why."
            )
        waiting = time.time()
        async with self._approval_lock:
            decision = await self.ui.approve(call, verdict.reason)
        asked.seconds = time.time() - waiting
        if decision.allowed:
            return self._still_allowed(call, tool)
        why = f" Their reason: {decision.feedback.rstrip('.')}." if decision.feedback else ""
        return f"The user refused this {call.name} call.{why} Do not retry it unchanged."

    def _still_allowed(self, call: ToolCall, tool: Tool) -> str:
        """The files may have changed while the user thought (a symlink swapped by a running
        command): deny rules and the keys guard are asked again right before the call runs."""
        try:
            verdict = self.policy.check(call, tool)
        except Exception as exc:
            return f"Blocked: the {call.name} call could not be checked again ({type(exc).__name__})."
        if verdict.action == "deny":
            return (
                f"Blocked by a permission rule after approval: {verdict.reason or call.name}. "
                "The paths changed while the call waited; it did not run."
            )
        return ""

    async def _run(self, tool: Tool, args: Any) -> tuple[ToolOutput, bool]:
        timeout = tool.timeout or self.default_timeout
        try:
            if inspect.iscoroutinefunction(tool.handler):
                result = await asyncio.wait_for(tool.handler(args, self.ctx), timeout)
            else:
                result = await asyncio.wait_for(
                    in_daemon_thread(tool.handler, args, self.ctx), timeout
                )
        except asyncio.TimeoutError:
            # A command tool that never came back did run: its command timed out.
            status = CommandStatus("timed_out", elapsed=timeout) if tool.runs_commands else None
            return ToolOutput(
                f"{tool.name} timed out after {timeout:g}s. The work may still be going on "
                "in the background; check its effects before retrying.",
                summary="timed out",
                command=status,
            ), True
        except ToolError as exc:
            return ToolOutput(str(exc) or "failed", summary=headline(str(exc))), True
        except Exception as exc:  # a handler bug must not end the turn
            return ToolOutput(f"{tool.name} failed: {type(exc).__name__}: {exc}"), True
        return (result if isinstance(result, ToolOutput) else ToolOutput(str(result))), False

    def _windowed(self, name: str, tool: Tool | None, text: str) -> str:
        """The result within its cap; a tool that keeps its whole result has it saved, and
        the window names the file (the note's room taken from the window)."""
        cap = self._cap_for(name, tool)
        if len(text) <= cap or tool is None or not tool.keeps_full_result or self.results is None:
            return window_text(text, cap)
        try:
            note = self.results.save(name, text, window_kept_head(max(cap - 400, 200)))
        except OSError as exc:
            return window_text(text, cap) + f"\n[The whole result could not be saved: {exc}]"
        return window_text(text, max(cap - len(note), 200)) + note

    def _cap_for(self, name: str, tool: Tool | None) -> int:
        if name in self.caps:
            return self.caps[name]
        if tool is not None and tool.result_cap:
            return tool.result_cap
        return self.default_cap

    def _before(self, call: ToolCall, tool: Tool) -> None:
        for hook in self.before_run:
            try:
                hook(call, tool)
            except Exception as exc:  # a failed snapshot is told, the call still runs
                self._hook_failed(f"before {call.name} ran", exc)

    def _after(self, call: ToolCall, tool: Tool, output: ToolOutput) -> None:
        for hook in self.after_success:
            try:
                notice = hook(call, tool, output)
            except Exception as exc:  # an observer must never fail the call
                self._hook_failed(f"after {call.name} ran", exc)
            else:
                if notice:
                    self.ui.notice(notice, "warning")

    def _hook_failed(self, when: str, exc: Exception) -> None:
        self.ui.notice(f"a hook {when} failed: {type(exc).__name__}: {exc}", "warning")


# ---------------------------------------------------------------- helpers


def _refused(call: ToolCall, text: str, summary: str) -> _Outcome:
    """A call that never ran: an error result with a summary saying why."""
    return _Outcome(call, ToolOutput(text, summary=summary), is_error=True, ran=False)


async def in_daemon_thread(func: Callable[..., Any], *args: Any) -> Any:
    """`func(*args)` in a new daemon thread: its result or exception once it returns.

    Abandoning the await (a timeout, Ctrl-C) leaves the thread to finish on its own; being a
    daemon, it never holds up the process's exit.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # the caller stopped waiting
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        result, error = None, None
        try:
            result = context.run(func, *args)
        except BaseException as exc:  # handed to the awaiting task, which decides
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"tool-{getattr(func, '__name__', 'call')}",
                     daemon=True).start()
    return await future


def numbers_as_text(arguments: dict, tool: Tool) -> dict | None:
    """The arguments with each number given for a text-only parameter written as text (small
    models write `"session": 1`); None when there is none."""
    props = tool.json_schema().get("properties", {})
    fixed = {k: str(v) if isinstance(v, (int, float)) and not isinstance(v, bool)
             and props.get(k, {}).get("type") == "string" else v for k, v in arguments.items()}
    return fixed if fixed != arguments else None


def describe_validation_error(tool: Tool, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:5]:
        where = ".".join(str(x) for x in err.get("loc", ())) or "arguments"
        problems.append(f"'{where}': {err.get('msg', 'invalid')}")
    expected = ", ".join(tool.json_schema().get("properties", {}))
    return (
        f"Invalid arguments for {tool.name}: {'; '.join(problems)}. "
        f"Expected parameters: {expected or 'none'}. Nothing was run; send the call again."
    )


def first_line(text: str, limit: int = 100) -> str:
    """The first non-blank line, cut at a word when longer than `limit`."""
    for line in text.splitlines():
        if line.strip():
            return clip_words(line.strip(), limit)
    return ""


def headline(text: str, limit: int = 100) -> str:
    """The first line, without a last sentence that only introduces what the following
    lines show ("The closest match is line 6:"): alone, it reads as if cut off."""
    head = first_line(text, limit)
    if head.endswith(":") and "\n" in text.strip():
        sentence_end = head.rfind(". ")
        head = head[: sentence_end + 1] if sentence_end > 0 else head.rstrip(":")
    return head


def summarize(text: str) -> str:
    """One line for a result: its headline and how many lines it has."""
    lines = text.count("\n") + 1 if text else 0
    head = headline(text, 80)
    return f"{head} ({lines} lines)" if lines > 1 else head
