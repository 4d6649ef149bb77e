"""Keep every request inside the model's context window.

Three pieces:

- `TokenEstimator`: a cheap count (about four characters a token) that
  calibrates itself against the counts the provider reports.
- `context_window`: how many tokens a model can take, from an explicit
  setting or the provider itself (`model_table.known_context_window` is the table of
  known hosted models the providers consult).
- `Compressor`: the loop's `ContextGuard`. Before a request would overflow it
  first trims old tool results, then condenses the history before the current
  turn into one summary (or, if the summary request fails, drops the oldest
  messages). The current turn's user request is never touched, and the
  history stays valid for every provider: no call without its result, no
  leading tool message.

Context, deepthink, sessions, in detail:

- `context.Compressor` is the loop's `ContextGuard`: before every request it estimates the
  tokens (calibrated by `observe` against the provider's counts) and, over the window minus a
  reserve, trims old tool results, then condenses the history before the current turn into one
  summary message (a tool-free request), falling back to dropping the oldest messages at a
  valid boundary. At most one condensation per request; it never raises.
- `deepthink.Deepthink.run` drives five `run_turn`s on one `Conversation`; the review stage gets
  `GitOps.diff_since(head at start)`; `verification_report` reads each shell record's
  `Evidence.command` (never the result text), and its text is appended after the model's last answer.
- `session.SessionRecord` holds the messages (`Message.to_dict`), the last turn's evidence and
  usage; `SessionStore.save` writes atomically (0600) and refuses to overwrite a file it cannot
  parse.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Awaitable, Callable, Sequence

from ..core.history_prefix import SeenPrefix
from ..core.messages import (
    Done,
    Image,
    Message,
    Part,
    Text,
    TextDelta,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
)
from ..core.model_table import CHARS_PER_TOKEN
from ..core.textclip import keep_ends, keep_head
from ..core.toolspec import Tool
from ..providers.base import Provider, ProviderError, RequestOptions

MESSAGE_OVERHEAD = 4
"""Tokens each message costs beyond its content (role markers, separators)."""
PART_OVERHEAD = 3
IMAGE_TOKENS = 1_600
"""What an attached image is counted as: about the most the APIs bill for one (Anthropic:
width x height / 750, images scaled to at most about 1.15 megapixels)."""
"""Tokens a tool call or result costs beyond its text (ids, names, framing)."""

DEFAULT_WINDOW = 8192
"""A conservative window for models nobody told us about."""
SUMMARY_HEADER = "[Summary of the earlier conversation]"
_DROP_NOTE_END = " earlier messages were dropped to fit the model's context window]"
DROP_NOTE = "[{n}" + _DROP_NOTE_END
TRIM_NOTE = "[result trimmed to save context: {n} characters; run the tool again if you need it]"
_TRIMMED_PREFIX = "[result trimmed to save context:"

SUMMARY_PROMPT = (
    "Summarize the conversation transcript you are given, for the assistant who will "
    "continue the conversation without seeing it. Be concise. Keep the decisions made, "
    "the names of files and paths touched, the facts learned (commands, errors, results) "
    "and the open tasks or next steps. Write plain text, with no preamble."
)
TRANSCRIPT_INTRO = "Transcript of the earlier conversation:\n\n"
RESULT_CLIP = 1500
"""Characters of each tool result shown in a summary transcript."""
ARGUMENTS_CLIP = 500


# ---------------------------------------------------------------- estimating


CALL_COSTS_KEPT = 4096


class TokenEstimator:
    """About four characters a token, scaled by a ratio learned from reported counts.

    `raw` counts are uncalibrated; `estimate` applies the ratio. `observe` moves
    the ratio toward reported/estimated as an exponential moving average,
    clamped to [0.5, 3] so one odd count cannot throw it far.
    """

    MIN_RATIO = 0.5
    MAX_RATIO = 3.0
    IMPLAUSIBLE = 0.2
    """Below this reported/estimated ratio a count is taken as a cache artefact
    (some servers report only the tokens they did not have cached) and ignored."""

    def __init__(self, ratio: float = 1.0, smoothing: float = 0.5) -> None:
        self.ratio = _clamp(ratio, self.MIN_RATIO, self.MAX_RATIO)
        self.smoothing = smoothing
        self.samples = 0
        self._tool_costs: dict[tuple[str, str, type, str], float] = {}
        self._call_costs: dict[int, tuple[ToolCall, float]] = {}
        """A call's cost by its identity (calls are frozen): every request estimates the whole
        history again, and encoding each old call's arguments again grew with it."""
        self._message_costs: dict[int, tuple[Message, tuple[Part, ...], float]] = {}
        """A message's cost by its identity while it holds the same (frozen) parts: the
        history is estimated twice a request, and costing every part again grew with it."""
        self._totals: tuple[SeenPrefix[float], SeenPrefix[float]] = (SeenPrefix(), SeenPrefix())
        """Running totals of the two lists estimated each request, the history and the
        request sent (the system message, then the history): each is walked only where
        it is new."""

    def text_cost(self, text: str) -> float:
        return len(text) / CHARS_PER_TOKEN

    def part_cost(self, part: Part) -> float:
        if isinstance(part, (Text, Thinking)):
            return self.text_cost(part.text)
        if isinstance(part, ToolCall):
            return self._call_cost(part)
        if isinstance(part, ToolResult):
            return PART_OVERHEAD + self.text_cost(part.name + part.content)
        if isinstance(part, Image):
            return IMAGE_TOKENS
        return 0.0

    def _call_cost(self, call: ToolCall) -> float:
        known = self._call_costs.get(id(call))
        if known is not None and known[0] is call:
            return known[1]
        arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
        cost = PART_OVERHEAD + self.text_cost(call.name + arguments)
        if len(self._call_costs) >= CALL_COSTS_KEPT:
            self._call_costs.clear()  # a long session: start over rather than grow for good
        self._call_costs[id(call)] = (call, cost)
        return cost

    def message_cost(self, message: Message) -> float:
        parts = message.parts
        known = self._message_costs.get(id(message))
        if (known is not None and known[0] is message and len(known[1]) == len(parts)
                and all(map(operator.is_, known[1], parts))):
            return known[2]
        cost = MESSAGE_OVERHEAD + sum(self.part_cost(p) for p in parts)
        if len(self._message_costs) >= CALL_COSTS_KEPT:
            self._message_costs.clear()  # a long session: start over rather than grow for good
        self._message_costs[id(message)] = (message, tuple(parts), cost)
        return cost

    def tools_cost(self, tools: Sequence[Tool] | None) -> float:
        return sum(self._tool_cost(t) for t in tools or ())

    def raw(
        self, messages: Sequence[Message], system: str = "", tools: Sequence[Tool] | None = None
    ) -> float:
        """The uncalibrated count of a request: system prompt, messages and tool schemas."""
        fixed = MESSAGE_OVERHEAD + self.text_cost(system) if system else 0.0
        return fixed + self.messages_cost(messages) + self.tools_cost(tools)

    def messages_cost(self, messages: Sequence[Message]) -> float:
        totals = self._running_totals(messages)
        kept = totals.follow(messages)
        total = totals.values[-1] if kept else 0.0
        for message in messages[kept:]:
            total += self.message_cost(message)
            totals.add(message, total)
        return total

    def _running_totals(self, messages: Sequence[Message]) -> SeenPrefix[float]:
        """The running totals that start with the same message; new ones in place of the
        totals used less recently when neither does."""
        first = messages[0] if messages else None
        newer, older = self._totals
        if newer.first is not first:
            self._totals = (older, newer) if older.first is first else (SeenPrefix(), newer)
        return self._totals[0]

    def calibrated(self, raw: float) -> int:
        return math.ceil(raw * self.ratio)

    def estimate(
        self, messages: Sequence[Message], system: str = "", tools: Sequence[Tool] | None = None
    ) -> int:
        return self.calibrated(self.raw(messages, system, tools))

    def observe(self, estimated: float, reported: int) -> None:
        """Learn from one request: `estimated` is its raw count, `reported` the provider's."""
        if estimated <= 0 or reported <= 0:
            return
        sample = reported / estimated
        if sample < self.IMPLAUSIBLE:
            return
        sample = _clamp(sample, self.MIN_RATIO, self.MAX_RATIO)
        if self.samples == 0:  # the first real count beats the prior guess
            self.ratio = sample
        else:
            self.ratio += self.smoothing * (sample - self.ratio)
        self.ratio = _clamp(self.ratio, self.MIN_RATIO, self.MAX_RATIO)
        self.samples += 1

    def _tool_cost(self, tool: Tool) -> float:
        """A tool's schema as the provider sends it; computed once per tool."""
        key = (tool.name, tool.description, tool.params,
               json.dumps(tool.schema, sort_keys=True) if tool.schema is not None else "")
        if key not in self._tool_costs:
            schema = {"name": tool.name, "description": tool.description,
                      "parameters": tool.json_schema()}
            self._tool_costs[key] = PART_OVERHEAD + self.text_cost(json.dumps(schema))
        return self._tool_costs[key]


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


# ---------------------------------------------------------------- window sizes


async def context_window(
    provider: Provider, model: str, settings_override: int | None = None,
    known: int | None = None,
) -> int:
    """How many tokens `model` can take: the setting, else what the provider says, else the
    model table's window for its family (`known`), else 8192.

    Each provider knows its own answer (`Provider.context_window`): a hosted model's from
    the table of known windows, a local server's by asking it (Ollama's `/api/show`, an
    OpenAI-compatible server's model list). A provider that cannot tell says None.
    """
    if settings_override is not None and settings_override > 0:
        return settings_override
    try:
        asked = await provider.context_window(model)
    except ProviderError:
        asked = None
    if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
        return asked
    return known if known else DEFAULT_WINDOW


# ---------------------------------------------------------------- the guard


class Compressor:
    """The loop's ContextGuard: trims, condenses or drops so each request fits.

    `reserve` is the room kept for the reply (at most a quarter of the window).
    `fit` never raises and never recurses: at most one condensation per call,
    and if the request is still too big it is sent anyway, with one notice.
    """

    def __init__(
        self,
        provider: Provider,
        model: str,
        window: int,
        *,
        enabled: bool = True,
        reserve: int = 4096,
        estimator: TokenEstimator | None = None,
        notice: Callable[[str], None] = lambda message: None,
        before_condense: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.provider = provider
        self.before_condense = before_condense
        """Told (`manual` or `auto`) right before the history is condensed: PreCompact hooks."""
        self.model = model
        self.window = max(1, window)
        self.enabled = enabled
        self.reserve = max(0, min(reserve, self.window // 4))
        self.estimator = estimator or TokenEstimator()
        self.notice = notice

    @property
    def limit(self) -> int:
        """The most tokens a request may take and still leave room for the reply."""
        return self.window - self.reserve

    # ------------------------------------------------------------ ContextGuard

    async def fit(
        self, messages: list[Message], turn_start: int, system: str, tools: Sequence[Tool] | None
    ) -> int:
        if not self.enabled:
            return turn_start
        turn_start = max(0, min(turn_start, len(messages)))
        raw = self.estimator.raw(messages, system, tools)
        if self._fits(raw):
            return turn_start
        originals = messages[:turn_start]  # the summary should see results before trimming
        raw = self._trim_results(messages, turn_start, raw)
        if not self._fits(raw) and _has_history_to_condense(messages, turn_start):
            turn_start = await self._condense_or_drop(messages, turn_start, originals, raw)
            raw = self.estimator.raw(messages, system, tools)
        if not self._fits(raw):
            self.notice(
                f"Context: the request may exceed the model's context "
                f"({self.estimator.calibrated(raw):,} of {self.window:,} tokens)"
            )
        return turn_start

    def observe(
        self, request: Sequence[Message], tools: Sequence[Tool] | None, usage: Usage
    ) -> None:
        """Calibrate against the provider's prompt count (input_tokens, cached included)."""
        self.estimator.observe(self.estimator.raw(request, "", tools), usage.input_tokens)

    async def compact(self, messages: list[Message], turn_start: int | None = None) -> int:
        """Condense everything before the latest user request (the /compact command).

        Returns the new index of that request. On failure the history is left as it was.
        """
        start = latest_request_index(messages) if turn_start is None else turn_start
        start = max(0, min(start, len(messages)))
        if not _has_history_to_condense(messages, start):
            self.notice("Context: nothing to condense yet")
            return start
        try:
            await self._announce("manual")
            summary = await self._summarize(messages[:start])
        except ProviderError as exc:
            self.notice(f"Context: could not condense the conversation ({exc})")
            return start
        return self._replace_with_summary(messages, start, summary)

    # ------------------------------------------------------------ step (a): trim

    def _trim_results(self, messages: list[Message], turn_start: int, raw: float) -> float:
        """Replace old tool results with a short note, oldest first, until the request fits."""
        count, saved = 0, 0.0
        for index in _trimmable_messages(messages, turn_start):
            if self._fits(raw):
                break
            message, gain, trimmed = self._trim_message(messages[index], raw)
            if trimmed:
                messages[index] = message  # a new Message: earlier requests keep their copy
                raw -= gain
                saved += gain
                count += trimmed
        if count:
            tokens = self.estimator.calibrated(saved)
            noun = "result" if count == 1 else "results"
            self.notice(f"Context: trimmed {count} old tool {noun} (≈{tokens:,} tokens)")
        return raw

    def _trim_message(self, message: Message, raw: float) -> tuple[Message, float, int]:
        """Trim this message's results one by one, stopping once the request fits."""
        parts: list[Part] = []
        gain, trimmed = 0.0, 0
        for part in message.parts:
            if isinstance(part, ToolResult) and _worth_trimming(part) and not self._fits(raw - gain):
                short = ToolResult(part.call_id, part.name, TRIM_NOTE.format(n=len(part.content)),
                                   part.is_error)
                gain += self.estimator.part_cost(part) - self.estimator.part_cost(short)
                trimmed += 1
                part = short
            parts.append(part)
        return Message(message.role, parts), gain, trimmed

    # ------------------------------------------------------------ step (b): condense

    async def _condense_or_drop(
        self, messages: list[Message], turn_start: int, originals: list[Message], raw: float
    ) -> int:
        try:
            await self._announce("auto")
            summary = await self._summarize(originals)
        except ProviderError as exc:
            return self._drop_oldest(messages, turn_start, raw, str(exc))
        return self._replace_with_summary(messages, turn_start, summary)

    async def _announce(self, trigger: str) -> None:
        if self.before_condense is not None:
            await self.before_condense(trigger)

    async def _summarize(self, old: Sequence[Message]) -> str:
        """One tool-free request to the same model; its transcript takes about half the window."""
        text = clip_middle(transcript(old), self._transcript_budget())
        request = [Message.system(SUMMARY_PROMPT), Message.user(TRANSCRIPT_INTRO + text)]
        summary, usage = "", Usage()
        async for event in self.provider.stream(request, None, RequestOptions(self.model)):
            if isinstance(event, TextDelta):
                summary += event.text
            elif isinstance(event, Done):
                usage = event.usage
        if usage.input_tokens:
            self.observe(request, None, usage)
        if not summary.strip():
            raise ProviderError("the model returned an empty summary", "api")
        return keep_head(summary.strip(), self._summary_budget(), "characters cut")

    def _replace_with_summary(self, messages: list[Message], turn_start: int, summary: str) -> int:
        messages[:turn_start] = [Message.user(f"{SUMMARY_HEADER}\n{summary}")]
        noun = "message" if turn_start == 1 else "messages"
        self.notice(f"Context: condensed {turn_start} earlier {noun} into a summary")
        return 1

    def _drop_oldest(self, messages: list[Message], turn_start: int, raw: float, why: str) -> int:
        cut = self._drop_boundary(messages, turn_start, raw)
        messages[:cut] = [Message.user(DROP_NOTE.format(n=cut))]
        noun = "message" if cut == 1 else "messages"
        self.notice(f"Context: the summary request failed ({why}); dropped the {cut} oldest {noun}")
        return turn_start - cut + 1

    def _drop_boundary(self, messages: Sequence[Message], turn_start: int, raw: float) -> int:
        """The fewest oldest messages whose loss makes the request fit. The cut falls only
        before a user message, so no call loses its result and no tool message leads."""
        note_cost = self.estimator.message_cost(Message.user(DROP_NOTE.format(n=turn_start)))
        dropped = 0.0
        for index in range(turn_start - 1):
            dropped += self.estimator.message_cost(messages[index])
            at_user = messages[index + 1].role == "user"
            if at_user and self._fits(raw - dropped + note_cost):
                return index + 1
        return turn_start

    # ------------------------------------------------------------ budgets

    def _fits(self, raw: float) -> bool:
        return self.estimator.calibrated(raw) <= self.limit

    def _chars_for(self, tokens: float) -> int:
        return max(200, int(tokens * CHARS_PER_TOKEN / self.estimator.ratio))

    def _transcript_budget(self) -> int:
        overhead = len(SUMMARY_PROMPT) + len(TRANSCRIPT_INTRO)
        return max(200, self._chars_for(self.window / 2) - overhead)

    def _summary_budget(self) -> int:
        """A rambling summary must not take the room it was meant to free."""
        return self._chars_for(self.limit / 4)


# ---------------------------------------------------------------- history helpers


def latest_request_index(messages: Sequence[Message]) -> int:
    """Index of the last user message that is not one of this module's own notes."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user" and not _is_own_note(messages[index]):
            return index
    return 0


def _is_own_note(message: Message) -> bool:
    text = message.text
    return text.startswith(SUMMARY_HEADER) or (text.startswith("[") and text.endswith(_DROP_NOTE_END))


def _has_history_to_condense(messages: Sequence[Message], turn_start: int) -> bool:
    """Something before the turn that is not already a summary or a drop note."""
    return any(not _is_own_note(m) for m in messages[:turn_start])


def _trimmable_messages(messages: Sequence[Message], turn_start: int) -> list[int]:
    """Tool messages that may be trimmed, in the order to trim them: the history before
    the turn oldest first, then the turn's own steps except its last one."""
    tools = [i for i, m in enumerate(messages) if m.role == "tool"]
    before = [i for i in tools if i < turn_start]
    current = [i for i in tools if i >= turn_start]
    return before + current[:-1]


def _worth_trimming(result: ToolResult) -> bool:
    note = TRIM_NOTE.format(n=len(result.content))
    return not result.content.startswith(_TRIMMED_PREFIX) and len(result.content) > 2 * len(note)


def transcript(messages: Sequence[Message]) -> str:
    """A plain-text rendering of a history for the summary request."""
    lines: list[str] = []
    for message in messages:
        speaker = {"user": "User", "assistant": "Assistant", "system": "System"}.get(
            message.role, "Tool"
        )
        for part in message.parts:
            line = _transcript_line(speaker, part)
            if line:
                lines.append(line)
    return "\n\n".join(lines)


def _transcript_line(speaker: str, part: Part) -> str:
    if isinstance(part, Text):
        return f"{speaker}: {part.text}" if part.text.strip() else ""
    if isinstance(part, ToolCall):
        arguments = json.dumps(part.arguments, ensure_ascii=False, default=str)
        return f"Assistant called {part.name}({clip_middle(arguments, ARGUMENTS_CLIP)})"
    if isinstance(part, ToolResult):
        label = "error from" if part.is_error else "result of"
        return f"Tool {label} {part.name}: {clip_middle(part.content, RESULT_CLIP)}"
    return ""  # thinking is the model's scratch work, not part of the record


def clip_middle(text: str, limit: int) -> str:
    """Keep the start and (mostly) the end: the latest part of a history matters most."""
    if len(text) <= limit:
        return text
    head = limit // 4
    return keep_ends(text, head, limit - head)
