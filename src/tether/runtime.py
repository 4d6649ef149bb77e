"""Wiring: from settings and a UI to a ready turn loop. Shared by `-p` and the app."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .approval import ApprovalPolicy
from .config import Settings
from .dispatch import Dispatcher
from .llm_client import ProtocolMode, TurnLoop, TurnSettings
from .permissions import RuleSet, load_rules
from .prompts import system_prompt
from .providers import create_provider
from .providers.base import Provider
from .toolspec import ToolContext, ToolTable
from .tools import builtin_tools
from .ui import UI


@dataclass
class RunOptions:
    """Per-run choices that are not settings: they come from flags or the session."""

    root: Path
    home: Path
    auto: bool = False
    allow: Sequence[str] = ()
    trusted: bool = False


@dataclass
class Runtime:
    settings: Settings
    provider: Provider
    table: ToolTable
    loop: TurnLoop
    rules: RuleSet
    warnings: list[str] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def resolve_protocol(self) -> ProtocolMode:
        """Native function calling when the model has it, else the text protocol."""
        wanted = self.settings.protocol
        if wanted == "auto":
            native = await self.provider.supports_native_tools(self.loop.settings.model)
            wanted = "native" if native else "text"
        self.loop.mode = wanted
        return wanted

    async def aclose(self) -> None:
        """Stop what the tools started (shell sessions) and close connections."""
        for closer in self.closers:
            await closer()
        await self.provider.aclose()


def build_runtime(
    settings: Settings, options: RunOptions, ui: UI, env: Mapping[str, str]
) -> Runtime:
    """Raises ValueError (a usage problem) for an unknown provider or a bad rule."""
    provider = create_provider(settings, env)
    ctx = ToolContext(root=options.root, notice=lambda m: ui.notice(m))
    table, closers = builtin_tools(ctx)
    rules, warnings = load_rules(
        options.root, options.home, trusted=options.trusted, extra_allow=options.allow
    )
    dispatcher = Dispatcher(
        table=table,
        ctx=ctx,
        ui=ui,
        policy=ApprovalPolicy(options.root, rules, auto=options.auto),
        default_timeout=settings.tool_timeout,
        default_cap=settings.result_cap,
        caps=dict(settings.result_caps),
    )
    turn_settings = TurnSettings(
        model=settings.model or provider.default_model,
        max_steps=settings.max_steps,
        soft_pressure_after=settings.soft_pressure_after,
        temperature=settings.temperature,
    )
    loop = TurnLoop(
        provider=provider,
        table=table,
        dispatcher=dispatcher,
        ui=ui,
        settings=turn_settings,
        system_prompt=lambda mode: system_prompt(options.root, table, mode),
    )
    return Runtime(settings, provider, table, loop, rules, warnings, closers)
