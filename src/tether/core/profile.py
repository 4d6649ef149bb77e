"""Model profiles: what tether changes for a small local model, and how it tells one.

A model at or under about 8B parameters follows a long tool menu, several edit
modes and native tool schemas poorly; it guesses paths, answers without looking,
and stops at the first error. The small profile is a set of levers against those
habits, each a field of `Profile` so it can be measured on and off
(`bench/small_model`); the full profile is today's behaviour for large models.

Selection (`choose_profile`, `detect_profile`): the `profile` setting, else a size in
the model name (`1.5b`, `e4b`, `270m`), else the parameter count the server states
(llama.cpp's `/v1/models` `meta.n_params`, Ollama's `/api/show`), asked once; a model of
unknown size gets the full profile, wherever it runs (a local server may serve a large
model under any name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

ProfileName = Literal["small", "full"]

SMALL_MODEL_MAX_BILLIONS = 8.5
""""About 8B": Llama 3.1 8B (8.0B) and Qwen2.5 7B (7.6B) are small; Gemma 2 9B (9.2B) is not."""

CORE_TOOLS = (
    "read_file", "write_file", "edit_file", "run_cmd", "list_dir", "search_in_file", "send_input",
    "submit_plan",  # only in the table while plan mode is on, and then it must be offered
    "use_skill",  # only in the table when skills were found, and the prompt lists them
)

LEVERS_ENV = "TETHER_PROFILE_OFF"
"""Comma-separated lever names to switch off (for the benchmark)."""


@dataclass(frozen=True)
class Profile:
    name: ProfileName
    short_menu: bool = False
    """Offer only CORE_TOOLS; the rest wait behind tool_search."""
    simple_edit: bool = False
    """edit_file offers one mode: old_content -> new_content."""
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
    rules_off: frozenset[str] = frozenset()
    """The coach's rule levers switched off (RULE_LEVERS), each by its own name."""

    def levers(self) -> list[str]:
        """The names of the levers that are on (for the json output and the benchmark)."""
        return [name for name in LEVER_NAMES if self._is_on(name)]

    def _is_on(self, lever: str) -> bool:
        """A lever is on unless its field holds the value that switches it off (a temperature
        of 0 is on: it is a setting, where None is none)."""
        field_name = LEVER_FIELDS[lever]
        return getattr(self, field_name) != LEVER_OFF[lever][field_name]

    def without(self, names: Iterable[str]) -> Profile:
        """This profile with the named levers switched off; unknown names raise ValueError."""
        changes: dict[str, object] = {}
        rules_off = set(self.rules_off)
        for raw in names:
            name = raw.strip()
            if not name:
                continue
            if name in RULE_LEVERS:
                rules_off.add(name)
                continue
            if name not in LEVER_FIELDS:
                known = ", ".join(LEVER_NAMES + RULE_LEVERS)
                raise ValueError(f"unknown profile lever {name!r}; known: {known}")
            changes.update(LEVER_OFF[name])
        return replace(self, rules_off=frozenset(rules_off), **changes)  # type: ignore[arg-type]


LEVER_FIELDS = {
    "menu": "short_menu",
    "edit": "simple_edit",
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
}
LEVER_NAMES = tuple(LEVER_FIELDS)
RULE_LEVERS = (
    "echo", "empty", "shown", "look", "waiting", "version", "failure", "claimed", "named", "open",
    "apply", "named_files", "check", "unseen", "number", "guard", "repeat",
)
"""The levers of the coach's rules (assist/rules.py's table, its call guard and its repeat
notes), each switching its rules off for measurement; `nudges` switches them all off."""
LEVER_OFF: dict[str, dict[str, object]] = {
    "menu": {"short_menu": False},
    "edit": {"simple_edit": False},
    "text": {"text_protocol": False},
    "example": {"worked_example": False},
    "map": {"project_map": 0},
    "nudges": {"nudges": False},
    "note": {"opening_note": False},
    "stop": {"stop_at_call": False},
    "reply": {"max_reply_tokens": None},
    "terse": {"terse_history": False},
    "sampling": {"temperature": None},
    "steps": {"max_steps": None, "soft_pressure_after": None},
    "verify": {"verify": False},
    "preread": {"preread": False},
}

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
    stop_at_call=True,
    max_reply_tokens=1500,
    terse_history=True,
    temperature=0.0,
    max_steps=18,
    soft_pressure_after=14,
)
PROFILES: dict[str, Profile] = {"small": SMALL, "full": FULL}


def profile_named(name: str, levers_off: str = "") -> Profile:
    """The profile called `name`, less the comma-separated `levers_off` (the full profile has
    only the levers every profile shares, such as `verify`)."""
    return PROFILES[name].without(levers_off.split(","))


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
    json output."""

    name: ProfileName
    reason: str


def _billions_shown(billions: float) -> str:
    if billions < 1:
        return f"{billions * 1000:.0f}M"
    return f"{billions:.1f}".removesuffix(".0") + "B"


def choose_profile(setting: str, model: str, stated_billions: float | None = None) -> ProfileChoice:
    """The profile for this model: the setting when it is not auto, else by the model's size,
    from its name or else as the server states it (`stated_billions`). A model of unknown
    size gets the full profile: nudges and re-asked answers hold a large model back."""
    if setting in PROFILES:
        return ProfileChoice(setting, "")  # type: ignore[arg-type]  # the user's choice needs no reason
    named = billions_in_name(model)
    size, source = (named, "from its name") if named is not None else (stated_billions, "from the server")
    if size is None:
        return ProfileChoice("full", f"{model}, size unknown")
    name: ProfileName = "small" if size <= SMALL_MODEL_MAX_BILLIONS else "full"
    return ProfileChoice(name, f"{model}, {_billions_shown(size)} parameters ({source})")


async def detect_profile(setting: str, provider: object, model: str) -> ProfileChoice:
    """`choose_profile`, asking the provider for the model's size when the setting is auto and
    the name does not say (`async stated_billions(model) -> float | None`: llama.cpp's and
    Ollama's servers can tell; a failure or no answer is an unknown size)."""
    ask_size = getattr(provider, "stated_billions", None)
    if setting != "auto" or billions_in_name(model) is not None or ask_size is None:
        return choose_profile(setting, model)
    return choose_profile(setting, model, await ask_size(model))
