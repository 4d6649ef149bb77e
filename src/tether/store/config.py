"""Typed, layered settings: defaults -> TETHER_HOME/config.toml -> environment -> flags.

An invalid value in a layer is reported (with its key) and ignored; it never
crashes start-up. Settings are an immutable value passed down, never a global.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..host import read_toml_file
from .loader_gate import LoaderGate
from .settings_model import checked_value, default_of, description_of, setting, settled


def check_url_or_empty(value: str) -> None:
    if value:
        check_base_url(value)


def check_base_url(value: str) -> None:
    """ValueError saying why `value` cannot be a provider's base URL."""
    try:  # urllib, not httpx: settings load before anything talks to a network
        url = urlsplit(value)
        port = url.port
    except ValueError as exc:
        raise ValueError(f"not a valid URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"port {port} is out of range")


def url_setting(default: str, description: str) -> Any:
    """A setting that holds a base URL tether sends requests to."""
    return setting(default, description, check=check_base_url)


WebSource = Literal["duckduckgo", "wikipedia", "stackexchange", "github"]


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every setting, checked and converted when made (`ValueError` naming the field); a
    field left out takes its default. Made with keywords; changed with `with_changes`."""

    provider: str = setting(
        "ollama", "Which provider to talk to: ollama, openai, anthropic, gemini or local.",
    )
    model: str = setting("", "Model name; empty picks the provider's default.")
    ollama_host: str = url_setting(
        "http://127.0.0.1:11434",
        "Base URL of the Ollama server (env OLLAMA_HOST).",
    )
    openai_base_url: str = url_setting(
        "https://api.openai.com/v1",
        "Base URL of an OpenAI-compatible API, up to /v1 (env OPENAI_BASE_URL).",
    )
    anthropic_base_url: str = url_setting(
        "https://api.anthropic.com",
        "Base URL of the Anthropic API, without /v1 (env ANTHROPIC_BASE_URL).",
    )
    gemini_base_url: str = url_setting(
        "https://generativelanguage.googleapis.com",
        "Base URL of the Gemini API, without /v1beta (env GEMINI_BASE_URL).",
    )
    max_steps: int = setting(
        20, "Tool round trips per turn before one final tool-free request.", ge=1, le=1000,
    )
    soft_pressure_after: int = setting(
        8, "After this many round trips the model is nudged to finish.", ge=1,
    )
    tool_timeout: float = setting(
        120.0, "Seconds a tool may run before its result says it timed out.", gt=0,
    )
    request_timeout: float = setting(
        300.0, "Seconds to wait for a model response to progress.", gt=0,
    )
    connect_timeout: float = setting(10.0, "Seconds to wait for a provider connection.", gt=0)
    result_cap: int = setting(
        16000, "Default characters of a tool result kept (head and tail).", ge=200,
    )
    result_caps: dict[str, int] = setting(
        description="Per-tool result caps, e.g. {read_file = 30000}.", factory=dict,
    )
    protocol: Literal["auto", "native", "text"] = setting(
        "auto", "Tool-call protocol: native function calling, the text protocol, or auto-detect.",
    )
    temperature: float | None = setting(
        None, "Sampling temperature; unset uses the profile's or the model's default.", ge=0, le=2,
    )
    profile: Literal["auto", "small", "full"] = setting(
        "auto",
        "Model profile: small (short tool menu, nudges; for models up to about 8B), full, "
        "or auto by model size.",
    )
    image_input: Literal["auto", "on", "off"] = setting(
        "auto",
        "Images (@shot.png, a pasted path) in requests: auto sends them to models known to take "
        "images and refuses the others before sending; on sends them to any model; off never.",
    )
    notify: Literal["off", "bell", "desktop"] = setting(
        "off",
        "When a long turn ends or a question waits in the chat: off, bell (the terminal's), or "
        "desktop (the bell and a notification through notify-send or osascript, when present).",
    )
    notify_after: float = setting(
        15.0, "Seconds a turn must run before its end is notified (setting notify).", ge=0,
    )
    theme: Literal["auto", "dark", "light", "none"] = setting(
        "auto",
        "Chat colours: dark or light terminal colours, none for no colour, auto for the "
        "terminal's (COLORFGBG; dark when it does not say). NO_COLOR set means none.",
    )
    max_retries: int = setting(4, "Retries of a rate-limited or overloaded request.", ge=0, le=20)
    keep_thinking: bool = setting(False, "Keep reasoning in the stored history.")
    context_window: int | None = setting(
        None, "Context window in tokens; Ollama receives it as options.num_ctx.", ge=256,
    )
    local_threads: int | None = setting(
        None, "Threads the local provider (--local) runs the model on; unset: one per "
        "physical core.", ge=1, le=256,
    )
    ollama_pull: Literal["ask", "yes", "no"] = setting(
        "ask",
        "When --local runs through Ollama (tether[local] not installed, Ollama running) and "
        "Ollama lacks the model: ask pulls it (or imports the --model GGUF file) after a yes "
        "in the chat (-p, where nobody is asked, stops with one line), yes pulls or imports "
        "without asking, no never does.",
    )
    compress: bool = setting(
        True, "Trim old tool results and condense old history before a request overflows.",
    )
    sandbox: Literal["auto", "off", "read-only", "workspace-write"] = setting(
        "auto",
        "Run commands under bubblewrap: auto (workspace-write where bubblewrap works, else off), "
        "off, read-only, or workspace-write (project root writable).",
    )
    sandbox_escalation: bool = setting(
        False, "Let an allow rule that names a command run it outside the sandbox without asking "
            "(also under --auto); without it, every unsandboxed run asks.",
    )
    git_post_commit_hook: bool = setting(
        False, "Run the repository's post-commit hook after each AI commit; off because the "
        "hook is a program the repository chose.",
    )
    mcp_startup_wait: float = setting(
        5.0, "Seconds the first request waits for MCP servers still starting; "
        "later ones join when ready.", ge=0,
    )
    mcp_defer_tools: int = setting(
        20, "Above this many MCP tools (or a tenth of the context window), "
        "they wait behind tool_search.", ge=0,
    )
    subagent_max_steps: int = setting(
        12, "Tool round trips of a sub-agent before it is asked for its report.", ge=1, le=1000,
    )
    subagent_concurrency: int = setting(
        0, "Sub-agents spawn_agents runs at once; 0: 2, or 1 for a local server.", ge=0, le=16,
    )
    subagent_max_tokens: int = setting(
        0, "Tokens one sub-agent may spend (input and output); 0: no cap.", ge=0,
    )
    subagent_max_seconds: float = setting(600.0, "Seconds one sub-agent may run; 0: no cap.", ge=0)
    subagent_turn_tokens: int = setting(
        0, "Tokens all sub-agents of one request may spend together; 0: no cap.", ge=0,
    )
    subagent_report_cap: int = setting(
        4000, "Characters of a sub-agent's report that come back (head and tail).", ge=200,
    )
    instruction_fallbacks: tuple[str, ...] = setting(
        ("CLAUDE.md",), "File names read as a folder's project instructions when it "
        "has no AGENTS.md.",
    )
    instructions_max_bytes: int = setting(
        32768, "Bytes of project instructions (AGENTS.md files) sent with "
        "every request; the rest is cut with a note.", ge=0,
    )
    searxng_url: str = setting(
        "", "Base URL of a self-hosted SearXNG; when set, search_web asks it first "
        "and the keyless sources only when it finds nothing.", check=check_url_or_empty,
    )
    web_sources: tuple[WebSource, ...] = setting(
        ("duckduckgo", "wikipedia", "stackexchange", "github"),
        "The keyless sources search_web asks at once.",
    )
    web_duckduckgo_url: str = url_setting(
        "https://html.duckduckgo.com/html",
        "DuckDuckGo's HTML search endpoint.",
    )
    web_wikipedia_url: str = url_setting(
        "https://en.wikipedia.org",
        "The Wikipedia whose search API (/w/api.php) is asked.",
    )
    web_stackexchange_url: str = url_setting(
        "https://api.stackexchange.com",
        "Base URL of the Stack Exchange API (2.3).",
    )
    web_github_url: str = url_setting(
        "https://api.github.com",
        "Base URL of GitHub's API (repository search).",
    )
    web_source_timeout: float = setting(
        8.0, "Seconds one search source may take; a slower one is left out.", gt=0,
    )
    web_timeout: float = setting(
        15.0, "Seconds to connect and for each read of a page or API call.", gt=0,
    )
    web_pages: int = setting(4, "Candidate pages search_web reads and ranks.", ge=1, le=10)
    web_max_bytes: int = setting(
        2_000_000, "Bytes of a response get_url and call_api read; the rest is not downloaded.",
        ge=1000,
    )
    web_max_text: int = setting(
        20_000, "Characters of page text or API body returned, with a note when cut.", ge=500,
    )
    web_content_asks: bool = setting(
        True, "Once web content entered a request, calls that can "
        "send data out (call_api, search_web, MCP tools, get_url of a URL neither in the "
        "request nor fetched in it, unsandboxed commands) ask even under an allow rule.",
    )
    hooks: dict[str, Any] = setting(
        description="Commands run at fixed points (PreToolUse, PostToolUse, "
        "UserPromptSubmit, Stop, SessionStart, PreCompact), in Claude Code's format.",
        factory=dict,
    )
    answer_checks: bool = setting(
        True, "Check each final answer against the turn's tool results and show "
        "what does not match (one dimmed line each).",
    )
    answer_check_feedback: bool = setting(
        False, "Send what the answer checks found back to the model for one "
        "tool-free corrected answer.",
    )
    verify_after_change: int = setting(
        2, "After a turn changed files, run the check the request names (its tests, the "
        "script it asks to run) before the answer, and send a failure back at most this "
        "many times (0: off).", ge=0, le=20,
    )

    given: frozenset[str] = field(default=frozenset(), init=False, compare=False, repr=False)
    """The settings a layer or the caller gave, defaults left out (a profile's own step
    limits apply only while no one set them)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "given", settled(self, _hints()))

    def with_changes(self, **changes: Any) -> Settings:
        """These settings with `changes`, checked; what was given stays given."""
        return Settings(**{**{name: getattr(self, name) for name in self.given}, **changes})


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def setting_default(name: str) -> Any:
    """A setting's default value."""
    return default_of(FIELDS[name])


FIELDS: dict[str, dataclasses.Field] = {
    f.name: f for f in dataclasses.fields(Settings) if "description" in f.metadata}
"""Every setting by name."""


def field_docs() -> dict[str, str]:
    """Each setting's one-line description (the settings table of docs/configuration.md is generated from these)."""
    return {name: description_of(f) for name, f in FIELDS.items()}


ENV_VARS: dict[str, str] = {
    "TETHER_PROVIDER": "provider",
    "TETHER_MODEL": "model",
    "OLLAMA_HOST": "ollama_host",
    "OPENAI_BASE_URL": "openai_base_url",
    "ANTHROPIC_BASE_URL": "anthropic_base_url",
    "GEMINI_BASE_URL": "gemini_base_url",
    "TETHER_MAX_STEPS": "max_steps",
    "TETHER_PROTOCOL": "protocol",
    "TETHER_PROFILE": "profile",
    "SEARXNG_URL": "searxng_url",
}


def tether_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("TETHER_HOME") or Path.home() / ".tether").expanduser()


def normalize_ollama_host(value: str) -> str:
    """OLLAMA_HOST is often given as `host:port` with no scheme."""
    value = value.strip().rstrip("/")
    if value and "://" not in value:
        value = "http://" + value
    return value


def _apply_layer(
    current: dict[str, Any], layer: Mapping[str, Any], source: str, warnings: list[str],
    providers: Collection[str] | None = None,
) -> dict[str, Any]:
    """Merge one layer key by key so one bad value loses only itself. With `providers`, a
    provider not among them is such a bad value."""
    for key, value in layer.items():
        if key not in FIELDS:
            warnings.append(f"{source}: unknown setting '{key}' ignored")
            continue
        try:
            checked = checked_value(value, _hints()[key], FIELDS[key].metadata)
            if key == "provider" and providers is not None and checked not in providers:
                raise ValueError(f"{checked!r} is not a provider; known: {', '.join(providers)}")
        except ValueError as exc:
            warnings.append(f"{source}: invalid value for '{key}' ({exc}); ignored")
            continue
        current = {**current, key: checked}
    return current


def _read_config_file(path: Path, home: Path, warnings: list[str]) -> dict[str, Any]:
    """The file's settings; one that cannot be read or parsed is named (with the line)
    in a warning and ignored as a whole, never a crash. A user's file may be a link, but
    not to the saved keys or into /proc, /dev or /sys (`LoaderGate`)."""
    loaded = read_toml_file(path, reader=LoaderGate(home).read)
    if loaded.broken:
        warnings.append(f"{loaded.problem}; its settings are ignored")
        return {}
    return loaded.data or {}


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for var, key in ENV_VARS.items():
        if env.get(var):
            layer[key] = env[var]
    if "ollama_host" in layer:
        layer["ollama_host"] = normalize_ollama_host(layer["ollama_host"])
    return layer


def load_settings(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    remembered: Mapping[str, Any] | None = None,
    providers: Collection[str] | None = None,
) -> tuple[Settings, list[str]]:
    """Build Settings from every layer; returns the settings and any warnings.

    `remembered` (the last /connect choice) sits above the config file, below
    the environment and flags. With `providers` (the registry's names) a provider
    no layer below the flags can use is reported and ignored like any invalid value;
    the caller refuses a flag's unknown provider as a usage error."""
    env = os.environ if env is None else env
    home = tether_home(env) if home is None else home
    warnings: list[str] = []
    values: dict[str, Any] = {}
    path = home / "config.toml"
    from_file = _read_config_file(path, home, warnings)
    values = _apply_layer(values, from_file, str(path), warnings, providers)
    values = _apply_layer(values, remembered or {}, "last connection", warnings, providers)
    values = _apply_layer(values, _env_layer(env), "environment", warnings, providers)
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    values = _apply_layer(values, given, "command line", warnings)
    return Settings(**values), warnings
