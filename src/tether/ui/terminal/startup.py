"""The chat's start: its prompt first, the runtime built in a thread once the prompt is up.

`StartUp` is the part of the app (`app.App`) that sets it up, builds and starts the runtime,
and makes what needs the runtime wait for it; it imports little at the top for that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from prompt_toolkit.application import get_app_or_none, run_in_terminal

from tether.engine.run_options import RunOptions
from tether.hooks.config import project_declares_hooks
from tether.mcp.config import PROJECT_FILE as PROJECT_MCP_FILE

from .prompt import ProjectFiles, TetherCompleter, make_session
from .queued import QueuedMessages
from .shown import shown

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import FormattedText
    from rich.console import Console

    from tether.core.ui_protocol import NoticeLevel
    from tether.runtime import Runtime
    from tether.store.config import Settings
    from tether.store.session import SessionRecord

    from .keyboard import Asker
    from .notify import Notifier
    from .paste import Pastes
    from .sessions import Sessions
    from .slash.context import CommandContext
    from .terminal_ui import TerminalUI
    from .theme import Palette
    from .trust import FolderTrust

STARTING = "starting…"
"""The status line while the runtime is being built and started (the prompt is already up)."""
WAITING_FOR_START = f"{STARTING} (sent as soon as the chat is ready)"
"""Shown under a request or command typed before the runtime is built: it waits, visibly."""


class UsageProblem(Exception):
    """The app cannot start with these flags or settings (found while setting it up)."""


class StartUp:
    """Setting up, building and starting the app's runtime (see the module's docstring)."""

    settings: Settings
    options: RunOptions
    env: dict[str, str]
    console: Console
    runtime: Runtime
    ui: TerminalUI
    sessions: Sessions
    prompt: PromptSession
    trust: FolderTrust
    pastes: Pastes
    asker: Asker
    queue: QueuedMessages
    protocol: str
    starting: asyncio.Future | None
    exiting: bool
    deferred: bool
    building: asyncio.Future | None
    built: bool
    failure: BaseException | None
    continuing: SessionRecord | None
    first_request: str
    palette: Palette
    notifier: Notifier

    if TYPE_CHECKING:  # the app's own, which the start uses
        def say(self, message: str, level: NoticeLevel = "info") -> None: ...
        def warn_anytime(self, message: str) -> None: ...
        def print_above_input(self, show: Callable[[], None]) -> None: ...
        def banner(self) -> None: ...
        def toolbar(self) -> FormattedText: ...
        def status_line(self) -> str: ...
        async def read_loop(self, first_drawn: Callable[[], None] | None = None) -> None: ...
        async def rebuild(self, settings: Settings | None = None) -> None: ...
        async def handle(self, line: str) -> None: ...

    def setup(self, resume: str | None = None, continue_last: bool = False) -> None:
        """The prompt, the session to continue (-r, -c: read now, so the banner shows where it
        left off), and whether the runtime can wait until the prompt is up (it cannot when the
        start may ask a question); ValueError for a usage problem (the --allow and --deny
        rules are checked here, before the prompt), LookupError or SessionCorrupt for -r."""
        from tether.providers.first_run import may_go_through_ollama

        from .keyboard import Asker

        self.asker = Asker(self.console, on_question=self.notifier.question_opened)
        self.queue = QueuedMessages(self.asker.typed_ahead,
                                    lambda line: self.console.print(shown(f"queued: {line}", "status")))
        files = ProjectFiles(self.options.root)
        completer = TetherCompleter(command_names, files)
        self.prompt = make_session(self.options.home / "history", completer, self.toolbar,
                                   warn=self.warn_anytime, pastes=self.pastes,
                                   colours=self.palette.colours)
        if self.options.allow or self.options.deny:  # a bad rule stops the start at once
            from tether.safety.permissions import check_command_line_rules

            check_command_line_rules(self.options.allow, self.options.deny)
        from tether.store.session import SessionStore, continued_record

        self.continuing = continued_record(SessionStore(self.options.home), self.options.root,
                                           lambda text: self.say(text, "warning"),
                                           resume, continue_last)
        from .trust import FolderTrust

        self.trust = FolderTrust(self.options, self.say, self.asker.confirm)
        # a question at start, or a first request from the command line, needs the runtime
        # before the prompt; it is built in `run`, after the trust question
        self.deferred = not (asks_at_start(self.options) or self.first_request
                             or may_go_through_ollama(self.settings))

    def build(self) -> None:
        """The runtime (provider, tool table, MCP, skills), the UI it talks to and the session
        (`continuing`, or a new one). In a thread when deferred: nothing here may print."""
        from tether.runtime import build_runtime
        from tether.store.session import SessionStore

        from .asking import Asking
        from .sessions import Sessions
        from .terminal_ui import TerminalUI
        from .trust import AlwaysAnswer

        trust = self.trust
        ui = TerminalUI(self.console, self.asker, root=self.options.root,
                        on_always=AlwaysAnswer(trust, lambda: self.runtime, self.say),
                        status=self.status_line, print_above_input=self.print_above_input,
                        code_theme=self.palette.code_theme)
        asking = Asking(self.console, ui.pause, self.asker)
        self.options.asker = asking.questions
        self.options.approve_plan = asking.approve_plan
        self.options.on_output = ui.command_output
        if trust.trusted_before():
            self.options.trusted = True  # trusted in an earlier session (one-shot needs --trust)
        self.runtime = build_runtime(self.settings, self.options, ui, self.env)
        self.ui = ui
        self.sessions = Sessions.with_record(SessionStore(self.options.home), self.options.root,
                                             lambda: self.runtime, self.say, self.continuing)
        self.built = True

    async def run(self) -> int:
        try:
            self.banner()
            if self.deferred:
                await self.read_loop(first_drawn=self.build_in_background)
            else:
                await self.trust.ask()  # first: what it decides changes what the build warns of
                await self.local_through_ollama()
                self.build_now()
                await self.started_up()
                await self.send_first_request()
                await self.read_loop()
            if self.failure is not None:
                raise self.failure
        finally:
            await self.close_runtime()
        return 0

    async def local_through_ollama(self) -> None:
        """`--local` without the local extra and with Ollama running: the model runs there,
        pulled (or, for a GGUF file, imported) first after a yes; Ctrl-C stops that and the
        chat goes on without it."""
        from tether.providers.first_run import NotPulled, local_through_ollama, stopped_line
        from tether.store.file_digests import digests_file

        task = asyncio.ensure_future(local_through_ollama(self.settings, self.say,
                                                          self.asker.confirm,
                                                          digests_file(self.env)))
        interrupted = asyncio.Event()

        def stop_the_pull() -> None:
            interrupted.set()
            task.cancel()

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, stop_the_pull)
        try:
            self.settings = await task
        except asyncio.CancelledError:
            if not interrupted.is_set():  # the start itself was cancelled, not the pull
                raise
            self.say(stopped_line(self.settings), "warning")
        except NotPulled as exc:
            self.say(str(exc), "warning")
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    def build_now(self) -> None:
        """`build` before the prompt; a usage problem it finds (ValueError) ends the app as one."""
        try:
            self.build()
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None

    async def send_first_request(self) -> None:
        """`tether "REQUEST"`: the request shown as if typed at the prompt, then run."""
        request, self.first_request = self.first_request, ""
        if request.strip():
            self.console.print(shown("› " + request))
            await self.handle(request)

    async def started_up(self) -> None:
        """After the build: its warnings, then the rest of the start (`start_runtime`)."""
        self.show_warnings()
        await self.start_runtime()

    def show_warnings(self) -> None:
        for warning in self.runtime.warnings:
            self.say(warning, "warning")

    async def start_runtime(self) -> None:
        """The start (what the model can do is asked while the prompt is up: the first request
        waits for it in `ready`), the start-up questions and the SessionStart hooks."""
        from tether.runtime import session_started

        self.starting = asyncio.ensure_future(self.runtime.start())
        self.starting.add_done_callback(self._started)
        await self.trust.ask(self.rebuild)  # asked already unless the build was deferred
        if self.runtime.mcp is not None and self.runtime.mcp.waiting:  # the commands load late
            from .slash.mcp_commands import ask_about_project_servers

            await ask_about_project_servers(cast("CommandContext", self))  # the app is one
        source = "resume" if self.sessions.conv.messages else "startup"
        await session_started(self.runtime, source, self.sessions.record.id)
        await self.first_run_choices()

    async def first_run_choices(self) -> None:
        """With nothing configured and no Ollama running: what was found and the choices
        (`--local` first when it can run here), before the first request fails."""
        from tether.providers.first_run import chat_choices, survey, unconfigured

        if not unconfigured(self.settings):
            return
        findings = await survey(self.settings, self.env)
        if not findings.ollama_running:
            for line in chat_choices(findings):
                self.say(line, "warning")

    def build_in_background(self) -> None:
        """The first prompt is on the screen: build the runtime now, in a thread, so typing
        goes on meanwhile; a request or a slash command waits for it (`runtime_ready`)."""
        if self.building is None:
            self.building = asyncio.ensure_future(self._build_and_start())

    async def _build_and_start(self) -> None:
        try:
            await asyncio.to_thread(self.build)
        except Exception as exc:  # ends the app, as the same problem would before the prompt
            self.failure = UsageProblem(str(exc)) if isinstance(exc, ValueError) else exc
            self.exiting = True
            if self.prompt.app.is_running:
                self.prompt.app.exit(exception=EOFError())
            return
        if self.runtime.warnings:
            await above_prompt(self.show_warnings)
        await self.start_runtime()
        if self.prompt.app.is_running:
            self.prompt.app.invalidate()  # the status line names the profile and context now

    async def runtime_ready(self) -> bool:
        """Wait for the runtime being built while the prompt is up; False when that failed
        (the app is ending and says why). A line typed before the first prompt was drawn can
        come before the build was begun: it begins it, and waits for it too."""
        if self.deferred and self.building is None:
            self.build_in_background()
        if self.building is not None:
            if not self.building.done():
                self.console.print(shown(WAITING_FOR_START, "status"))
            await asyncio.shield(self.building)
        return self.failure is None

    async def close_runtime(self) -> None:
        """Close the runtime; one still being built is waited for first (a thread cannot be
        stopped) so that nothing it started is left behind."""
        if self.building is not None:
            with contextlib.suppress(Exception):  # its failure is the app's to report
                await self.building
        if "runtime" in vars(self):
            await self.runtime.aclose()

    def _started(self, task: asyncio.Future) -> None:
        """Ready: the status line says so; what the first reply needs (the rendering) loads
        now, in a thread, off the path to ready."""
        from tether.runtime import resume_collection

        resume_collection()  # the start is over, however it ended
        if not task.cancelled() and task.exception() is None:
            self.protocol = task.result()
            if self.prompt.app.is_running:
                self.prompt.app.invalidate()  # redraw the status line with the protocol
        threading.Thread(target=warm_up, args=(self.runtime,), daemon=True).start()

    async def ready(self) -> None:
        """Wait for the start-up questions to the provider, if they are still under way."""
        if not await self.runtime_ready():
            return
        task, self.starting = self.starting, None
        if task is None:
            return
        from .terminal_ui import live_wait

        waiting = contextlib.nullcontext() if task.done() else live_wait(self.ui, self.start_waits_for())
        try:
            with waiting:
                await task
        except Exception as exc:  # the provider could not be asked; the request will say why
            self.say(f"Could not ask the provider what the model supports: {exc}", "warning")

    def start_waits_for(self) -> str:
        """What a request typed while the runtime starts waits for, as its activity line says."""
        mcp = self.runtime.mcp
        servers = mcp.manager.servers.values() if mcp is not None else ()
        starting = [server.config.name for server in servers if server.state == "starting"]
        if starting:
            return "starting MCP servers: " + ", ".join(starting)
        return "asking the provider about the model"


def asks_at_start(options: RunOptions) -> bool:
    """Whether the start may ask a question, which needs the runtime before the prompt:
    trust a folder never trusted whose rules or hooks would count, or start a trusted
    folder's MCP servers (an untrusted folder's servers are skipped with a notice)."""
    from tether.safety.trusted_folders import PROJECT_FILE as PROJECT_RULES_FILE
    from tether.safety.trusted_folders import TrustStore

    root = options.root
    trusted = options.trusted or TrustStore(options.home).is_trusted(root)
    if not trusted and ((root / PROJECT_RULES_FILE).exists() or project_declares_hooks(root)):
        return True
    return trusted and (root / PROJECT_MCP_FILE).exists()


def command_names() -> list[tuple[str, str]]:
    """The slash commands, for completion (their code is imported when one is first typed)."""
    from .slash.handlers import COMMANDS

    return COMMANDS.names()


def drawn_soon(callback: Callable[[], None]) -> Callable[[], None]:
    """A prompt's `pre_run` that runs `callback` once the prompt is drawn: pre_run comes just
    before the first drawing, which happens before the event loop runs anything else."""
    def pre_run() -> None:
        asyncio.get_running_loop().call_soon(callback)

    return pre_run


async def above_prompt(show: Callable[[], None]) -> None:
    """Print with `show` above the input line if it is showing, else directly."""
    if get_app_or_none() is None:
        show()
    else:
        await run_in_terminal(show)


def warm_up(runtime: Runtime) -> None:
    """Load what the first reply needs while the user is still typing."""
    import tether.ui.terminal.render  # noqa: F401  (markdown, highlighting)

    with contextlib.suppress(Exception):  # the first request meets the same problem, and says it
        runtime.warm_up()
