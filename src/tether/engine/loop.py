"""The turn loop: ask the model, run what it asked for, write the results down, repeat.

`run_turn` is the whole story; each step is a small named method. The loop
prints nothing (it talks to the UI protocol) and never lets an error end a
turn early except a provider failure, which ends it with `stop_reason="error"`
and a valid history.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol

from ..core.conversation import Conversation
from ..core.messages import (
    Done,
    Event,
    Evidence,
    Image,
    Message,
    Part,
    Text,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    Usage,
    new_call_id,
)
from ..core.toolspec import CONVERSATION, Tool, ToolContext, ToolTable
from ..core.ui_protocol import UI, RequestEvents, RequestTimes, show_checks
from ..protocol import (
    RESULT_MARKERS,
    BlockStop,
    CallStop,
    ParseResult,
    StreamFilter,
    TextHistory,
    call_grammar,
    cut_invented_results,
    parse_reply,
    render_call_as_text,
    resumption,
)
from ..providers.base import Provider, ProviderError, RequestOptions
from .call_steps import TurnSteps
from .dispatch import Dispatcher, first_line
from .prompts import OpeningContext
from .repeatstop import LOOP_TEMPERATURE, RepeatStop
from .toolmenu import ToolMenu
from .turn_assist import (
    UNASSISTED,
    AnswerGate,
    CoachSetup,
    GateVerdict,
    TurnAssist,
    TurnChecks,
    TurnCoach,
)
from .turn_end import TurnHooks, answer_problems, correction_note, stop_reason, submit_prompt
from .turn_record import TurnRecord

ProtocolMode = Literal["native", "text"]
MAX_UNREADABLE = 3
UNREADABLE_STOP = (
    f"stopped: the model's last {MAX_UNREADABLE} replies were tool calls it could not write "
    "correctly (each was answered with the parse error)"
)

STEP_LIMIT_NOTE = (
    "You have reached the step limit for this request. Tools are disabled now: "
    "answer the user with what you have, and say what is left undone."
)


CUT_OFF_CALL = (
    "Your reply reached the output token limit, so your last {name} call may be incomplete. "
    "It was not run. Send it again, shorter if you can (e.g. split a large file into parts)."
)


def tell_unrun_calls(ui: UI, parsed: ParseResult) -> None:
    """The tool-free request at the step cap came back as a call only: it does not run (tools
    are off), and without a word the turn would end in silence."""
    if parsed.calls and not parsed.text.strip():
        names = ", ".join(sorted({call.name for call in parsed.calls}))
        ui.notice(f"At the step cap the model asked for {names} instead of answering; "
                  "tools were off, so nothing ran.", "warning")


def pressure_note(step: int, cap: int) -> str:
    return (
        f"(Note: {step} of {cap} tool round trips used. Finish soon: answer now "
        "unless another tool call is really needed.)"
    )


@dataclass
class TurnResult:
    text: str
    stop_reason: str  # end_turn | max_steps | error | max_tokens | cancelled
    requests: int
    """Model requests of the turn whose answer arrived whole: each tool round, each nudged
    retry, the tool-free one at the step cap; not one that failed or was cancelled."""
    usage: Usage
    evidence: list[Evidence]
    error: str | None = None
    checks: list[str] = field(default_factory=list)
    """What the answer checks found wrong with the answer (answer_checks.py)."""


@dataclass
class Reply:
    chunks: list[str] = field(default_factory=list)
    """Text deltas as they came (joined on demand: a long reply in tiny chunks stays linear)."""
    thinking_chunks: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "end_turn"
    repeated: str = ""
    """What the model is told about a reply whose stream was stopped for looping (see
    repeatstop.py); empty when it was not."""
    stops_at_markers: bool = False
    """The request asked the server to stop at the text protocol's result markers."""

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    @property
    def thinking(self) -> str:
        return "".join(self.thinking_chunks)

    @property
    def result_first(self) -> bool:
        """The stop at a result marker cut the reply to nothing: the model began by writing
        a tool result (it produced tokens, none of them kept)."""
        return self.stops_at_markers and began_with_result(self)


MARKER_TOKENS_AT_MOST = 12
"""The most tokens a reply cut to nothing at a result marker is taken to have produced."""


REDRAW_CUE = "(Reply with your next tool call, or your final answer.)"
"""Said once, in the request only, when a reply came back with nothing in it: at temperature
0 the same request draws the same nothing, and a 1.5B model's empty replies after a tool result,
asked again with this cue, came back a call a third of the time (sampled at 0.7 without it,
one time in eight)."""


CALL_OPENING = '{"name": "'
"""The start an empty reply is drawn again with: a text-protocol call's opening, up to the
tool's name, which is the model's to write. A 1.5B model's empty replies begin with its
end-of-turn token, a call's `{"` one to three nats behind; so started, seven of seven such
requests of the tuning part came back a call."""


def came_back_empty(reply: Reply) -> bool:
    """A whole reply with nothing in it: no text, no call, no thinking (or cut to nothing at
    a result marker); not one stopped for looping or at the token limit."""
    nothing = not reply.text.strip() and not reply.calls and not reply.thinking
    return nothing and reply.stop_reason == "end_turn" and not reply.repeated


def began_with_result(reply: Reply) -> bool:
    """An empty reply that still produced a few tokens: in the text protocol, the stop at a
    result marker hit first ("[Tool Result for '" is five tokens). Many more are hidden
    reasoning; a provider that reports no usage never shows this (a plain empty reply)."""
    empty = not reply.text.strip() and not reply.calls and not reply.thinking
    marker_sized = 2 <= reply.usage.output_tokens <= MARKER_TOKENS_AT_MOST
    return empty and reply.stop_reason == "end_turn" and marker_sized


@dataclass
class TurnSettings:
    model: str
    max_steps: int = 20
    soft_pressure_after: int = 8
    temperature: float | None = None
    keep_thinking: bool = False
    nudges: bool = False
    """The coach's rules on the turn's evidence and its reasons a call waits (assist/rules.py)."""
    opening_note: bool = False
    """Send a reminder to act with the tools beside the request, in the turn's first request."""
    preread: bool = False
    """Read the files the request names before the first request (`TurnLoop.preread`)."""
    stop_at_call: bool = False
    """Text protocol: close a reply's stream once it holds one whole call (see callstop.py)."""
    redraw_empty: bool = False
    """A reply with nothing in it is drawn again once from the same request with REDRAW_CUE."""
    resume_calls: bool = False
    """Text protocol: a reply that stopped with a call open between its raw blocks is carried
    on from the tool's next block, where the provider can continue a reply (`TurnLoop.resumed`)."""
    open_empty: bool = False
    """Text protocol: a reply with nothing in it is drawn again once with CALL_OPENING as its
    start, where the provider can continue a reply (`TurnLoop.opened`)."""
    max_reply_tokens: int | None = None
    answer_tokens: int | None = None
    """The reply cap once the check after the last change passed (None: max_reply_tokens)."""
    grammar: bool = False
    """Text protocol: constrain each reply to one call on the menu or an answer, where the
    server can (protocol/grammar.py)."""
    terse_history: bool = False
    """Keep only the calls of a reply that made some, and drop a reply a nudge calls wrong:
    a small model's own plans and wrong answers, read back, steer it more than the results."""
    answer_checks: bool = True
    """Check the final answer against the turn's evidence (answer_checks.py)."""
    answer_check_feedback: bool = False
    """Send what the checks found back for one tool-free corrected answer."""
    checks: TurnChecks = field(default_factory=TurnChecks)
    """How the turn's gate checks the work (assist/verify.py; `attempts` 0: no check)."""
    take_version: bool = False
    """A whole file version shown in a reply with no call is taken as its write (the coach's
    `reply_calls`)."""
    rules_off: frozenset[str] = frozenset()
    """Levers of the coach's rules switched off (assist/rules.py; TETHER_PROFILE_OFF)."""


class ContextGuard(Protocol):
    """Keeps each request inside the model's context window (see context.py)."""

    window: int
    """The tokens a request may hold, the reply included."""

    async def fit(
        self, messages: list[Message], turn_start: int, system: str, tools: Sequence[Tool] | None
    ) -> int:
        """Shrink `messages` in place if the next request would overflow; return the new
        index of the current turn's user message (earlier history may have been condensed)."""
        ...

    def observe(
        self, request: Sequence[Message], tools: Sequence[Tool] | None, usage: Usage
    ) -> None:
        """Calibrate the token estimate against the count the provider reported."""
        ...

    async def compact(self, messages: list[Message], turn_start: int | None = None) -> int:
        """Condense the history before the latest request now (/compact), in place;
        return the new index of that request."""
        ...


@dataclass
class TurnLoop:
    provider: Provider
    table: ToolTable
    dispatcher: Dispatcher
    ui: UI
    settings: TurnSettings
    system_prompt: Callable[[ProtocolMode], str]
    """The same in every project, on every day and at every turn (see prompts.py)."""
    mode: ProtocolMode = "native"
    context: Callable[[], str] = field(default=lambda: "")
    """What differs by project and day (the place, the date, the project's instructions, the
    project map): it opens the first user message of every request, after the tool menu."""
    guard: ContextGuard | None = None
    menu: ToolMenu | None = None
    """Which tools a request offers; None offers the whole table."""
    on_turn: Callable[[], None] | None = None
    """Told when a turn starts (sub-agents' per-turn budget starts again)."""
    hooks: TurnHooks | None = None
    """The user's hooks on a submitted request and on the end of a turn."""
    assist: TurnAssist | None = None  # the request read once, the check after a change (assist/)
    on_usage: Callable[[Usage], None] | None = None
    """Told the tokens of each finished request, a sub-agent's too (a run's --max-budget)."""
    _turn: TurnState | None = field(default=None, init=False, repr=False)
    interrupted: TurnResult | None = field(default=None, init=False, repr=False)
    """What the latest turn had done when it was cancelled (None: it was not): the chat's
    footer counts it, as it counts a finished turn."""
    _system: Message | None = field(default=None, init=False, repr=False)
    """The latest request's system message, sent again while its text is the same: the
    same object lets the provider reuse what it worked out for the history behind it."""
    _opening: OpeningContext = field(default_factory=OpeningContext, init=False, repr=False)
    _as_text: TextHistory = field(default_factory=TextHistory, init=False, repr=False)
    _grammar: tuple[tuple[Tool, ...], str] | None = field(default=None, init=False, repr=False)
    """The reply grammar and the menu it was built for: built again only when the menu changes."""
    """The text protocol's rendering of the history, each message rendered once."""

    async def run_turn(self, conv: Conversation, user_text: str,
                       images: Sequence[Image] = ()) -> TurnResult:
        """`images` go with the request (the caller checked that the model takes them)."""
        conv.evidence = []
        self.interrupted = None
        refusal = await submit_prompt(self.hooks, conv.messages, user_text, self.ui, images)
        if refusal:
            return TurnResult("", "blocked", 0, Usage(), [], error=refusal)
        if self.on_turn is not None:
            self.on_turn()
        setup = coach_setup(self.settings, self.table, self.mode, self.dispatcher.ctx)
        assisted = (self.assist.start(user_text, self.settings.checks, setup, self.settings.preread)
                    if self.assist else UNASSISTED)
        record = TurnRecord(user_text, assisted.reading, {t.name: t.main_arg for t in self.table},
                            self.dispatcher.ctx.root, self.dispatcher.ctx.resolve)
        coach = assisted.coach
        steps = TurnSteps(self.table, self.dispatcher.ctx, conv.evidence, self.menu, record, coach)
        turn = self._turn = TurnState(conv, steps, start=len(conv.messages) - 1, record=record,
                                      coach=coach, gate=assisted.gate)
        if self.menu is not None:
            self.menu.start_conversation(conv.messages, conv.loaded_tools)
        try:
            if assisted.first_reads:
                await self.preread(turn, assisted.first_reads)
            if turn.gate is not None:
                self.show_gate_calls(turn, await turn.gate.before_start())
            self.open_turn(turn)
            for step in range(1, self.settings.max_steps + 1):
                note = self._note(step, turn)
                reply = await self.ask(turn, tools=True, note=note)
                if self.settings.redraw_empty and came_back_empty(reply):
                    reply = await self.ask(turn, tools=True, note="\n\n".join(filter(None, (note, REDRAW_CUE))))
                reply = await self.opened(turn, reply, note)
                reply = await self.resumed(turn, reply, note)
                parsed = self.taken_call(turn, self.parse(reply), reply.result_first)
                if not parsed.calls and not parsed.errors:
                    nudge = self.reply_note(turn, parsed.text, reply.result_first)
                    if nudge is None:
                        result = await self.conclude(turn, reply, parsed)
                        if result is not None:
                            return result
                        continue  # a Stop hook keeps the turn going
                    self.send_nudge(turn, reply, parsed, nudge)
                    continue
                if turn.unreadable(parsed):
                    self.ui.notice(UNREADABLE_STOP, "error")
                    return self.finish(turn, reply, parsed.text)
                if not parsed.calls:  # at temperature 0 the same broken call comes back word for word
                    turn.looped = True
                await self.dispatch_all(turn, reply, parsed)
                await self.after_calls(turn)
            reply = await self.ask(turn, tools=False, note=STEP_LIMIT_NOTE)
            parsed = self.parse(reply)
            tell_unrun_calls(self.ui, parsed)
            return self.finish(turn, reply, parsed.text, "max_steps")
        except ProviderError as exc:
            return self.fail(turn, exc)
        except asyncio.CancelledError:
            self.interrupted = turn.result(self.keep_partial(turn), "cancelled")
            raise

    def count_usage(self, usage: Usage) -> None:
        """Tokens spent for the running turn elsewhere (a sub-agent's): counted in its usage."""
        if self._turn is not None:
            self._turn.usage = self._turn.usage + usage
        if self.on_usage is not None:
            self.on_usage(usage)

    # ------------------------------------------------------------ steps

    def offered(self) -> list[Tool]:
        """The tools on the menu now (the whole table unless a menu defers some)."""
        return self.menu.offered() if self.menu is not None else list(self.table)

    def _reply_cap(self, turn: TurnState) -> int | None:
        """The reply's token cap: `answer_tokens` once the check after the last change passed
        (what is due is the answer; a small model otherwise wrote minutes of prose, the tests
        copied out again, after a pass), else `max_reply_tokens`."""
        cap, answer = self.settings.max_reply_tokens, self.settings.answer_tokens
        if answer is None or turn.answer_cap_hit or not turn.check_passed():
            return cap
        return answer if cap is None else min(cap, answer)

    async def opened(self, turn: TurnState, reply: Reply, note: str) -> Reply:
        """An empty reply drawn again, once, from the same request with a call's opening as
        the start of the reply (CALL_OPENING): the model ended its turn on purpose, but not
        by much, and the tool and its arguments are still its own. Not once the check after
        the last change passed (the answer is due, and an empty reply asks for it), and only
        where the provider can continue a reply. When the model ends the reply right after
        the opening, the reply is the empty one (never an answer of `{"name": "`)."""
        if not self.settings.open_empty or self.mode != "text" or not came_back_empty(reply) \
                or turn.check_passed():
            return reply
        if not await self.provider.continues_replies(self.settings.model):
            return reply
        self.ui.notice("the reply was empty: drawn again as the start of a tool call", "info")
        again = await self.ask(turn, tools=True, note=note, start=CALL_OPENING)
        return reply if again.text == CALL_OPENING else again  # it ended there: still empty

    async def resumed(self, turn: TurnState, reply: Reply, note: str) -> Reply:
        """The reply carried on when it stopped with a call open between its raw blocks (it
        began a tool result of its own after `<old_content>`, and the stop strings cut it):
        the same request again, with the reply so far and the tool's next block opened as
        the start of the reply, which the model goes on writing (protocol/resume.py). At
        temperature 0 the same request writes the same open call however the error is
        worded. Once per reply; only where the provider can continue a reply."""
        if not self.settings.resume_calls or self.mode != "text" or reply.calls or reply.repeated \
                or reply.stop_reason != "end_turn":
            return reply
        start = resumption(reply.text, self.table)
        if start is None or not await self.provider.continues_replies(self.settings.model):
            return reply
        self.ui.notice(f"the reply stopped inside its call: carried on from {start.split()[-1]}", "info")
        return await self.ask(turn, tools=True, note=note, start=start)

    async def ask(self, turn: TurnState, *, tools: bool, note: str = "", start: str = "") -> Reply:
        """One request and its reply. `start`: the reply's beginning, already written (sent
        for the model to carry on; the returned reply holds it, then what followed)."""
        offered = self.offered() if tools and self.mode == "native" else None
        system = self._system = system_message(self.system_prompt(self.mode), self._system)
        context = self.context()
        if self.guard is not None:
            fixed = f"{system.text}\n\n{context}" if context else system.text
            turn.start = await self.guard.fit(turn.conv.messages, turn.start, fixed, offered)
        request = self._request_messages(turn.conv.messages, note, system, context)
        if turn.coach is not None:
            request = turn.coach.with_cue(request)
        stop = RESULT_MARKERS if self.mode == "text" else ()
        temperature = self.settings.temperature
        if turn.looped:  # greedy decoding would write the same loop (or result) again
            temperature = max(temperature or 0.0, LOOP_TEMPERATURE)
        grammar = self._reply_grammar() if tools and self.mode == "text" and self.settings.grammar \
            and not start else None  # a grammar reads a reply from its first character
        options = RequestOptions(self.settings.model, temperature, self._reply_cap(turn), stop=stop,
                                 grammar=grammar, prefill=start)
        reply = Reply(stops_at_markers=bool(stop))
        turn.pending = reply
        shown = StreamFilter()
        watch = CallStop(self.table) if tools and self.mode == "text" and self.settings.stop_at_call else None
        repeats = RepeatStop() if self.settings.stop_at_call else None
        blocks = BlockStop() if tools and self.settings.take_version and turn.gate is not None else None
        if start:  # already shown: the watches read it, as the reply they will cut
            reply.chunks.append(start)
            shown.feed(start)
            for stop_watch in (watch, repeats, blocks):
                if stop_watch is not None:
                    stop_watch.feed(start)
        if isinstance(self.ui, RequestEvents):
            self.ui.request_started()
        started, closed = time.monotonic(), ""
        stream = self.provider.stream(request, offered, options)
        try:
            async with aclosing(stream):
                async for event in stream:
                    if watch is not None and isinstance(event, TextDelta) and watch.feed(event.text):
                        # The rest would be invented (see callstop.py): keep the reply to its call.
                        self._take(TextDelta(event.text[: watch.cut - len(reply.text)]), reply, shown)
                        closed = "stopped_at_call"
                        break
                    self._take(event, reply, shown)
                    if repeats is not None and isinstance(event, TextDelta) and repeats.feed(event.text):
                        reply.chunks, reply.repeated = [reply.text[: repeats.cut]], repeats.note()
                        closed = "stopped_looping"
                        break
                    if blocks is not None and isinstance(event, TextDelta) and blocks.feed(event.text) \
                            and await self._checked_block(turn, reply):
                        closed = "stopped_at_block"
                        break
        except (ProviderError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a transport surprise is a failed request, not a crash
            raise ProviderError(f"the request to the model failed: {type(exc).__name__}: {exc}",
                                "stream") from exc
        self._show(shown.flush())
        if isinstance(self.ui, RequestTimes):
            self.ui.request_ended(reply.usage, (time.monotonic() - started) * 1000,
                                  closed or reply.stop_reason)
        turn.looped = bool(reply.repeated) or reply.result_first
        if reply.stop_reason == "max_tokens" and options.max_tokens != self.settings.max_reply_tokens:
            turn.answer_cap_hit = True
        turn.pending = None
        turn.requests += 1
        turn.usage = turn.usage + reply.usage
        if self.on_usage is not None:
            self.on_usage(reply.usage)
        turn.conv.context_tokens = reply.usage.input_tokens or turn.conv.context_tokens
        if self.guard is not None and reply.usage.input_tokens:
            self.guard.observe(request, offered, reply.usage)
        return reply

    def _take(self, event: Event, reply: Reply, shown: StreamFilter) -> None:
        if isinstance(event, TextDelta):
            reply.chunks.append(event.text)
            self._show(shown.feed(event.text))
        elif isinstance(event, ThinkingDelta):
            reply.thinking_chunks.append(event.text)
            self.ui.thinking(event.text)
        elif isinstance(event, ToolCallEvent):
            reply.calls.append(event.call)
        elif isinstance(event, Done):
            reply.usage, reply.stop_reason = event.usage, event.stop_reason

    def parse(self, reply: Reply) -> ParseResult:
        text = cut_invented_results(reply.text) if self.mode == "text" else reply.text
        parsed = parse_reply(text, self.table, native=self.mode == "native")
        if reply.calls:  # native calls win, as sent (never repaired); the text is only the answer part
            parsed.calls = unique_ids(reply.calls)
            parsed.errors, parsed.repairs = [], {}
        elif parsed.calls and reply.stop_reason == "max_tokens":
            # the reply was cut off: its last text call may lack arguments that were coming
            cut = parsed.calls.pop()
            parsed.errors.append(CUT_OFF_CALL.format(name=cut.name))
        if reply.repeated:
            parsed.errors.append(reply.repeated)
        if reply.thinking:
            parsed.thinking = (reply.thinking + "\n" + parsed.thinking).strip()
        return parsed

    async def dispatch_all(self, turn: TurnState, reply: Reply, parsed: ParseResult) -> None:
        """Run the calls of one reply; results come back in call order."""
        turn.conv.messages.append(assistant_message(parsed, reply, self.settings))
        results: dict[str, ToolResult] = {}
        finished: dict[str, Evidence] = {}
        history = CONVERSATION.set(turn.conv.messages)
        try:
            for batch in batches(parsed.calls, self.table):
                try:
                    await asyncio.gather(*(self._run_one(turn, c, results, finished) for c in batch))
                finally:  # the evidence in call order, whichever call of a batch ended first
                    turn.conv.evidence.extend(finished.pop(c.id) for c in batch if c.id in finished)
        finally:  # also on cancellation: every call gets a result, so history stays valid
            CONVERSATION.reset(history)
            self.record(turn, parsed, results)

    async def preread(self, turn: TurnState, files: Sequence[str]) -> None:
        """Read the small project files the request names (and the code its named tests
        import, or the files it mentions: `AssistedTurn.first_reads`) before the model's first
        reply: read_file calls the harness makes through the one dispatch pipeline (rules,
        hooks, evidence: the user sees each read), kept in the history as if the model had made
        them, so it starts from their text instead of answering without opening them."""
        if READ_FILE not in self.table:
            return
        chosen = small_files(self.dispatcher.ctx.root, files)
        if chosen:
            calls = [ToolCall(f"pre_{new_call_id()}", READ_FILE, {"filepath": name}) for name in chosen]
            await self.dispatch_all(turn, Reply(), ParseResult(calls=calls, text="", thinking="", errors=[]))

    def record(self, turn: TurnState, parsed: ParseResult, results: dict[str, ToolResult]) -> None:
        if parsed.calls:
            ordered: list[Part] = []
            for call in parsed.calls:
                if call.id not in results:  # cancelled before it finished: say so, in evidence too
                    results[call.id] = cancelled_result(call)
                    turn.conv.evidence.append(cancelled_evidence(call, results[call.id]))
                ordered.append(with_repair_note(results[call.id], parsed.repairs.get(call.id)))
            turn.conv.messages.append(Message("tool", ordered))
        if parsed.errors:
            turn.conv.messages.append(Message.user("\n".join(parsed.errors)))

    def send_nudge(self, turn: TurnState, reply: Reply, parsed: ParseResult, nudge: str) -> None:
        """Keep the reply (unless the history is terse and the nudge says it was wrong), then
        ask again with the nudge, which never makes a call itself."""
        coach = turn.coach
        if not (self.settings.terse_history and coach is not None and not coach.keeps_reply()):
            turn.conv.messages.append(assistant_message(parsed, reply, self.settings))
        turn.conv.messages.append(Message.user(nudge))
        if coach is not None and coach.reply_repeated():
            turn.looped = True
        self.ui.notice(f"nudge: {nudge.split('.')[0]}.")

    async def conclude(self, turn: TurnState, reply: Reply, parsed: ParseResult) -> TurnResult | None:
        """The turn's answer, unless a Stop hook's reason to go on becomes the next message
        (None); checked, and with feedback on, corrected once in a tool-free request. The
        turn's gate (the check after a change) comes first: a failed check goes back to the
        model, and its last word is the answer's last line."""
        verdict = await self.gate_verdict(turn)
        if verdict.again:  # the check after the change failed: the model gets it and goes on
            if not (verdict.drop_reply and self.settings.terse_history):
                turn.conv.messages.append(assistant_message(parsed, reply, self.settings))
            turn.conv.messages.append(Message.user(verdict.again))
            turn.looped = turn.looped or verdict.said_before
            self.ui.notice(verdict.notice or "the check after the change failed: its output goes back to the model")
            return None
        reason = await stop_reason(self.hooks, parsed.text, turn.stop_holds)
        if reason:
            turn.stop_holds += 1
            turn.conv.messages += [assistant_message(parsed, reply, self.settings), Message.user(reason)]
            self.ui.notice(f"Stop hook: {first_line(reason)}")
            return None
        text = parsed.text
        checks = self.checks_of(turn, text)
        if checks and self.settings.answer_check_feedback:
            turn.conv.messages.append(Message("assistant", [Text(text or "(empty reply)")]))
            self.ui.notice(f"answer checks: {len(checks)} problem(s); asking for a corrected answer")
            reply = await self.ask(turn, tools=False, note=correction_note(checks))
            text = self.parse(reply).text
            checks = self.checks_of(turn, text)
        if verdict.note:  # after the checks, which read the model's words: this line is the harness's
            text = f"{text.rstrip()}\n\n{verdict.note}" if text.strip() else verdict.note
            self.ui.text(f"\n\n{verdict.note}\n")
        return self.finish(turn, reply, text, checks=checks)

    async def gate_verdict(self, turn: TurnState) -> GateVerdict:
        """What the turn's gate says of the answer about to end it; the calls it made join the
        turn's evidence (and a command it ran may have changed what reads would see)."""
        if turn.gate is None:
            return GateVerdict()
        verdict = await turn.gate.before_answer(turn.conv.evidence)
        if verdict.evidence:
            turn.conv.evidence.extend(verdict.evidence)
            turn.steps.read_cache.clear()
        return verdict

    async def after_calls(self, turn: TurnState) -> None:
        """What the gate does after the calls just run (the check after a change): the calls
        it made join the turn's evidence and the history, as calls with their results (as the
        files read first do: a model reads a result as the answer to a call), and its note
        ends the last result."""
        if turn.gate is not None:
            self.show_gate_calls(turn, await turn.gate.after_calls(turn.conv.evidence))

    def show_gate_calls(self, turn: TurnState, verdict: GateVerdict) -> None:
        """The gate's calls in the turn's evidence and history (as calls with their results),
        its note at the end of the last result (the model's own when the gate made none); the
        calls it made unshown join the evidence only."""
        turn.conv.evidence.extend(verdict.unshown)
        if verdict.evidence:
            turn.conv.evidence.extend(verdict.evidence)
            turn.steps.read_cache.clear()
            shown = verdict.shown or tuple(record.result for record in verdict.evidence)
            results = [ToolResult(record.call.id, record.call.name, text, record.error)
                       for record, text in zip(verdict.evidence, shown, strict=True)]
            results[-1] = with_repair_note(results[-1], verdict.note)
            turn.conv.messages += [Message("assistant", [record.call for record in verdict.evidence]),
                                   Message("tool", list(results))]
        elif verdict.note:
            add_note(turn.conv.messages, verdict.note)
        if verdict.note:
            if turn.record is not None:
                ran = [str(record.call.arguments.get("command", "")) for record in verdict.evidence
                       if record.call.name == "run_cmd"]
                turn.record.noted(verdict.note, ran)

    def checks_of(self, turn: TurnState, text: str) -> list[str]:
        if not self.settings.answer_checks:
            return []
        return answer_problems(text, turn.conv.evidence, turn.conv.messages, turn.start, self.table)

    def finish(self, turn: TurnState, reply: Reply, text: str, stop: str | None = None,
               checks: list[str] | None = None) -> TurnResult:
        parts: list[Part] = []
        if self.settings.keep_thinking and reply.thinking:
            parts.append(Thinking(reply.thinking))
        parts.append(Text(text))
        turn.conv.messages.append(Message("assistant", parts))
        stop_reason = stop or ("max_tokens" if reply.stop_reason == "max_tokens" else "end_turn")
        checks = self.checks_of(turn, text) if checks is None else checks
        show_checks(self.ui, checks)
        return turn.result(text, stop_reason, checks=checks)

    def fail(self, turn: TurnState, exc: ProviderError) -> TurnResult:
        visible = self.keep_partial(turn)
        self.ui.notice(str(exc), "error")
        return turn.result(visible, "error", error=str(exc))

    def keep_partial(self, turn: TurnState) -> str:
        """Keep the text that arrived before a stream broke or was cancelled."""
        partial = turn.pending.text if turn.pending else ""
        visible = parse_reply(partial, self.table).text if partial else ""
        if visible:
            turn.conv.messages.append(Message("assistant", [Text(visible)]))
        turn.pending = None
        return visible

    # ------------------------------------------------------------ helpers

    async def _run_one(self, turn: TurnState, call: ToolCall, results: dict[str, ToolResult],
                       finished: dict[str, Evidence]) -> None:
        """One call, through the dispatcher with the turn's steps (refusals, reuse, notes)."""
        result, evidence = await self.dispatcher.dispatch(call, turn.steps)
        results[call.id] = result
        finished[call.id] = evidence

    def _request_messages(
        self, history: Sequence[Message], note: str, system: Message, context: str
    ) -> list[Message]:
        body = list(history)
        if note:
            body.append(Message.user(note))
        if self.mode == "text":
            body = self._as_text.render(body, self.table)
        return [system, *self._opening.apply(body, context)]

    def _reply_grammar(self) -> str:
        """`call_grammar` of the offered menu, kept while the menu stays the same."""
        menu = tuple(self.offered())
        if self._grammar is None or self._grammar[0] != menu:
            self._grammar = (menu, call_grammar(menu))
        return self._grammar[1]

    def open_turn(self, turn: TurnState) -> None:
        """The opening note goes into the history after the request (and the files read
        before the first reply), where it stays: every later request of the session starts
        with what this one sent."""
        after_reads = bool(turn.conv.messages) and turn.conv.messages[-1].role == "tool"
        note = turn.coach.opening_note(after_reads) if turn.coach is not None else ""
        if note:
            turn.conv.messages.append(Message.user(note))

    def taken_call(self, turn: TurnState, parsed: ParseResult, result_first: bool) -> ParseResult:
        """`parsed`, or, for a reply that changes nothing by its calls but makes a change in
        another form (the coach's `reply_calls`: a whole file in a code block), those calls
        with their notes, before the reply's own calls (the fix shown, then "run the tests
        again")."""
        taken = self._taken(turn, parsed, result_first)
        if not taken:
            return parsed
        for call, _ in taken:
            self.ui.notice(f"the reply's change to {call.arguments.get('filepath')} is taken as its {call.name} call")
        notes = {call.id: note for call, note in taken}
        return replace(parsed, calls=[*(call for call, _ in taken), *parsed.calls],
                       repairs={**parsed.repairs, **notes})

    async def _checked_block(self, turn: TurnState, reply: Reply) -> bool:
        """The reply so far ends with a code block that is its change (`taken_call`) and the
        gate checks that change right after it: the rest would be talk about the change and
        "run the tests", which the check does, at a few seconds a line on a small CPU model."""
        taken = self._taken(turn, self.parse(reply), False)
        if not taken or turn.gate is None:
            return False
        return await turn.gate.checks_change(str(taken[-1][0].arguments.get("filepath", "")))

    def _taken(self, turn: TurnState, parsed: ParseResult, result_first: bool) -> list[tuple[ToolCall, str]]:
        if parsed.errors or turn.coach is None or turn.record is None:
            return []
        if any(not self._runs_or_reads(call.name) for call in parsed.calls):
            return []  # a call that changes something: the reply's own change is that one
        return turn.coach.reply_calls(turn.record.snapshot(parsed.text.strip(), result_first))

    def _runs_or_reads(self, name: str) -> bool:
        tool = self.table.get(name)
        return tool is not None and (tool.read_only or name == RUN_CMD)

    def reply_note(self, turn: TurnState, text: str, result_first: bool) -> str | None:
        """What the coach's rules say instead of ending the turn on this reply (None: end it)."""
        if turn.coach is None or turn.record is None:
            return None
        return turn.coach.reply_note(turn.record.snapshot(text.strip(), result_first))

    def _note(self, step: int, turn: TurnState) -> str:
        waiting = turn.record is not None and turn.record.waiting is not None  # "finish soon" ended a game half played
        pressing = step > self.settings.soft_pressure_after and not waiting
        return pressure_note(step - 1, self.settings.max_steps) if pressing else ""

    def _show(self, pieces: list[tuple[str, str]]) -> None:
        for kind, chunk in pieces:
            (self.ui.thinking if kind == "thinking" else self.ui.text)(chunk)


RUN_CMD = "run_cmd"
"""The one call with side effects a code block is taken before: the model's "run the tests"."""


def system_message(text: str, previous: Message | None) -> Message:
    """`previous` while its text is `text`, else a new system message holding it."""
    return previous if previous is not None and previous.text == text else Message.system(text)


@dataclass
class TurnState:
    """One turn in progress: its conversation, requests, usage, record and coach;
    the loop's own state (no one else holds it)."""

    conv: Conversation
    steps: TurnSteps
    """The turn's steps inside the dispatch pipeline: refusals, reused reads, result notes."""
    start: int = 0
    """Index of this turn's user message in conv.messages."""
    requests: int = 0
    """Model requests of this turn that completed."""
    usage: Usage = field(default_factory=Usage)
    pending: Reply | None = None
    record: TurnRecord | None = None
    """What the turn has done, recorded call by call."""
    coach: TurnCoach | None = None
    """The rules on the turn's evidence; None when no assist is wired in."""
    gate: AnswerGate | None = None
    """Asked before the turn ends with an answer (the check after a change)."""
    unreadable_in_a_row: int = 0
    looped: bool = False
    """The last reply was stopped for repeating one line (see repeatstop.py), began with a
    tool result, or held only calls it could not write: asked the same at temperature 0, the
    model writes the same again."""
    answer_cap_hit: bool = False
    """A reply under the cap after a pass (`answer_tokens`) reached it: it was more than an
    answer (a call the cap cut off), so the turn's later replies get the whole cap."""

    def check_passed(self) -> bool:
        """The gate's check after the last change passed, nothing changed since: the answer
        is due."""
        return self.gate is not None and self.gate.passed()

    def unreadable(self, parsed: ParseResult) -> bool:
        """Whether the model has now sent MAX_UNREADABLE replies in a row that held calls it
        could not write (each got its parse error): a small model that repeats a broken
        call would spend the turn's whole step budget on it."""
        self.unreadable_in_a_row = self.unreadable_in_a_row + 1 if not parsed.calls else 0
        return self.unreadable_in_a_row >= MAX_UNREADABLE
    stop_holds: int = 0
    """How many times a Stop hook kept this turn going."""

    def result(self, text: str, stop: str, error: str | None = None,
               checks: list[str] | None = None) -> TurnResult:
        self.conv.usage = self.conv.usage + self.usage
        self.conv.requests += self.requests
        return TurnResult(text, stop, self.requests, self.usage, list(self.conv.evidence), error,
                          checks or [])


async def closing_reply(loop: TurnLoop, conv: Conversation, note: str) -> TurnResult:
    """One request without tools on the history as it stands, with `note` (a sub-agent a
    budget stopped reports from what it has); the reply ends the history."""
    users = [i for i, m in enumerate(conv.messages) if m.role == "user"]
    steps = TurnSteps(loop.table, loop.dispatcher.ctx, conv.evidence)  # no calls run here
    turn = loop._turn = TurnState(conv, steps, start=users[-1] if users else 0)
    try:
        reply = await loop.ask(turn, tools=False, note=note)
    except ProviderError as exc:
        return loop.fail(turn, exc)
    return loop.finish(turn, reply, loop.parse(reply).text)


READ_FILE = "read_file"
PREREAD_FILES = 4
PREREAD_FILE_BYTES = 12_000
PREREAD_TOTAL_BYTES = 24_000
"""At most this many named files, each and in all this small, are read before the first
reply: a small model's context holds them beside the prompt (a bigger file is left for the
model to read in parts)."""


def small_files(root: Path, names: Sequence[str]) -> list[str]:
    """The names among `names` of regular files under `root` small enough to read whole."""
    chosen: list[str] = []
    total = 0
    for name in names[:PREREAD_FILES]:
        try:
            size = (root / name).stat().st_size
        except (OSError, ValueError):
            continue
        if size <= PREREAD_FILE_BYTES and total + size <= PREREAD_TOTAL_BYTES and (root / name).is_file():
            chosen.append(name)
            total += size
    return chosen


def assistant_message(parsed: ParseResult, reply: Reply, settings: TurnSettings) -> Message:
    """A reply as it is kept in the history (its calls alone with `terse_history`)."""
    parts: list = []
    if settings.keep_thinking and parsed.thinking:
        parts.append(Thinking(parsed.thinking))
    if parsed.text and not (parsed.calls and settings.terse_history):
        parts.append(Text(parsed.text))
    elif not parsed.calls:  # a refused call: keep what the model sent so the error makes sense
        parts.append(Text(reply.text or "(empty reply)"))
    parts.extend(parsed.calls)
    return Message("assistant", parts)


def coach_setup(settings: TurnSettings, table: ToolTable, mode: ProtocolMode, ctx: ToolContext) -> CoachSetup:
    """What the turn's coach needs: the profile's switches, and how a call is written out."""

    def as_written(name: str, arguments: Mapping[str, str]) -> str:
        """A call as this protocol writes it, for the model to send: native JSON, or the text
        protocol's form without its tags. Shown whole in a message of ours, a tagged call
        reads as one already made: the model went on with the result it expected (the stop at
        the result marker left its reply empty, at any temperature), and sent the call the
        same message held without the tags."""
        if mode == "text":
            return render_call_as_text(ToolCall("example", name, dict(arguments)), table, tagged=False)
        return json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)

    return CoachSetup(profile="small" if settings.nudges else "full", nudges=settings.nudges,
                      opening_note=settings.opening_note, rules_off=settings.rules_off,
                      show_call=as_written, ctx=ctx, take_version=settings.take_version)


def batches(calls: Sequence[ToolCall], table: ToolTable) -> list[list[ToolCall]]:
    """Consecutive read-only calls run together; a call with side effects runs alone, in order."""
    out: list[list[ToolCall]] = []
    previous_read_only = False
    for call in calls:
        tool = table.get(call.name)
        read_only = tool is not None and tool.read_only
        if read_only and previous_read_only:
            out[-1].append(call)
        else:
            out.append([call])
        previous_read_only = read_only
    return out


def unique_ids(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """Results are matched by call id, so a server that repeats an id gets fresh ones."""
    seen: set[str] = set()
    out = []
    for call in calls:
        if call.id in seen or not call.id:
            call = ToolCall(new_call_id(), call.name, call.arguments)
        seen.add(call.id)
        out.append(call)
    return out


def cancelled_evidence(call: ToolCall, result: ToolResult) -> Evidence:
    return Evidence(call, time.time(), 0.0, "cancelled", result.content, error=True)


def cancelled_result(call: ToolCall) -> ToolResult:
    return ToolResult(call.id, call.name, "Cancelled by the user before it finished.", True)


def with_repair_note(result: ToolResult, note: str | None) -> ToolResult:
    """`result` with `note` after it: what the parser repaired in its call (a repair is never
    silent), or what the harness found when it ran the call itself."""
    if not note:
        return result
    return ToolResult(result.call_id, result.name, f"{result.content}\n\n{note}", result.is_error)


def add_note(messages: list[Message], note: str) -> None:
    """`note` at the end of the last result when the history ends with results (the model
    reads it with them, and the request's prefix stays what the server has cached), else a
    user message of its own."""
    last = messages[-1] if messages else None
    if last is None or last.role != "tool" or not isinstance(last.parts[-1], ToolResult):
        messages.append(Message.user(note))
        return
    messages[-1] = Message("tool", [*last.parts[:-1], with_repair_note(last.parts[-1], note)])
