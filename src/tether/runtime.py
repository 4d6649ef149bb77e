"""Wiring: from settings and a UI to a ready turn loop. Shared by `-p` and the app."""

from __future__ import annotations

import asyncio
import datetime
import gc
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .core.conversation import Conversation
from .core.messages import Evidence, Message, ToolCall, ToolResult
from .core.model_table import ModelMatch, ModelTable, builtin_table, load_model_table
from .core.profile import (
    CORE_TOOLS,
    FULL,
    LEVERS_ENV,
    LEVERS_ON_ENV,
    Profile,
    choose_protocol,
    default_temperature,
    detect_profile,
    profile_named,
)
from .core.toolspec import Tool, ToolContext, ToolError, ToolOutput, ToolTable
from .core.ui_protocol import UI
from .engine.context import Compressor, TokenEstimator, context_window
from .engine.dispatch import AfterHook, BeforeHook, CallPolicy, Dispatcher
from .engine.instructions import ProjectInstructions, load_instructions
from .engine.loop import ContextGuard, ProtocolMode, TurnLoop, TurnSettings
from .engine.projectmap import project_map
from .engine.prompts import PromptExtras, project_context, system_prompt
from .engine.run_options import RunOptions
from .engine.subagents import AgentBudget, SubagentRunner, routed_output
from .engine.toolmenu import TOOL_SEARCH, ToolMenu, tool_search_tool
from .engine.turn_assist import AssistedTurn, CoachSetup, TurnAssist, TurnChecks
from .engine.user_command import UserCommand, run_user_command
from .hooks.config import load_hooks
from .mcp.setup import McpSetup, attach_mcp, defers_mcp
from .mcp.tools import is_mcp_tool, ruled_servers
from .providers import base_url_of, create_provider
from .providers.base import Provider
from .providers.images import refusal as image_refusal
from .providers.images import takes_images
from .safety.approval import ApprovalPolicy, denial
from .safety.permissions import Rule, RuleKind, RuleSet, load_rules
from .safety.project_config import instruction_names
from .safety.sandbox import Sandbox
from .safety.secret_files import SecretFiles
from .safety.trusted_folders import TrustStore
from .skills.catalog import discover_skills, prompt_index
from .store.agent_defs import load_definitions
from .store.config import Settings
from .store.git_ops import GitOps
from .store.result_files import ResultFiles
from .tools import builtin_tools
from .tools.plan import SUBMIT_PLAN, PlanGate, plan_tools, set_plan_mode
from .tools.spawn import SPAWN_AGENT, spawn_tools
from .tools.web_table import web_parts, web_tools

if TYPE_CHECKING:  # loaded when a hook is configured, a skill found: most starts have neither
    from .hooks.engine import Hooks
    from .skills.book import SkillBook


@dataclass
class Runtime:
    settings: Settings
    provider: Provider
    table: ToolTable
    loop: TurnLoop
    rules: RuleSet
    git: GitOps
    policy: ApprovalPolicy
    plan_gate: PlanGate
    options: RunOptions
    """The per-run choices it was built from (a rebuild and a rules reload read them again)."""
    ui: UI
    env: Mapping[str, str]
    warnings: list[str] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    levers_off: str = ""
    """Small-profile levers switched off (TETHER_PROFILE_OFF, for the benchmark)."""
    levers_on: str = ""
    """Levers off by default switched on (TETHER_PROFILE_ON, for the benchmark)."""
    profile: Profile = FULL
    profile_reason: str = ""
    """Why the profile was picked ("qwen2.5-coder:1.5b, 1.5B parameters (from its name)")."""
    models: ModelTable = field(default_factory=builtin_table)
    """What varies by model family (models.toml, and the user's own in TETHER_HOME)."""
    model_match: ModelMatch | None = None
    """The model table's entry for the model in use, if any (shown with the profile)."""
    originals: dict[str, Tool] = field(default_factory=dict)
    """Tools the profile replaced with a variant, to put back under another profile."""
    prompt_extras: PromptExtras = field(default_factory=PromptExtras)
    mcp: McpSetup | None = None
    window: int | None = None
    subagents: SubagentRunner | None = None
    instructions: ProjectInstructions = field(default_factory=ProjectInstructions)
    skills: SkillBook | None = None
    hooks: Hooks | None = None  # the configured hooks, for /hooks and the session events
    today: datetime.date = field(default_factory=datetime.date.today)
    """The day the project context names: the day the run started, so a chat that goes on
    past midnight keeps the prefix its requests share."""
    _prompt: tuple[tuple[object, ...], list[Tool], str] | None = field(default=None, init=False, repr=False)
    """The last system prompt, its key and the tools it was made for (kept, so their ids stay
    theirs): every request asks, and the text protocol's menu is rendered from the tools."""

    @property
    def root(self) -> Path:
        return self.options.root

    @property
    def home(self) -> Path:
        """TETHER_HOME: keys, sessions, the user's rules."""
        return self.options.home

    @property
    def model(self) -> str:
        return self.loop.settings.model

    @property
    def auto(self) -> bool:
        """Auto mode: the approval policy holds the one flag; the start-up value is --auto."""
        return self.policy.auto

    def set_auto(self, value: bool) -> None:
        self.policy.auto = value

    def new_request(self, typed: str, *, source: str = "") -> None:
        """The user sent a request: a plan approved for the last one no longer holds, and
        what entered the last one from the web or an MCP server no longer raises the bar.
        Only this clears it: a /deepthink stage, a nudge or a sub-agent's turn belongs to the
        request that started it. `typed` is what the user wrote (URLs in it may be fetched
        without asking); `source` names where the text came from when it was not the user
        (an MCP server's prompt), and the request then starts marked."""
        self.plan_gate.new_request()
        self.policy.web_taint.start_request(typed, source=source)

    async def user_command(self, command: str) -> UserCommand:
        """`!command`: the user's own shell command, dispatched as their `run_cmd`
        (engine/user_command.py: what still applies to it)."""
        return await run_user_command(self.loop.dispatcher.dispatch, command)

    def image_refusal(self) -> str:
        """Why a request with images may not go to the model in use ("" when it may)."""
        provider, setting = self.settings.provider, self.settings.image_input
        if takes_images(provider, self.model, setting, self.models):
            return ""
        return image_refusal(provider, self.model, setting)

    def reload_instructions(self) -> list[str]:
        """Read the project's instruction files again (/init wrote one); the problems found."""
        self.instructions = project_instructions(self.options, self.settings)
        return self.instructions.problems

    async def switch_model(self, model: str) -> ProtocolMode:
        """Use `model` from the next request on; its profile, protocol and window are asked anew."""
        self.loop.settings.model = model
        return await self.start()

    @property
    def context_window(self) -> int:
        """The loop's context window in tokens; 0 when no guard knows one."""
        guard = self.loop.guard
        return guard.window if guard is not None else 0

    def compactor(self) -> ContextGuard | None:
        """The guard that can condense the history on request (also with automatic
        compression off); None before the start has installed one."""
        return self.loop.guard

    def add_session_rule(self, kind: RuleKind, text: str) -> Rule:
        """An allow or deny rule for this session only; RuleError for a rule that cannot be parsed."""
        rule = Rule.parse(text, "session")
        self.rules.add(kind, rule)
        return rule

    def add_saved_rule(self, kind: RuleKind, rule: Rule) -> None:
        """A rule just saved to a rules file that this run reads (`rule.file` names it), so
        /perms lists it with that file and a rebuild reads it back from there."""
        self.rules.add(kind, rule)

    def describe_rules(self) -> list[str]:
        """One line per rule, each naming the tools it covers."""
        return self.rules.describe(self.table.access())

    def reload_rules(self) -> list[str]:
        """Read the rule files again (the command-line rules come with them); rules added this
        session carry over. Gives the warnings the files brought."""
        options = self.options
        fresh, warnings = load_rules(options.root, options.home, trusted=options.trusted,
                                     extra_allow=options.allow, extra_deny=options.deny)
        self.rules.reload_from(fresh)
        return warnings

    def rebuilt(self, settings: Settings | None = None) -> Runtime:
        """A new runtime (provider, tools, rules read again) on `settings`, else these, for the
        same options and UI; what the user set this session carries over (`carry_session`).
        Not started yet. ValueError like build_runtime."""
        new = build_runtime(settings or self.settings, self.options, self.ui, self.env)
        carry_session(self, new)
        return new

    async def restarted(self, settings: Settings | None = None) -> tuple[Runtime, ProtocolMode]:
        """`rebuilt(settings)`, started, with the protocol it chose; this one is closed then.
        A start that fails closes the new one instead and leaves this one as it was."""
        new = self.rebuilt(settings)
        try:
            mode = await new.start()
        except BaseException:
            await new.aclose()
            raise
        await self.aclose()
        return new, mode

    async def start(self) -> ProtocolMode:
        """Find out whether the sandbox works (its notice, if any, comes now), and ask the
        provider what the model can do: its profile, tool protocol and context window.
        MCP servers connect meanwhile; the end waits a little for those still starting."""
        if self.mcp is not None:
            self.mcp.manager.start()
        await self.probe_sandbox()
        self.apply_profile(await self.resolve_profile())
        mode = await self.resolve_protocol()
        model = self.loop.settings.model
        self.window = window = await context_window(
            self.provider, model, self.settings.context_window,
            known=self.model_match.entry.context_window if self.model_match else None,
        )
        old = self.loop.guard
        self.loop.guard = Compressor(
            self.provider, model, window, enabled=self.settings.compress,
            notice=lambda message: self.loop.ui.notice(message),
            before_condense=self.hooks.before_compact if self.hooks else None,
            # keep what was learnt about this provider's token counts
            estimator=old.estimator if isinstance(old, Compressor) else None,
        )
        if self.mcp is not None:
            await self.mcp.manager.wait_ready(self.settings.mcp_startup_wait)
            self.set_menu()
        return mode

    def warm_up(self) -> None:
        """Load what the first turn needs and a start leaves out (the assist package, the
        tools' schemas, httpx): the chat runs this in a thread once it is ready, while the user types."""
        import httpx  # noqa: F401  (the start asked a server on this machine without it)

        if isinstance(self.loop.assist, LateAssist):
            self.loop.assist.load()
        for tool in list(self.table):
            tool.json_schema()

    async def probe_sandbox(self) -> None:
        sandbox = self.policy.sandbox
        if sandbox is not None:
            await asyncio.to_thread(sandbox.probe)  # may start bwrap: not on the event loop
            sandbox.available()  # tells the UI, from the loop, when it cannot be used

    async def resolve_profile(self) -> Profile:
        """The profile setting, else small for a model of about 8B parameters or fewer (by its
        name, or as its server states); why is kept in `profile_reason`."""
        model = self.loop.settings.model
        self.model_match = self.models.match(model)
        choice = await detect_profile(self.settings.profile, self.provider, model, self.model_match)
        self.profile_reason = choice.reason
        return profile_named(choice.name, self.levers_off, self.levers_on)

    def profile_shown(self) -> str:
        """The profile and why it was picked, for the status line ("small profile:
        qwen2.5-coder:1.5b, 1.5B parameters (from the server)")."""
        shown = f"{self.profile.name} profile"
        reason = self.profile_reason
        if self.model_match is not None and "model table:" not in reason:
            reason = ", ".join(filter(None, [reason, f"model table: {self.model_match.shown()}"]))
        return f"{shown}: {reason}" if reason else shown

    def apply_profile(self, profile: Profile) -> None:
        """Set the menu, the edit tool, the prompt and the loop's limits for `profile`."""
        self.profile = profile
        self._swap_edit_tool(profile.simple_edit, profile.plain_reads)
        self.set_menu()
        self.prompt_extras = PromptExtras(
            small=profile.name == "small",
            worked_example=profile.worked_example,
            numbered_reads=not (profile.simple_edit and profile.plain_reads),
            project_map=project_map(self.root, profile.project_map),
        )
        given = self.settings.given
        turn = self.loop.settings
        turn.temperature = default_temperature(
            self.settings.temperature, profile,
            self.model_match.entry if self.model_match is not None else None,
        )
        turn.max_steps = self.settings.max_steps
        turn.soft_pressure_after = self.settings.soft_pressure_after
        if profile.max_steps and not given & {"max_steps", "soft_pressure_after"}:
            turn.max_steps = profile.max_steps
            turn.soft_pressure_after = profile.soft_pressure_after or turn.soft_pressure_after
        turn.nudges = profile.nudges
        turn.rules_off = profile.rules_off
        turn.opening_note = profile.opening_note
        turn.preread = profile.preread
        turn.stop_at_call = profile.stop_at_call
        turn.max_reply_tokens = profile.max_reply_tokens
        turn.answer_tokens = profile.answer_tokens
        turn.terse_history = profile.terse_history
        turn.grammar = profile.grammar
        turn.checks = TurnChecks(fix_attempts(profile, self.settings.verify_after_change, given),
                                 each_change=profile.verify_each_change, first=profile.check_first,
                                 trace=profile.trace_failure)
        turn.take_version = profile.take_version
        turn.redraw_empty = profile.redraw_empty
        turn.resume_calls = profile.resume_calls
        turn.open_empty = profile.open_empty

    def set_menu(self) -> None:
        """The small profile's short menu, or (with many MCP tools attached) every tool but
        the MCP ones, which wait behind tool_search; else the whole table. Run again when
        MCP tools come or go: tool_search's description names the deferred tools."""
        old = self.loop.menu
        self.table.remove(TOOL_SEARCH)
        self.loop.menu = None
        if self.profile.short_menu:
            self.loop.menu = ToolMenu(self.table, CORE_TOOLS)
        elif defers_mcp(self.table, self.settings.mcp_defer_tools, self.window):
            self.loop.menu = ToolMenu(self.table, defer=is_mcp_tool)
        if self.loop.menu is not None:
            if old is not None:
                self.loop.menu.loaded = old.loaded  # the conversation's own set, mid-turn too
            self.table.add(tool_search_tool(self.loop.menu))

    def _swap_edit_tool(self, simple: bool, plain_reads: bool) -> None:
        """One edit mode: edit_file without anchors, read_file without the anchors' hashes
        (and, with `plain_reads`, without line numbers). The built-in tools are put back
        first, so a profile switched mid-session gets exactly its own variants."""
        for name in ("edit_file", "read_file"):
            if name in self.originals:
                self.table.replace(self.originals.pop(name))
        if simple:
            self._add_edit_variants(plain_reads)

    def _add_edit_variants(self, plain_reads: bool) -> None:
        """The one-mode variants in the place of the built-in edit_file and read_file; their
        module loads here, for a profile that uses them, not at every start."""
        from .tools.simple_edit import plain_read_tool, simple_edit_tool

        variants: dict[str, Callable[[Tool], Tool]] = {
            "edit_file": simple_edit_tool,
            "read_file": lambda full: plain_read_tool(full, numbered=not plain_reads),
        }
        for name, variant in variants.items():
            current = self.table.get(name)
            if current is not None:
                self.originals[name] = current
                self.table.replace(variant(current))

    def system_prompt(self, mode: ProtocolMode) -> str:
        """The stance and (text protocol) the menu: the same in every project and on every day."""
        offered = self.loop.menu.offered_table() if self.loop.menu is not None else self.table
        key = (mode, self.prompt_extras, *map(id, offered))
        if self._prompt is None or self._prompt[0] != key:
            self._prompt = (key, list(offered), system_prompt(offered, mode, self.prompt_extras))
        return self._prompt[2]

    def context(self, skill_index: str | None = None) -> str:
        """What opens the first request, after the menu: the place and the date, the project's
        instructions, the skill index (`skill_index`, else the whole catalog's), the MCP
        servers' notes and the project map."""
        steady = self.instructions.prompt_section()
        if skill_index is not None:
            steady += skill_index
        elif self.skills is not None:
            steady += prompt_index(self.skills.catalog.skills)
        if self.mcp is not None:
            steady += self.mcp.manager.prompt_section()
        return project_context(self.root, self.prompt_extras, steady, self.today)

    async def resolve_protocol(self) -> ProtocolMode:
        """Native function calling when the model has it, else the text protocol (the small
        profile, and a family the model table distrusts, prefer it when the setting is auto)."""
        model = self.loop.settings.model
        wanted = await choose_protocol(
            self.settings.protocol, self.profile,
            self.model_match.entry if self.model_match is not None else None,
            lambda: self.provider.supports_native_tools(model),
        )
        mode: ProtocolMode = "native" if wanted == "native" else "text"
        self.loop.mode = mode
        return mode

    def load_skill(self, name: str) -> str:
        """/skill NAME: the skill's text, its scripts made tools; ToolError when there is none."""
        if self.skills is None:
            raise ToolError("No skills were found (/skills says where they are looked for).")
        return self.skills.load(name)

    def resume_skills(self, conv: Conversation) -> None:
        """A saved conversation that loaded skills gets their script tools again."""
        if self.skills is None:
            return
        from .skills.book import USE_SKILL

        names = [call.arguments.get("name") for m in conv.messages for call in m.tool_calls
                 if call.name == USE_SKILL]
        self.skills.reload([n for n in names if isinstance(n, str)])
        for name in self.skills.loaded:
            conv.loaded_tools.update(self.skills.tools_of.get(name, []))

    def set_plan_mode(self, argument: str) -> str:
        """`/planmode on|off`: the plan tool is on the menu only while plan mode is on; a plan
        is approved through the options' `approve_plan`."""
        message = set_plan_mode(self.plan_gate, argument)
        self.table.remove(SUBMIT_PLAN)
        if self.plan_gate.active:
            for tool in plan_tools(self.plan_gate, self.options.approve_plan):
                self.table.add(tool)
        return message

    async def aclose(self) -> None:
        """Stop what the tools started (shell sessions) and close connections."""
        for closer in self.closers:
            await closer()
        await self.provider.aclose()


def carry_session(old: Runtime, new: Runtime) -> None:
    """What belongs to the session, not the runtime: session rules, plan mode, auto mode,
    auto-commit, the loaded skills, the sub-agents' records (/agents lists them all) and what
    entered the running request from outside."""
    new.git.enabled = old.git.enabled
    new.rules.carry_session_rules(old.rules)
    new.set_auto(old.auto)
    if old.plan_gate.active:
        new.set_plan_mode("on")
    if old.skills is not None and new.skills is not None:
        new.skills.reload(old.skills.loaded)  # the history still tells the model to use them
    if old.subagents is not None and new.subagents is not None:
        new.subagents.keep_records_of(old.subagents)
    new.policy.web_taint.take_over(old.policy.web_taint)  # a rebuild is no new request


def estimated_tokens(runtime: Runtime, messages: Sequence[Message]) -> int:
    """About how many tokens `messages` take (a history no request has measured yet), by
    the runtime's calibrated estimate."""
    guard = runtime.loop.guard
    return (guard.estimator if isinstance(guard, Compressor) else TokenEstimator()).estimate(messages)


def resume_collection() -> None:
    """After the first start, when the command line paused the collector for it
    (`cli.collect_after_start`): what the start made is set aside for good (`gc.freeze`: the
    later full passes skip it) and automatic collection goes on. Nothing to do otherwise."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def build_runtime(
    settings: Settings, options: RunOptions, ui: UI, env: Mapping[str, str]
) -> Runtime:
    """Raises ValueError (a usage problem) for an unknown provider or a bad rule."""
    provider = create_provider(
        settings, env, notice=lambda message: ui.notice(message, "warning"), home=options.home
    )
    ctx = ToolContext(
        root=options.root, notice=lambda m: ui.notice(m), secrets=SecretFiles(options.home)
    )
    sandbox = sandbox_for(settings, options, ui)
    output = routed_output(options.on_output)  # a sub-agent's command output is its own
    table, closers = builtin_tools(ctx, options.home, options.asker, output, sandbox)
    git = GitOps(options.root, options.home, post_commit_hook=settings.git_post_commit_hook)
    rules, warnings = load_rules(
        options.root, options.home, trusted=options.trusted,
        extra_allow=options.allow, extra_deny=options.deny,
    )
    results = ResultFiles(options.home)
    policy = ApprovalPolicy(
        options.root, rules, auto=options.auto, home=options.home, sandbox=sandbox, tools=table,
        can_ask=ui.can_ask, escalation=settings.sandbox_escalation,
        runs_unconfined=ctx.runs_unconfined, readable=(results.folder,),
    )
    ctx.may_read = policy.may_read  # a search skips files the deny rules keep from reading
    plan_gate = PlanGate(policy)
    dispatcher = build_dispatcher(settings, table, ctx, ui, plan_gate, git)
    dispatcher.results = results
    loop = build_loop(settings, options.root, provider, table, dispatcher, ui)
    loop.assist = LateAssist(options.root, dispatcher.dispatch, ctx.files.names)
    models = load_model_table(options.home)
    warnings.extend(models.problems)
    runtime = Runtime(
        settings, provider, table, loop, rules, git, policy, plan_gate, options, ui, env,
        warnings, closers, levers_off=env.get(LEVERS_ENV, ""), levers_on=env.get(LEVERS_ON_ENV, ""), models=models,
    )
    loop.system_prompt = runtime.system_prompt
    loop.context = runtime.context
    runtime.mcp = attach_mcp(
        options.root, options.home, env, table, lambda message, level: ui.notice(message, level),
        extra=options.mcp_config, approve=options.mcp_approve, trusted=options.trusted,
        can_ask=ui.can_ask, on_change=runtime.set_menu,
        reserved=ruled_servers(rule.tool for rule in rules.allow if rule.source in ("user", "command line")),
        sandbox=sandbox,
    )
    warnings.extend(runtime.mcp.warnings)
    attach_context_files(runtime, sandbox)
    attach_hooks(runtime, sandbox)
    closers.append(runtime.mcp.manager.aclose)
    runtime.subagents = attach_subagents(runtime)
    attach_web(runtime)
    return runtime


class LateAssist:
    """The assist package (engine/turn_assist.TurnAssist), loaded at the first turn: its
    rules and checks are a large part of what a start would import, and no request needs
    them before it is sent."""

    def __init__(self, root: Path, dispatch: Callable[[ToolCall], Awaitable[tuple[ToolResult, Evidence]]],
                 project_files: Callable[[], Sequence[str]]) -> None:
        self._args = (root, dispatch, project_files)
        self._assist: TurnAssist | None = None

    def load(self) -> TurnAssist:
        if self._assist is None:
            from .assist import Assist

            self._assist = Assist(*self._args)
        return self._assist

    def start(self, request: str, checks: TurnChecks, setup: CoachSetup | None = None,
              preread: bool = False) -> AssistedTurn:
        return self.load().start(request, checks, setup, preread)


def attach_web(runtime: Runtime) -> None:
    """search_web, get_url and call_api in the table, marking the policy's record of the
    request (`WebTaint`, cleared only by `Runtime.new_request`); the policy also knows which
    private hosts rules name."""
    web = web_parts(runtime.settings, runtime.policy.may_reach, runtime.policy.web_taint)
    for tool in web_tools(runtime.settings, web):
        runtime.table.add(tool)
    runtime.policy.web_content_asks = runtime.settings.web_content_asks

    async def close() -> None:
        if web.made:  # made at the first call of a web tool, with its client
            web.get().fetcher.close()

    runtime.closers.append(close)


async def session_started(runtime: Runtime, source: str, session_id: str = "") -> None:
    """SessionStart hooks (`startup`, `resume`, `clear`); their context goes with the next
    request."""
    if runtime.hooks:
        await runtime.hooks.session_started(source, session_id)


def attach_hooks(runtime: Runtime, sandbox: Sandbox) -> None:
    """The hooks of the user's settings, and of the project in a trusted folder, on the
    dispatcher (PreToolUse, PostToolUse) and the loop (UserPromptSubmit, Stop); they run
    through the sandbox as commands do."""
    options, ui = runtime.options, runtime.ui
    found = load_hooks(runtime.settings.hooks, options.home, options.root, trusted=options.trusted)
    runtime.warnings.extend(found.warnings)
    if not (found.hooks or found.warnings):  # /hooks says so; nothing else needs them
        return
    from .hooks.engine import Hooks
    from .hooks.runner import HookRunner

    runner = HookRunner(options.root, runtime.env, launcher=sandbox)
    hooks = Hooks(found, runner, lambda message, level: ui.notice(message, level))
    runtime.hooks = hooks
    if hooks:
        runtime.loop.dispatcher.hooks = hooks
        runtime.loop.hooks = hooks


def attach_subagents(runtime: Runtime) -> SubagentRunner:
    """spawn_agent and spawn_agents in the table, on a runner built from the main loop."""
    settings, options = runtime.settings, runtime.options
    definitions, warnings = load_definitions(options.root, options.home, options.trusted)
    runtime.warnings.extend(warnings)
    budget = AgentBudget(
        max_steps=settings.subagent_max_steps, max_tokens=settings.subagent_max_tokens,
        max_seconds=settings.subagent_max_seconds, report_cap=settings.subagent_report_cap,
        turn_tokens=settings.subagent_turn_tokens,
    )
    runner = SubagentRunner(
        runtime.loop, options.home,
        system_prompt=lambda table, mode: system_prompt(table, mode, runtime.prompt_extras),
        context=lambda table: runtime.context(  # the project's instructions hold there too
            runtime.skills.index_for(table) if runtime.skills else ""),
        prepare_table=lambda table: runtime.skills.give_agent(table) if runtime.skills else None,
        budget=budget, concurrency=subagent_concurrency(settings), definitions=definitions,
        make_guard=lambda model: Compressor(
            runtime.provider, model, runtime.window or 0, enabled=settings.compress
        ) if runtime.window else None,
    )
    runner.admission = lambda spec: denial(runtime.policy, SPAWN_AGENT, spec.arguments())
    runtime.loop.on_turn = runner.new_turn
    for tool in spawn_tools(runner):
        runtime.table.add(tool)
    return runner


def subagent_concurrency(settings: Settings) -> int:
    """The setting; else 2, or 1 for a local server (it serves one request at a time)."""
    if settings.subagent_concurrency:
        return settings.subagent_concurrency
    host = urlsplit(base_url_of(settings, settings.provider) or "").hostname or ""
    local = settings.provider == "ollama" or host in ("127.0.0.1", "localhost", "::1")
    return 1 if local else 2


def attach_context_files(runtime: Runtime, sandbox: Sandbox | None = None) -> None:
    """The project instructions and the skills (project ones only in a trusted folder)."""
    options = runtime.options
    runtime.instructions = project_instructions(options, runtime.settings)
    catalog = discover_skills(options.root, options.home, trusted=options.trusted)
    runtime.warnings.extend(runtime.instructions.problems + catalog.problems)
    if not catalog.skills:
        return
    from .skills.book import SkillBook

    shell = runtime.table.get("run_cmd")
    runtime.skills = SkillBook(
        catalog, options.root, shell.handler if shell else None,
        lambda tools: add_skill_tools(runtime, tools), launcher=sandbox,
        confined=lambda: sandbox is not None and sandbox.confinement != "off",
    )
    runtime.table.add(runtime.skills.tool())


def project_instructions(options: RunOptions, settings: Settings) -> ProjectInstructions:
    return load_instructions(
        options.root, options.home, trusted=options.trusted,
        fallbacks=settings.instruction_fallbacks, max_bytes=settings.instructions_max_bytes,
        trusted_above=TrustStore(options.home).is_trusted,
    )


def add_skill_tools(runtime: Runtime, tools: list[Tool]) -> list[Tool]:
    """A loaded skill's script tools: in the table and offered from the next request on."""
    from .skills.book import add_to_table

    added = add_to_table(runtime.table, tools)
    if runtime.loop.menu is not None:
        runtime.loop.menu.loaded.update(tool.name for tool in added)
    return added


def sandbox_for(settings: Settings, options: RunOptions, ui: UI) -> Sandbox:
    """The sandbox the options bring, else the one the `sandbox` setting describes."""
    if options.sandbox is not None:
        return options.sandbox
    return Sandbox(
        settings.sandbox, options.root, options.home,
        notice=lambda message: ui.notice(message, "warning"),
        instructions=instruction_names(settings.instruction_fallbacks),
    )


def build_dispatcher(
    settings: Settings, table: ToolTable, ctx: ToolContext, ui: UI, policy: CallPolicy, git: GitOps
) -> Dispatcher:
    """Every call crosses `policy`; file changes are snapshotted and committed through `git`."""
    before, after = undo_hooks(git, ctx)
    return Dispatcher(
        table=table,
        ctx=ctx,
        ui=ui,
        policy=policy,
        default_timeout=settings.tool_timeout,
        default_cap=settings.result_cap,
        caps=dict(settings.result_caps),
        before_run=[before],
        after_success=[after],
    )


def build_loop(
    settings: Settings, root: Path, provider: Provider, table: ToolTable,
    dispatcher: Dispatcher, ui: UI,
) -> TurnLoop:
    """The turn loop, on the settings' model or else the provider's default one."""
    turn_settings = TurnSettings(
        model=settings.model or provider.default_model,
        max_steps=settings.max_steps,
        soft_pressure_after=settings.soft_pressure_after,
        temperature=settings.temperature,
        keep_thinking=settings.keep_thinking,
        answer_checks=settings.answer_checks,
        answer_check_feedback=settings.answer_check_feedback,
        checks=TurnChecks(settings.verify_after_change),
    )
    return TurnLoop(
        provider=provider,
        table=table,
        dispatcher=dispatcher,
        ui=ui,
        settings=turn_settings,
        system_prompt=lambda mode: system_prompt(table, mode),
        context=lambda: project_context(root),
    )


def _resolved_or_none(ctx: ToolContext, path: str) -> Path | None:
    """The path the tool will write, or None when it cannot be resolved (the tool then
    refuses it itself): a snapshot must never fail the call."""
    try:
        return ctx.resolve(path)
    except (OSError, ValueError, ToolError):
        return None


def undo_hooks(git: GitOps, ctx: ToolContext) -> tuple[BeforeHook, AfterHook]:
    """Snapshot what a file tool may change, then commit what it did change."""

    def before(call: ToolCall, tool: Tool) -> None:
        if tool.writes_files and git.enabled:
            named = tool.path_values(call.arguments, written_only=True).values()
            git.snapshot_before([path for p in named if (path := _resolved_or_none(ctx, p))])

    def after(call: ToolCall, tool: Tool, output: ToolOutput) -> str | None:
        if tool.writes_files and output.changed_paths and git.enabled:
            return git.commit_paths(tool.name, list(output.changed_paths))
        return None

    return before, after


def fix_attempts(profile: Profile, setting: int, given: frozenset[str]) -> int:
    """The fixes the check after a change may ask for: the profile's own while the user has
    set none, else the setting; none when the profile does not verify."""
    if not profile.verify:
        return 0
    if profile.fix_attempts is not None and "verify_after_change" not in given:
        return profile.fix_attempts
    return setting
