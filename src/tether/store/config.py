"""Typed, layered settings: defaults -> TETHER_HOME/config.toml -> environment -> flags.

An invalid value in a layer is reported (with its key) and ignored; it never
crashes start-up. Settings are an immutable value passed down, never a global.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from .statefile import read_toml_file


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(
        "ollama", description="Which provider to talk to: ollama, openai, anthropic or gemini."
    )
    model: str = Field("", description="Model name; empty picks the provider's default.")
    ollama_host: str = Field(
        "http://127.0.0.1:11434", description="Base URL of the Ollama server (env OLLAMA_HOST)."
    )
    openai_base_url: str = Field(
        "https://api.openai.com/v1",
        description="Base URL of an OpenAI-compatible API, up to /v1 (env OPENAI_BASE_URL).",
    )
    anthropic_base_url: str = Field(
        "https://api.anthropic.com",
        description="Base URL of the Anthropic API, without /v1 (env ANTHROPIC_BASE_URL).",
    )
    gemini_base_url: str = Field(
        "https://generativelanguage.googleapis.com",
        description="Base URL of the Gemini API, without /v1beta (env GEMINI_BASE_URL).",
    )
    max_steps: int = Field(20, ge=1, le=1000, description="Tool round trips per turn before one final tool-free request.")
    soft_pressure_after: int = Field(
        8, ge=1, description="After this many round trips the model is nudged to finish."
    )
    tool_timeout: float = Field(120.0, gt=0, description="Seconds a tool may run before its result says it timed out.")
    request_timeout: float = Field(300.0, gt=0, description="Seconds to wait for a model response to progress.")
    connect_timeout: float = Field(10.0, gt=0, description="Seconds to wait for a provider connection.")
    result_cap: int = Field(16000, ge=200, description="Default characters of a tool result kept (head and tail).")
    result_caps: dict[str, int] = Field(
        default_factory=dict, description="Per-tool result caps, e.g. {read_file = 30000}."
    )
    protocol: Literal["auto", "native", "text"] = Field(
        "auto", description="Tool-call protocol: native function calling, the text protocol, or auto-detect."
    )
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature; unset uses the profile's or the model's default.")
    profile: Literal["auto", "small", "full"] = Field(
        "auto", description="Model profile: small (short tool menu, nudges; for models up to about 8B), full, or auto by model size."
    )
    max_retries: int = Field(
        4, ge=0, le=20, description="Retries of a rate-limited or overloaded request."
    )
    keep_thinking: bool = Field(False, description="Keep reasoning in the stored history.")
    context_window: int | None = Field(
        None, ge=256, description="Context window in tokens; Ollama receives it as options.num_ctx."
    )
    compress: bool = Field(
        True, description="Trim old tool results and condense old history before a request overflows."
    )
    sandbox: Literal["auto", "off", "read-only", "workspace-write"] = Field(
        "auto",
        description=(
            "Run commands under bubblewrap: auto (workspace-write where bubblewrap works, else off), "
            "off, read-only, or workspace-write (project root writable)."
        ),
    )
    sandbox_escalation: bool = Field(
        False,
        description=(
            "Let an allow rule that names a command run it outside the sandbox without asking "
            "(also under --auto); without it, every unsandboxed run asks."
        ),
    )
    git_post_commit_hook: bool = Field(
        False,
        description="Run the repository's post-commit hook after each AI commit; off because the "
        "hook is a program the repository chose.",
    )
    mcp_startup_wait: float = Field(
        5.0, ge=0, description="Seconds the first request waits for MCP servers still starting; "
        "later ones join when ready.",
    )
    mcp_defer_tools: int = Field(
        20, ge=0, description="Above this many MCP tools (or a tenth of the context window), "
        "they wait behind tool_search.",
    )

    subagent_max_steps: int = Field(
        12, ge=1, le=1000, description="Tool round trips of a sub-agent before it is asked for its report."
    )
    subagent_concurrency: int = Field(
        0, ge=0, le=16, description="Sub-agents spawn_agents runs at once; 0: 2, or 1 for a local server."
    )
    subagent_max_tokens: int = Field(
        0, ge=0, description="Tokens one sub-agent may spend (input and output); 0: no cap."
    )
    subagent_max_seconds: float = Field(
        600.0, ge=0, description="Seconds one sub-agent may run; 0: no cap."
    )
    subagent_turn_tokens: int = Field(
        0, ge=0, description="Tokens all sub-agents of one request may spend together; 0: no cap."
    )
    subagent_report_cap: int = Field(
        4000, ge=200, description="Characters of a sub-agent's report that come back (head and tail)."
    )
    instruction_fallbacks: tuple[str, ...] = Field(
        ("CLAUDE.md",), description="File names read as a folder's project instructions when it "
        "has no AGENTS.md.",
    )
    instructions_max_bytes: int = Field(
        32768, ge=0, description="Bytes of project instructions (AGENTS.md files) sent with "
        "every request; the rest is cut with a note.",
    )

    searxng_url: str = Field(
        "", description="Base URL of a self-hosted SearXNG; when set, search_web asks it first "
        "and the keyless sources only when it finds nothing.",
    )
    web_sources: tuple[Literal["duckduckgo", "wikipedia", "stackexchange", "github"], ...] = Field(
        ("duckduckgo", "wikipedia", "stackexchange", "github"),
        description="The keyless sources search_web asks at once.",
    )
    web_duckduckgo_url: str = Field(
        "https://html.duckduckgo.com/html", description="DuckDuckGo's HTML search endpoint."
    )
    web_wikipedia_url: str = Field(
        "https://en.wikipedia.org", description="The Wikipedia whose search API (/w/api.php) is asked."
    )
    web_stackexchange_url: str = Field(
        "https://api.stackexchange.com", description="Base URL of the Stack Exchange API (2.3)."
    )
    web_github_url: str = Field(
        "https://api.github.com", description="Base URL of GitHub's API (repository search)."
    )
    web_source_timeout: float = Field(
        8.0, gt=0, description="Seconds one search source may take; a slower one is left out."
    )
    web_timeout: float = Field(
        15.0, gt=0, description="Seconds to connect and for each read of a page or API call."
    )
    web_pages: int = Field(4, ge=1, le=10, description="Candidate pages search_web reads and ranks.")
    web_max_bytes: int = Field(
        2_000_000, ge=1000, description="Bytes of a response get_url and call_api read; the rest is not downloaded."
    )
    web_max_text: int = Field(
        20_000, ge=500, description="Characters of page text or API body returned, with a note when cut."
    )
    web_content_asks: bool = Field(
        True, description="Once web content entered a turn, calls that can send data out "
        "(call_api, get_url with a query, unsandboxed commands) ask even under an allow rule.",
    )

    hooks: dict[str, Any] = Field(
        default_factory=dict, description="Commands run at fixed points (PreToolUse, PostToolUse, "
        "UserPromptSubmit, Stop, SessionStart, PreCompact), in Claude Code's format.",
    )
    answer_checks: bool = Field(
        True, description="Check each final answer against the turn's tool results and show "
        "what does not match (one dimmed line each).",
    )
    answer_check_feedback: bool = Field(
        False, description="Send what the answer checks found back to the model for one "
        "tool-free corrected answer.",
    )

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str, info: ValidationInfo) -> str:
        """Only when the layers are merged: the registry of providers lives above this
        module, so `load_settings` is handed its names."""
        known = (info.context or {}).get("providers")
        if known is not None and value not in known:
            raise ValueError(f"{value!r} is not a provider; known: {', '.join(known)}")
        return value

    @field_validator(
        "ollama_host", "openai_base_url", "anthropic_base_url", "gemini_base_url",
        "web_duckduckgo_url", "web_wikipedia_url", "web_stackexchange_url", "web_github_url",
    )
    @classmethod
    def _usable_base_url(cls, value: str) -> str:
        check_base_url(value)
        return value

    @field_validator("searxng_url")
    @classmethod
    def _usable_or_empty(cls, value: str) -> str:
        if value:
            check_base_url(value)
        return value


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


def field_docs() -> dict[str, str]:
    """Each setting's one-line description (the README's table is checked against this)."""
    return {name: f.description or "" for name, f in Settings.model_fields.items()}


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
    context: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Merge one layer key by key so one bad value loses only itself."""
    for key, value in layer.items():
        if key not in Settings.model_fields:
            warnings.append(f"{source}: unknown setting '{key}' ignored")
            continue
        candidate = {**current, key: value}
        try:
            Settings.model_validate(candidate, context=context)
        except ValidationError as exc:
            reason = exc.errors()[0].get("msg", "invalid value").removeprefix("Value error, ")
            warnings.append(f"{source}: invalid value for '{key}' ({reason}); ignored")
            continue
        current = candidate
    return current


def _read_config_file(path: Path, warnings: list[str]) -> dict[str, Any]:
    """The file's settings; one that cannot be read or parsed is named (with the line)
    in a warning and ignored as a whole, never a crash."""
    loaded = read_toml_file(path)
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
    known = {"providers": list(providers)} if providers is not None else None
    values = _apply_layer(values, _read_config_file(path, warnings), str(path), warnings, known)
    values = _apply_layer(values, remembered or {}, "last connection", warnings, known)
    values = _apply_layer(values, _env_layer(env), "environment", warnings, known)
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    values = _apply_layer(values, given, "command line", warnings)
    return Settings(**values), warnings
