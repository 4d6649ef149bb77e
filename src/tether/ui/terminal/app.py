"""The interactive terminal: read a line, run a turn or a slash command, save, repeat.

Output goes to the normal scrollback. A turn runs as a task so Ctrl-C can
cancel it (the model request and running tools stop; what was collected is
kept). The session is saved after every exchange.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app_or_none, run_in_terminal
from prompt_toolkit.formatted_text import FormattedText
from rich.console import Console
from rich.text import Text

from tether import __version__
from tether.core.loop import Conversation, TurnResult
from tether.core.messages import Message, TextDelta, ToolCall
from tether.core.ui_protocol import NoticeLevel
from tether.providers.base import RequestOptions
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.safety.approval import guarded_write
from tether.safety.permissions import (
    PROJECT_FILE,
    USER_FILE,
    Rule,
    TrustStore,
    save_rule,
    too_broad_to_trust,
)
from tether.safety.safetext import SafeTextStream, clean_text, count_bad_chars, has_bad_chars
from tether.store.config import Settings
from tether.store.session import (
    SessionCorrupt,
    SessionRecord,
    SessionStore,
    clean_title,
    title_prompt,
)
from tether.store.statefile import StateFileError
from tether.tools.ask import Question

from .prompt import ProjectFiles, TetherCompleter, expand_mentions, make_session
from .slash.handlers import COMMANDS
from .terminal_ui import TerminalUI, keys_not_echoed, shown
from .theme import THEME

TITLE_TIMEOUT = 20.0


class UsageProblem(Exception):
    """The app cannot start with these flags or settings (found while setting it up)."""


@dataclass
class App:
    settings: Settings
    options: RunOptions
    env: dict[str, str]
    console: Console = field(default_factory=lambda: Console(
        file=cast(TextIO, SafeTextStream()), theme=THEME, highlight=False))
    runtime: Runtime = field(init=False)
    ui: TerminalUI = field(init=False)
    conv: Conversation = field(default_factory=Conversation)
    store: SessionStore = field(init=False)
    record: SessionRecord = field(init=False)
    prompt: PromptSession = field(init=False)
    protocol: str = "…"
    starting: asyncio.Future | None = None
    exiting: bool = False
    deepthink: bool = False
    last_result: TurnResult | None = None

    # ------------------------------------------------------------ start-up

    def setup(self, resume: str | None = None, continue_last: bool = False) -> None:
        """Build the runtime and the prompt; raises ValueError for a usage problem."""
        self.ui = TerminalUI(self.console, self.ask_line, on_always=self.allow_always,
                             root=self.options.root)
        self.options.asker = self.ask_questions
        self.options.approve_plan = self.approve_plan
        self.options.on_output = self.ui.command_output
        if TrustStore(self.options.home).is_trusted(self.options.root):
            self.options.trusted = True  # trusted in an earlier session (one-shot needs --trust)
        self.runtime = build_runtime(self.settings, self.options, self.ui, self.env)
        self.store = SessionStore(self.options.home)
        self.record = self._initial_record(resume, continue_last)
        self.conv = self.record.to_conversation()
        files = ProjectFiles(self.options.root)
        completer = TetherCompleter(lambda: COMMANDS.names(), files)
        self.prompt = make_session(self.options.home / "history", completer, self.toolbar,
                                   warn=self.warn_anytime)

    def _initial_record(self, resume: str | None, continue_last: bool) -> SessionRecord:
        root = self.options.root
        if resume:
            return self.store.load(resume, root)
        if continue_last:
            latest = self.store.latest(root)
            if latest is not None:
                return latest
            self.say(self.no_earlier_session(), "warning")
        return self.store.new(root, self.settings.provider, self.runtime.loop.settings.model)

    def no_earlier_session(self) -> str:
        """Why -c starts afresh: no session at all, or only ones that cannot be read."""
        broken = sum(1 for s in self.store.list(self.options.root) if s.corrupt)
        if not broken:
            return "No earlier session for this folder; starting a new one."
        which = ("the one saved session is" if broken == 1
                 else f"all {broken} saved sessions are")
        return (f"No earlier session of this folder could be continued: {which} unreadable "
                "(see /sessions); starting a new one.")

    async def run(self) -> int:
        try:
            # What the model can do is asked while the prompt is already up: the first
            # request (or anything that needs the answer) waits for it in `ready`.
            self.starting = asyncio.ensure_future(self.runtime.start())
            self.starting.add_done_callback(self._started)
            self.banner()
            threading.Thread(target=warm_up, daemon=True).start()
            await self.ask_trust()
            await self.read_loop()
        finally:
            await self.runtime.aclose()
        return 0

    def _started(self, task: asyncio.Future) -> None:
        if not task.cancelled() and task.exception() is None:
            self.protocol = task.result()
            if self.prompt.app.is_running:
                self.prompt.app.invalidate()  # redraw the status line with the protocol

    async def ready(self) -> None:
        """Wait for the start-up questions to the provider, if they are still under way."""
        task, self.starting = self.starting, None
        if task is None:
            return
        try:
            await task
        except Exception as exc:  # the provider could not be asked; the request will say why
            self.say(f"Could not ask the provider what the model supports: {exc}", "warning")

    def banner(self) -> None:
        s = self.runtime.loop.settings
        self.console.print(Text(f"tether {__version__}", style="bold"),
                           Text(f"· {self.settings.provider} · {s.model}", style="status"))
        if self.conv.messages:
            self.say(f"Continuing session {self.record.title or self.record.id} "
                     f"({len(self.conv.messages)} messages).")
        self.say("Type a request, /help for commands, Ctrl-D to exit.")
        for warning in self.runtime.warnings:
            self.say(warning, "warning")

    async def ask_trust(self) -> None:
        """A project's own allow rules count only once the user trusts the folder."""
        root = self.options.root
        trust = TrustStore(self.options.home)
        if self.options.trusted or not (root / PROJECT_FILE).exists() or trust.is_trusted(root):
            return
        self.say(f"This folder has a {PROJECT_FILE} that may allow tools to run without asking.",
                 "warning")
        try:
            answer = await self.ask_line("Trust this folder and honour its allow rules? [y/N]: ")
        except (KeyboardInterrupt, EOFError):  # Ctrl-C or Ctrl-D: the safe answer, no
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            saved = self.remember_trust()
            self.options.trusted = True
            await self.rebuild()
            self.say("Trusted; its rules apply from now on." if saved
                     else "Trusted for this session only; its rules apply until you exit.")
        else:
            self.say("Not trusted: its allow rules are ignored (its deny rules still apply).")

    def remember_trust(self) -> bool:
        """Save that the user trusts this folder; a home that cannot be written is reported
        (the trust still holds for this session) and gives False."""
        trust = TrustStore(self.options.home)
        try:
            trust.trust(self.options.root)
        except StateFileError as exc:  # a broken trusted.json is kept, not replaced
            self.say(f"Could not save the trust: {exc}", "warning")
            return False
        except OSError as exc:
            self.say(f"Could not save the trust in {trust.path} ({exc.strerror or exc}).", "warning")
            return False
        return True

    async def rebuild(self, settings: Settings | None = None) -> None:
        """A new runtime (provider, rules) for the same conversation; what the user set this
        session (rules, plan mode, auto-commit) carries over."""
        await self.ready()
        old = self.runtime
        self.runtime = build_runtime(settings or self.settings, self.options, self.ui, self.env)
        self.settings = settings or self.settings
        self.runtime.git.enabled = old.git.enabled
        self.runtime.rules.carry_session_rules(old.rules)
        if old.plan_gate.active:
            self.runtime.set_plan_mode("on", self.approve_plan)
        self.protocol = await self.runtime.start()
        await old.aclose()

    # ------------------------------------------------------------ the loop

    async def read_loop(self) -> None:
        interrupts = 0
        while not self.exiting:
            try:
                line = await self.prompt.prompt_async("› ")
                interrupts = 0
            except KeyboardInterrupt:
                interrupts += 1
                if interrupts >= 2:
                    break
                self.say("(Ctrl-C again, or Ctrl-D, to exit)")
                continue
            except EOFError:
                break
            await self.handle(line)

    async def handle(self, line: str) -> None:
        if has_bad_chars(line):  # typed in a terminal whose encoding is not UTF-8
            self.say(f"{count_bad_chars(line)} typed byte(s) were not UTF-8; they are kept "
                     "as \\xNN escapes.", "warning")
            line = clean_text(line)
        text = line.strip()
        if not text:
            return
        if text.startswith("/"):
            await self.slash_command(text)
        else:
            await self.turn(line)

    async def slash_command(self, text: str) -> None:
        """Run one; whatever goes wrong in it is one line on the screen and the app goes on."""
        name = "/" + text[1:].strip().partition(" ")[0]
        try:
            await COMMANDS.run(self, text)
        except SessionCorrupt as exc:  # the sessions folder or a session file is unusable
            self.say(str(exc), "error")
        except OSError as exc:  # a file under TETHER_HOME or the project that cannot be used
            path = exc.filename2 or exc.filename  # a rename names its target second
            where = f": {path}" if path else ""
            self.say(f"{name} could not finish: {exc.strerror or exc}{where}", "error")
        except Exception as exc:  # a bug in a command must not end the session
            detail = " ".join(str(exc).split())
            self.say(f"{name} failed with {type(exc).__name__}" + (f": {detail}" if detail else ""),
                     "error")

    async def turn(self, line: str) -> None:
        text, attached = expand_mentions(line, self.options.root)
        if attached:
            self.say("attached " + ", ".join(attached))
        self.runtime.plan_gate.new_request()
        await self.ready()
        if self.protocol != "native" and self.settings.protocol == "auto":
            self.protocol = await self.runtime.start()  # the server may have been down at start
        if self.deepthink:
            from tether.core.deepthink import Deepthink, deepthink_turn

            chain = Deepthink(self.runtime.loop, self.runtime.git, self.ui, self.runtime.plan_gate)
            await self.run_cancellable(deepthink_turn(chain, self.conv, text))
        else:
            await self.run_cancellable(self.runtime.loop.run_turn(self.conv, text))

    async def run_cancellable(self, work: Awaitable[Any]) -> Any:
        """Run a turn (or /compact) so that Ctrl-C stops it, keeps what it collected and
        returns here; a turn's result gets the footer line."""
        started = time.monotonic()
        task = asyncio.ensure_future(work)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        self.ui.waiting()
        result = None
        try:
            with keys_not_echoed():
                result = await task
        except asyncio.CancelledError:
            self.ui.settle()
            self.console.print(Text("Stopped.", style="notice"))
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self.ui.settle()
        if isinstance(result, TurnResult):
            self.last_result = result
            self.footer(result, time.monotonic() - started)
        await self.save_session()
        if being_cancelled():  # the app itself is ending (SIGTERM), not just this turn
            raise asyncio.CancelledError
        return result

    def footer(self, result: TurnResult, elapsed: float) -> None:
        out = result.usage.output_tokens
        streaming = self.ui.streaming_seconds
        rate = f" · {out / streaming:.0f} tok/s" if out and streaming > 0.05 else ""
        stop = "" if result.stop_reason == "end_turn" else f" · stopped: {result.stop_reason}"
        self.console.print(Text(
            f"{result.steps} request(s) · {len(result.evidence)} tool call(s) · "
            f"{result.usage.input_tokens}→{out} tokens{rate} · {elapsed:.1f}s{stop}", style="status"))

    # ------------------------------------------------------------ sessions

    async def save_session(self) -> None:
        self.record.update_from(self.conv)
        self.record.model = self.runtime.loop.settings.model
        self.record.provider = self.settings.provider
        if not self.record.messages:
            return
        if self.record.autotitle and not self.record.title:
            self.record.title = await self.make_title()
        try:
            self.store.save(self.record)
        except (SessionCorrupt, OSError) as exc:
            self.say(f"Session not saved: {exc}", "error")

    async def make_title(self) -> str:
        users = [m.text for m in self.conv.messages if m.role == "user" and m.text]
        answers = [m.text for m in self.conv.messages if m.role == "assistant" and m.text]
        if not users or not answers:
            return ""
        request = [Message.user(title_prompt(users[0], answers[-1]))]
        options = RequestOptions(self.runtime.loop.settings.model, max_tokens=40)
        try:
            return clean_title(await asyncio.wait_for(self._collect(request, options), TITLE_TIMEOUT))
        except Exception:  # a title is a nicety: any failure leaves the session untitled
            return ""

    async def _collect(self, request: list[Message], options: RequestOptions) -> str:
        text = ""
        async for event in self.runtime.provider.stream(request, None, options):
            if isinstance(event, TextDelta):
                text += event.text
        return text

    # ------------------------------------------------------------ talking to the user

    def say(self, message: str, level: NoticeLevel = "info") -> None:
        style = {"error": "tool.error", "warning": "notice"}.get(level, "status")
        self.console.print(shown(message, style))

    def warn_anytime(self, message: str) -> None:
        """A warning that may come while the input line is showing (the history file failing
        as Enter stores a line): printed above the prompt then, directly otherwise."""
        if get_app_or_none() is None:
            self.say(message, "warning")
        else:
            run_in_terminal(lambda: self.say(message, "warning"))

    async def ask_line(self, message: str, default: str = "", secret: bool = False) -> str:
        session: PromptSession = PromptSession()
        return await session.prompt_async(message, default=default, handle_sigint=False,
                                          is_password=secret)

    async def ask_questions(self, questions: list[Question]) -> list[str] | None:
        self.ui.settle()
        answers = []
        for q in questions:
            self.console.print(shown("? " + q.question, "bold"))
            for i, option in enumerate(q.options, 1):
                self.console.print(shown(f"   {i}. {option}"))
            try:
                raw = (await self.ask_line("answer (a number or your own words): ")).strip()
            except (KeyboardInterrupt, EOFError):
                return None
            answers.append(q.options[int(raw) - 1] if raw.isdigit() and 0 < int(raw) <= len(q.options) else raw)
        return answers

    async def approve_plan(self, plan: str) -> tuple[bool, str]:
        self.ui.settle()
        self.console.print(Text("Plan for approval:", style="bold"))
        self.console.print(shown(plan))
        try:
            answer = (await self.ask_line("Approve this plan? [y]es / [n]o: ")).strip().lower()
            if answer in ("y", "yes"):
                return True, ""
            return False, (await self.ask_line("What should change? ")).strip()
        except (KeyboardInterrupt, EOFError):
            return False, ""

    def allow_always(self, call: ToolCall) -> str:
        """Save an allow rule for exactly this call and apply it now; the answer says where
        it went (the project's rules, the user's own, or this session only)."""
        tool = self.runtime.table.get(call.name)
        value = tool.main_value(call.arguments) if tool else ""
        if tool is None or tool.main_arg == "session" or any(ch in value for ch in "*?"):
            # the rule language has no escape for wildcards, and a session id says nothing
            # about what is sent to it: no rule could name exactly this call
            self.say("No exact rule can name this call; allowed this once.", "warning")
            return ""
        guarded = [guarded_write(self.options.root, self.options.home, p)
                   for p in tool.path_values(call.arguments).values()] if tool.writes_files else []
        kind = next((g for g in guarded if g is not None), None)
        if kind is not None:
            self.say(f"Writes into {kind.what} always ask; allowed this once.", "warning")
            return ""
        text = f"{call.name}({value})" if value else call.name
        rules_file, source = self.always_rules_file()
        first_rules = source == "project" and not rules_file.exists()
        try:
            rule = Rule.parse(text, source)
            save_rule(rules_file, "allow", rule)
        except (OSError, ValueError) as exc:
            self.say(f"Could not save the rule ({exc}); it holds for this session only.", "error")
            self.runtime.rules.add("allow", Rule.parse(text, "session"))
            return f"{text} for this session only"
        self.runtime.rules.add("allow", Rule.parse(text, "session"))
        if source == "project":
            self.keep_rules_trusted(first_rules)
        return f"{rule} in {rules_file}"

    def always_rules_file(self) -> tuple[Path, str]:
        """Where an [a]lways rule goes: the project's rules, unless that would create them in
        (and so trust) a folder too broad to trust as a side effect, such as $HOME."""
        project = self.options.root / PROJECT_FILE
        if self.options.trusted or project.exists():
            return project, "project"
        try:
            user_home = Path.home()
        except RuntimeError:  # no $HOME and no account entry: still refuse / and folders of repos
            user_home = Path(self.options.root.anchor or "/")
        why = too_broad_to_trust(self.options.root, user_home)
        if why is None:
            return project, "project"
        user_file = self.options.home / USER_FILE
        self.say(f"This folder is not made trusted by an [a]lways answer ({why}): the rule goes "
                 f"to your own rules in {user_file}, which apply in every folder.", "warning")
        return user_file, "user"

    def keep_rules_trusted(self, file_is_ours: bool) -> None:
        """A rules file the user's own answers created is theirs: trust the folder so the rules
        count next time. A file that came with the project needs an explicit yes."""
        if self.options.trusted:
            return
        if file_is_ours:
            self.remember_trust()
            self.options.trusted = True
        else:
            self.say(f"This folder is not trusted, so its {PROJECT_FILE} counts only after you "
                     "trust it (asked at start).", "warning")

    def toolbar(self) -> FormattedText:
        s = self.runtime.loop.settings
        modes = [name for name, on in (
            ("auto", self.options.auto), ("think", self.ui.show_thinking),
            ("deepthink", self.deepthink), ("plan", self.runtime.plan_gate.active),
        ) if on]
        parts = [f" {self.settings.provider} · {s.model}", f"{self.protocol} tools",
                 f"{self.runtime.profile.name} profile", self.context_used()]
        if modes:
            parts.append("modes: " + ", ".join(modes))
        return FormattedText([("class:bottom-toolbar", "  │  ".join(parts))])

    def context_used(self) -> str:
        used = self.conv.context_tokens
        window = getattr(self.runtime.loop.guard, "window", 0)
        if not used:
            return "context empty"
        if window:
            return f"context {used:,}/{window:,} ({100 * used // window}%)"
        return f"context {used:,} tokens"


def being_cancelled() -> bool:
    """Whether the running task was asked to stop (Python 3.10 cannot tell: False)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling and cancelling())


def warm_up() -> None:
    """Load what the first reply needs while the user is still typing."""
    import tether.ui.terminal.render  # noqa: F401  (markdown, highlighting)


async def run_app(settings: Settings, options: RunOptions, env: dict[str, str],
                  resume: str | None, continue_last: bool, deepthink: bool = False) -> int:
    """Set up and run the app; raises UsageProblem when the flags or settings cannot start it."""
    app = App(settings, options, env, deepthink=deepthink)
    try:
        app.setup(resume, continue_last)
    except (LookupError, SessionCorrupt) as exc:
        app.say(str(exc), "error")
        return 2
    except ValueError as exc:  # an unknown provider, a bad --allow rule, ...
        raise UsageProblem(str(exc)) from None
    return await app.run()

