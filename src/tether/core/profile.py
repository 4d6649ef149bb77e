"""Model profiles: what tether changes for a small local model, and how it tells one.

A model at or under about 8B parameters follows a long tool menu, several edit
modes and native tool schemas poorly; it guesses paths, answers without looking,
and stops at the first error. The small profile is a set of levers against those
habits, each a field of `Profile` so it can be measured on and off
(`bench/small_model`); the full profile is today's behaviour for large models.

Selection (`choose_profile`, `detect_profile`): the `profile` setting, else a size in
the model name (`1.5b`, `e4b`, `270m`), else the parameter count the server states
(llama.cpp's `/v1/models` `meta.n_params`, Ollama's `/api/show`), asked once, else the
`profile` of the model table's entry for the family (models.toml: `gemma3n` is small,
`gpt-4o` full); a model of unknown size and family gets the full profile, wherever it runs
(a local server may serve a large model under any name).

What else varies by model is read from the same entry: the protocol (`choose_protocol`:
the setting, else text for the small profile, else text when the entry says the family's
native tool calls are not to be trusted, else what the provider says) and the temperature
(`default_temperature`: the setting, else the entry's, else the profile's).

Profiles: small and full, in detail:

`profile.Profile` is a frozen set of levers (`short_menu`, `simple_edit`, `plain_reads`, `text_protocol`,
`worked_example`, `project_map`, `nudges`, `opening_note`, `stop_at_call`, `max_reply_tokens`,
`terse_history`, `temperature`, `max_steps`/`soft_pressure_after`, `preread`, `verify`, `redraw_empty`,
`resume_calls`, `open_empty`, `grammar`, and `rules_off` for the coach's rule levers); `SMALL` has them on (but `grammar` and `redraw_empty`),
`FULL` off (but `verify`). A lever is on unless its field holds the value `LEVER_OFF` gives it (a temperature of 0 is
on). `choose_profile` is pure (setting, model name, stated size ->
`ProfileChoice`: name and reason); `detect_profile` asks the provider's `stated_billions` only
when the setting is auto and the name states no size (llama.cpp's `/v1/models` `meta.n_params`,
Ollama's `/api/show` `general.parameter_count` or `parameter_size`; once, short timeout). An
unknown size is the full profile, local server or not; `Runtime.profile_shown` puts the choice
and its reason in the status line, and the json init carries `profile_reason`. `TETHER_PROFILE_OFF` switches levers off by name so the benchmark
can measure each one; nothing else reads it.

`Runtime.apply_profile` is idempotent (a `/model` switch runs it again): it swaps `edit_file`
for `tools/simple_edit.py`'s variant and back, removes and re-adds `tool_search`, and sets the
loop's `menu` (`toolmenu.ToolMenu`, None = the whole table). The table always holds every tool,
so the dispatcher, the parser and the permission checks see them all; the menu only decides
what a request offers (`TurnLoop.offered`, and the text-mode prompt) and refuses a deferred
tool that is not loaded yet. Loaded names live in `Conversation.loaded_tools`; tools a resumed
history already called count as loaded. A new tool is deferred the same way unless it is named
in `profile.CORE_TOOLS`.

The small profile's help for a turn lives above the engine, in `assist/` (the loop sees it only
through `engine/turn_assist.py`): the engine records what the turn did (`turn_record.TurnRecord`, a
frozen `TurnEvidence` snapshot), and `assist/rules.RULES` is one table of rules over that
snapshot (name, lever, profiles, condition, message, once per turn); `assist/coach.py` sends
the first rule that holds as a user message. A message only ever re-sends a call the model
itself wrote; the harness never computes a call's arguments. Before a call runs,
`Coach.call_reason` (over `assist/call_guard.call_reasons`) may send the model a reason once
(an existing file overwritten unread, a write that drops most of a file, a made-up count, an
edit of a test the request says to keep, a script that does not exist); the identical call
sent again runs. Each rule and the guard has a lever (`RULE_LEVERS`); `nudges` switches them
all off. `TurnState.unreadable` counts replies in a row that held only parse errors; at
`MAX_UNREADABLE` the turn ends with a notice.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace

from .model_table import ModelEntry, ModelMatch, ProfileName

__all__ = ["ProfileName"]  # defined with the model table, whose entries name profiles

SMALL_MODEL_MAX_BILLIONS = 8.5
""""About 8B": Llama 3.1 8B (8.0B) and Qwen2.5 7B (7.6B) are small; Gemma 2 9B (9.2B) is not."""

CORE_TOOLS = (
    "read_file", "write_file", "edit_file", "run_cmd", "list_dir", "search_in_file", "send_input",
    "submit_plan",  # only in the table while plan mode is on, and then it must be offered
    "use_skill",  # only in the table when skills were found, and the prompt lists them
)

LEVERS_ENV = "TETHER_PROFILE_OFF"
"""Comma-separated lever names to switch off (for the benchmark)."""
LEVERS_ON_ENV = "TETHER_PROFILE_ON"
"""Comma-separated lever names to switch on (a lever off by default, to measure it)."""


@dataclass(frozen=True)
class Profile:
    name: ProfileName
    short_menu: bool = False
    """Offer only CORE_TOOLS; the rest wait behind tool_search."""
    simple_edit: bool = False
    """edit_file offers one mode: old_content -> new_content."""
    plain_reads: bool = False
    """Off by default (measured: it lost two of our own held-out tasks): with `simple_edit`,
    read_file shows a file's text as it is, its lines not numbered. The numbers add about a
    third to the tokens of a read (test files, the Qwen2.5 tokenizer), paid in prefill at every
    read; but a small model counts and places lines by them, and without them it re-read the
    same files over and over on a tune exercise."""
    text_protocol: bool = False
    """Prefer the text protocol when the protocol setting is auto."""
    worked_example: bool = False
    """One short worked example in the system prompt."""
    project_map: int = 0
    """Characters of project map in the system prompt (0: none)."""
    nudges: bool = False
    """The coach's rules on the turn's evidence (assist/rules.py) and its ask-once reasons a
    call waits (assist/call_guard.py); RULE_LEVERS switch single rules off."""
    opening_note: bool = False
    """A reminder to act with the tools beside the request, in each turn's first request."""
    stop_at_call: bool = False
    """Text protocol: end a reply once it holds one whole call (the rest is invented)."""
    max_reply_tokens: int | None = None
    """A cap on each reply: a small model that loops on its own text stops there."""
    answer_tokens: int | None = None
    """With `max_reply_tokens` (lever `reply`): the cap once the check after the last change
    passed. The answer is due then (a sentence); a small model wrote minutes of prose after a
    pass, the test file copied out again, and a further call (a changelog edit) fits."""
    terse_history: bool = False
    """The history keeps a reply's calls, not its prose, and not an answer a nudge rejects."""
    temperature: float | None = None
    """Sent when the user has set no temperature."""
    max_steps: int | None = None
    soft_pressure_after: int | None = None
    """Used when the user has set neither."""
    preread: bool = False
    """Read the project files the request names before the first request, as read_file calls
    through the dispatcher (`TurnLoop.preread`): the model starts from their text, as aider
    starts from the files in the chat, instead of answering or writing without opening them."""
    verify: bool = True
    """Run the check the request names after a change (assist/verify.py), in every profile;
    the `verify_after_change` setting says how many fixes it may ask for."""
    verify_each_change: bool = False
    """Also run that check right after each change, its outcome sent with the change's result
    (as aider runs the tests after each edit), instead of only when the model would answer."""
    fix_attempts: int | None = None
    """The fixes the check after a change asks for, used when the user has not set
    `verify_after_change` (None: that setting's default). A small model that answers "fixed"
    over a failing check twice often still has time to try again, its reply sampled after
    the first (lever `tries`: 4; off in every profile until it wins on the held-out
    benchmark)."""
    check_first: bool = False
    """Run the tests a change request names before the model's first reply, shown as calls
    with their results (assist/verify.VerifyGate.before_start). Off in every profile until it
    wins on the held-out benchmark; TETHER_PROFILE_ON=first."""
    redraw_empty: bool = False
    """A reply with nothing in it (no text, no call; or cut to nothing at a result marker) is
    drawn again once from the same request with a one-line cue that stays out of the history
    (engine/loop.REDRAW_CUE), before any rule answers it: one request in seven of a 1.5B
    model's after a tool result came back empty at temperature 0, and the note that said so
    was echoed or drew another empty reply. Off in every profile: on the held-out parts it
    solved no more of our own tasks (5 of 16, in a quarter more requests) and fewer exercises
    (it lost accumulate, solved by every run before); TETHER_PROFILE_ON=redraw."""
    take_version: bool = False
    """A reply with no call that shows a whole new version of a file the turn read, for a
    request to change it, is that write_file call (aider's whole-file edit format), run
    through the dispatcher with a note saying so (assist/coach.Coach.reply_calls)."""
    trace_failure: bool = False
    """Off by default (not yet measured on the held-out part): when the model answers a
    failing check with the code unchanged, its reply leaves a terse history (it copies its
    last reply) and it is asked to go through its code with the first failing test's input
    (assist/first_failure.py) before it sends a fix."""
    open_empty: bool = False
    """Text protocol: a reply with nothing in it (no text, no call; or cut to nothing at a
    result marker) is drawn again once with a call's opening (`{"name": "`) as its start,
    where the provider can continue a reply, unless the check after the last change passed
    (the answer is due then). A 1.5B model's empty replies begin with its end-of-turn token
    at 0.2-0.6, a call's `{"` one to three nats behind; seven such requests of the tuning
    part, started so, came back a call seven times (four of them the change or run the
    request wanted). The same request with a cue (`redraw`) got a call 6 times of 14."""
    resume_calls: bool = False
    """Text protocol: a reply that stopped with a call open between its raw blocks (the old
    text written, then a tool result begun, cut by the stop strings) is carried on: the same
    request with the reply so far and the tool's next block opened as the start of the reply,
    where the provider can continue a reply (llama.cpp's server, vLLM, the in-process model).
    At temperature 0 the same request wrote the same open call again however the error read."""
    grammar: bool = False
    """Text protocol: constrained decoding where the server supports it, so a reply is one
    well-formed call to a tool on the menu or a plain answer (protocol/grammar.py). Off in
    every profile until it wins on the held-out benchmark; TETHER_PROFILE_ON=grammar."""
    rules_off: frozenset[str] = frozenset()
    """The coach's rule levers switched off (RULE_LEVERS), each by its own name."""

    def levers(self) -> list[str]:
        """The names of the levers that are on (for the json output and the benchmark): the
        profile's own, then the rule levers of the rules it runs, less those switched off."""
        on = [name for name in LEVER_NAMES if self._is_on(name)]
        rules = RULE_LEVERS if self.nudges else ("leftovers", "missing", "progress") if self.verify else ()
        rules_on = [name for name in rules if name not in self.rules_off]
        if "leftovers" not in rules_on:  # the search after each change is the leftovers gate's
            rules_on = [name for name in rules_on if name != "progress"]
        return on + rules_on

    def _is_on(self, lever: str) -> bool:
        """A lever is on unless its field holds the value that switches it off (a temperature
        of 0 is on: it is a setting, where None is none)."""
        field_name = LEVER_FIELDS[lever]
        return getattr(self, field_name) != LEVER_OFF[lever][field_name]

    def without(self, names: Iterable[str]) -> Profile:
        """This profile with the named levers switched off; unknown names raise ValueError."""
        return self._switched(names, LEVER_OFF)

    def with_levers(self, names: Iterable[str]) -> Profile:
        """This profile with the named levers switched on (those that have an `on` value:
        LEVER_ON); other names raise ValueError."""
        return self._switched(names, LEVER_ON)

    def _switched(self, names: Iterable[str], values: dict[str, dict[str, object]]) -> Profile:
        changes: dict[str, object] = {}
        rules_off = set(self.rules_off)
        for raw in names:
            name = raw.strip()
            if not name:
                continue
            if name in RULE_LEVERS:  # a rule lever is on unless named in rules_off
                (rules_off.add if values is LEVER_OFF else rules_off.discard)(name)
                continue
            if name not in values:
                known = ", ".join((*values, *RULE_LEVERS))
                raise ValueError(f"unknown profile lever {name!r}; known: {known}")
            changes.update(values[name])
        return replace(self, rules_off=frozenset(rules_off), **changes)  # type: ignore[arg-type]


LEVER_FIELDS = {
    "menu": "short_menu",
    "edit": "simple_edit",
    "plain": "plain_reads",
    "text": "text_protocol",
    "example": "worked_example",
    "map": "project_map",
    "nudges": "nudges",
    "note": "opening_note",
    "stop": "stop_at_call",
    "reply": "max_reply_tokens",
    "terse": "terse_history",
    "sampling": "temperature",
    "steps": "max_steps",
    "verify": "verify",
    "preread": "preread",
    "early": "verify_each_change",
    "take": "take_version",
    "redraw": "redraw_empty",
    "first": "check_first",
    "grammar": "grammar",
    "tries": "fix_attempts",
    "trace": "trace_failure",
    "resume": "resume_calls",
    "opening": "open_empty",
}
LEVER_NAMES = tuple(LEVER_FIELDS)
RULE_LEVERS = (
    "echo", "empty", "shown", "look", "waiting", "version", "failure", "claimed", "named", "open",
    "apply", "named_files", "check", "unseen", "number", "guard", "repeat", "no_tests", "leftovers",
    "missing", "recap", "definition", "progress", "lines", "sibling",
)
"""The levers of the coach's rules (assist/rules.py's table, its call guard and its repeat
notes, its note on a test file run directly that ran no test, and `recap`: the opening note
says the request again after the files read first, off by default: RULES_OFF_BY_DEFAULT;
`definition`: with `take`, a reply's block that is a new version of one function or class the
turn's files define once is that edit_file call, assist/shown_definition.py; `lines`: with
`take`, a reply's changed lines shown as `path:line: text` are that edit_file call,
assist/shown_lines.py; `sibling`: a request for a new file does not read first the files
it mentions of that file's kind, assist/turn.like_new_file),
each switching its rules off for measurement; `nudges` switches them all off. And
`leftovers`: the search after a change for a name it took out (assist/leftovers.py), part
of the checks after a change in every profile (not switched off by `nudges`), and `progress`:
the same search right after each change that took such a name out, its places left said with
the change's result (assist/leftovers.LeftoverGate.after_calls)."""
RULES_OFF_BY_DEFAULT = frozenset({"recap", "sibling"})
"""Rule levers the small profile has off until they win on the held-out part
(TETHER_PROFILE_ON switches one on): `sibling` solved the two tune tasks it came from and
changed nothing on the held-out part, where no request met it."""
LEVER_OFF: dict[str, dict[str, object]] = {
    "menu": {"short_menu": False},
    "edit": {"simple_edit": False},
    "plain": {"plain_reads": False},
    "text": {"text_protocol": False},
    "example": {"worked_example": False},
    "map": {"project_map": 0},
    "nudges": {"nudges": False},
    "note": {"opening_note": False},
    "stop": {"stop_at_call": False},
    "reply": {"max_reply_tokens": None, "answer_tokens": None},
    "terse": {"terse_history": False},
    "sampling": {"temperature": None},
    "steps": {"max_steps": None, "soft_pressure_after": None},
    "verify": {"verify": False},
    "preread": {"preread": False},
    "early": {"verify_each_change": False},
    "take": {"take_version": False},
    "redraw": {"redraw_empty": False},
    "first": {"check_first": False},
    "grammar": {"grammar": False},
    "tries": {"fix_attempts": None},
    "trace": {"trace_failure": False},
    "resume": {"resume_calls": False},
    "opening": {"open_empty": False},
}
LEVER_ON: dict[str, dict[str, object]] = {
    "grammar": {"grammar": True},
    "early": {"verify_each_change": True},
    "take": {"take_version": True},
    "redraw": {"redraw_empty": True},
    "first": {"check_first": True},
    "tries": {"fix_attempts": 4},
    "trace": {"trace_failure": True},
    "plain": {"plain_reads": True},
    "resume": {"resume_calls": True},
    "opening": {"open_empty": True},
}
"""How to switch a lever on: those off by default, and the small profile's own that other
profiles may measure."""

FULL = Profile("full")
SMALL = Profile(
    "small",
    short_menu=True,
    simple_edit=True,
    text_protocol=True,
    worked_example=True,
    project_map=700,
    nudges=True,
    opening_note=True,
    preread=True,
    verify_each_change=True,
    take_version=True,
    stop_at_call=True,
    resume_calls=True,
    open_empty=True,
    max_reply_tokens=1500,
    answer_tokens=400,
    terse_history=True,
    temperature=0.0,
    max_steps=18,
    soft_pressure_after=14,
    rules_off=RULES_OFF_BY_DEFAULT,
)
PROFILES: dict[str, Profile] = {"small": SMALL, "full": FULL}


def profile_named(name: str, levers_off: str = "", levers_on: str = "") -> Profile:
    """The profile called `name`, less the comma-separated `levers_off`, plus `levers_on` (the
    full profile has only the levers every profile shares, such as `verify`)."""
    return PROFILES[name].without(levers_off.split(",")).with_levers(levers_on.split(","))


# ---------------------------------------------------------------- telling a small model

_SIZE = re.compile(
    r"(?<![a-z0-9.])(?:(?P<experts>\d+)x)?e?(?P<number>\d+(?:\.\d+)?)(?P<unit>[bm])(?![a-z0-9])"
)


def billions_in_name(model: str) -> float | None:
    """The parameter count a model or file name states (`qwen2.5-coder:1.5b` -> 1.5,
    `gemma3n:e4b` -> 4, `gemma3:270m` -> 0.27, `mixtral:8x7b` -> 56), or None."""
    found = None
    for m in _SIZE.finditer(model.lower().replace("_", "-")):
        number = float(m.group("number")) * int(m.group("experts") or 1)
        found = number / 1000 if m.group("unit") == "m" else number
    return found


def billions_stated(parameter_size: object) -> float | None:
    """Ollama's `details.parameter_size` ("1.5B", "494.03M", "8.0B") in billions, or None."""
    if not isinstance(parameter_size, str):
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMBT])\s*", parameter_size.upper())
    if m is None:
        return None
    scale = {"K": 1e-6, "M": 1e-3, "B": 1.0, "T": 1e3}[m.group(2)]
    return float(m.group(1)) * scale


@dataclass(frozen=True)
class ProfileChoice:
    """The profile picked and why ("" when the setting named it), for the status line and the
    json output; `matched` is the model table's entry for the model, if any."""

    name: ProfileName
    reason: str
    matched: ModelMatch | None = None

    @property
    def entry(self) -> ModelEntry | None:
        return self.matched.entry if self.matched is not None else None


def _billions_shown(billions: float) -> str:
    if billions < 1:
        return f"{billions * 1000:.0f}M"
    return f"{billions:.1f}".removesuffix(".0") + "B"


def choose_profile(
    setting: str, model: str, stated_billions: float | None = None,
    matched: ModelMatch | None = None,
) -> ProfileChoice:
    """The profile for this model: the setting when it is not auto, else by the model's size,
    from its name or else as the server states it (`stated_billions`), else as the model
    table's entry for its family (`matched`) says. A model of unknown size and family gets the
    full profile: nudges and re-asked answers hold a large model back."""
    if setting in PROFILES:
        return ProfileChoice(setting, "", matched)  # type: ignore[arg-type]  # the user's choice
    named = billions_in_name(model)
    size, source = (named, "from its name") if named is not None else (stated_billions, "from the server")
    if size is None:
        if matched is not None and matched.entry.profile is not None:
            return ProfileChoice(matched.entry.profile,
                                 f"{model}, size unknown, model table: {matched.shown()}", matched)
        return ProfileChoice("full", f"{model}, size unknown", matched)
    name: ProfileName = "small" if size <= SMALL_MODEL_MAX_BILLIONS else "full"
    return ProfileChoice(name, f"{model}, {_billions_shown(size)} parameters ({source})", matched)


async def detect_profile(
    setting: str, provider: object, model: str, matched: ModelMatch | None = None
) -> ProfileChoice:
    """`choose_profile`, asking the provider for the model's size when the setting is auto and
    the name does not say (`async stated_billions(model) -> float | None`: llama.cpp's and
    Ollama's servers can tell; a failure or no answer is an unknown size)."""
    ask_size = getattr(provider, "stated_billions", None)
    if setting != "auto" or billions_in_name(model) is not None or ask_size is None:
        return choose_profile(setting, model, matched=matched)
    return choose_profile(setting, model, await ask_size(model), matched)


async def choose_protocol(
    setting: str, profile: Profile, entry: ModelEntry | None,
    native_supported: Callable[[], Awaitable[bool]],
) -> str:
    """"native" or "text": the setting when it is not auto; else text for a profile that
    prefers it, or for a family whose native tool calls the model table distrusts; else
    native when the provider can send them (`native_supported`, asked only then)."""
    if setting != "auto":
        return setting
    if profile.text_protocol or (entry is not None and entry.native_tools is False):
        return "text"
    return "native" if await native_supported() else "text"


def default_temperature(setting: float | None, profile: Profile, entry: ModelEntry | None) -> float | None:
    """The temperature to send: the user's, else the family's (its model card's advice, from
    the model table), else the profile's; None sends none."""
    if setting is not None:
        return setting
    if entry is not None and entry.temperature is not None:
        return entry.temperature
    return profile.temperature
