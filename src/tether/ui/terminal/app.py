"""The interactive terminal: read a line, run a turn or a slash command, save, repeat.

Output goes to the normal scrollback. A turn runs as a task so Ctrl-C can
cancel it (the model request and running tools stop; what was collected is
kept). The session is saved after every exchange.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from rich.console import Console
from rich.text import Text

from tether import __version__
from tether.core.textclip import clip_words
from tether.engine.images import attach_images
from tether.engine.run_options import RunOptions
from tether.host import SafeTextStream, clean_text, count_bad_chars, has_bad_chars
from tether.providers import default_model
from tether.store.config import Settings

from ..text_answer import no_answer_note
from .fit import fit_parts, print_above_input
from .notify import Notifier
from .paste import Pastes
from .prompt import expand_mentions
from .queued import QueuedMessages
from .shown import shown
from .startup import STARTING, StartUp, UsageProblem, drawn_soon
from .theme import PALETTES, Palette, chosen_palette
from .typed_ahead import entering_early_keys

if TYPE_CHECKING:  # what the prompt does not need waits: it is built while the prompt is up
    from tether.core.messages import Message
    from tether.core.ui_protocol import NoticeLevel
    from tether.engine.loop import TurnResult
    from tether.runtime import Runtime
    from tether.store.session import SessionRecord

    from .keyboard import Asker, Choices
    from .sessions import Sessions
    from .terminal_ui import TerminalUI
    from .trust import FolderTrust

RECAP_EXCHANGES = 3
"""Exchanges of a continued conversation shown at the start (each request, its answer's first lines)."""
RECAP_LINES = 4
RECAP_WIDTH = 160


@dataclass
class App(StartUp):
    """The read-eval loop of the terminal; it is the `CommandContext` the slash commands get.
    Its parts: the runtime (state changes are its methods), `Sessions` (the conversation and
    its saved record), `Asking` (questions and plan approval), `FolderTrust` and
    `AlwaysAnswer` (which rules count, where an [a]lways rule goes)."""

    settings: Settings
    options: RunOptions
    env: dict[str, str]
    palette: Palette = PALETTES["dark"]
    """The colours (setting theme, NO_COLOR): `run_app` picks them."""
    console: Console = field(default_factory=lambda: themed_console(PALETTES["dark"]))
    runtime: Runtime = field(init=False)
    ui: TerminalUI = field(init=False)
    sessions: Sessions = field(init=False)
    prompt: PromptSession = field(init=False)
    trust: FolderTrust = field(init=False)
    pastes: Pastes = field(default_factory=Pastes)
    asker: Asker = field(init=False)
    """Every question (`keyboard`); keys typed ahead of one wait in the next input line."""
    queue: QueuedMessages = field(init=False)
    """Lines typed while a turn ran, sent after it in order."""
    notifier: Notifier = field(default_factory=Notifier)
    """The bell or notification when long work ends or a question waits (setting notify)."""
    protocol: str = "…"
    starting: asyncio.Future | None = None
    exiting: bool = False
    deepthink: bool = False
    last_result: TurnResult | None = None
    deferred: bool = False
    """The runtime is built once the first prompt is drawn (`build_in_background`)."""
    building: asyncio.Future | None = None
    built: bool = False
    failure: BaseException | None = None
    """Why the runtime could not be built while the prompt was up: it ends the app."""
    continuing: SessionRecord | None = None
    """The saved session -c or -r continues (read before the first prompt)."""
    first_request: str = ""
    """`tether "REQUEST"`: sent as the first message, before the first prompt."""

    # ------------------------------------------------------------ start-up

    @property
    def model_name(self) -> str:
        """The model in use; before the runtime is built, the one the settings choose."""
        if self.built:
            return self.runtime.model
        return self.settings.model or default_model(self.settings.provider)

    def banner(self) -> None:
        self.console.print(Text(f"tether {__version__}", style="bold"),
                           Text(f"· {self.settings.provider} · {self.model_name}", style="status"))
        record = self.continuing
        if record is not None and record.messages:
            self.say(f"Continuing session {record.title or record.id} "
                     f"({len(record.messages)} messages).")
            self.recap(record.messages)
        self.say("Type a request, /help for commands, Ctrl-D to exit.")

    def recap(self, messages: list[Message], exchanges: int = RECAP_EXCHANGES) -> None:
        """The last few exchanges of the conversation being continued, so the user sees where
        it left off: each request after the prompt mark, the answer's first lines below it."""
        for request, answer in recent_exchanges(messages, exchanges):
            self.console.print(shown("› " + clipped_lines(request, 2, RECAP_WIDTH), "status"))
            if answer:
                self.console.print(shown(clipped_lines(answer, RECAP_LINES, RECAP_WIDTH)))

    async def picked_session(self) -> str | None:
        """`tether -r` without a session: the id picked from this folder's, None for a new one."""
        from tether.store.session import SessionStore

        from .keyboard import Asker
        from .session_picker import pick_session

        return await pick_session(self.console, Asker(self.console), SessionStore(self.options.home),
                                  self.options.root)

    async def rebuild(self, settings: Settings | None = None) -> None:
        """A new runtime (provider, rules) for the same conversation (`Runtime.restarted`: what
        the user set this session carries over), started; the old one is closed."""
        await self.ready()
        self.runtime, self.protocol = await self.runtime.restarted(settings)

    # ------------------------------------------------------------ the loop

    async def read_loop(self, first_drawn: Callable[[], None] | None = None) -> None:
        """Read and run lines until Ctrl-D; `first_drawn` runs once the first prompt is drawn."""
        interrupts = 0
        early: contextlib.AbstractContextManager[None] = entering_early_keys(
            self.prompt.app, self.asker.typed_ahead)
        while not self.exiting:
            queued = self.next_queued()
            if queued is not None:
                self.console.print(shown("› " + queued, "status"))
                await self.handle(queued)
                continue
            pre_run = drawn_soon(first_drawn) if first_drawn is not None else None
            first_drawn = None
            try:
                with early:  # the first input line only: what was typed before it was drawn
                    early = contextlib.nullcontext()
                    line = await self.prompt.prompt_async("› ", default=self.asker.typed_ahead.take(),
                                                          pre_run=pre_run)
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

    def next_queued(self) -> str | None:
        """The next line typed during a turn (one a question's drain kept counts too)."""
        if "queue" not in vars(self):
            return None
        self.queue.take_lines()
        return self.queue.next()

    async def handle(self, line: str) -> None:
        line = self.pastes.expand(line)  # the prompt showed a large paste as one line
        if has_bad_chars(line):  # typed in a terminal whose encoding is not UTF-8
            self.say(f"{count_bad_chars(line)} typed byte(s) were not UTF-8; they are kept "
                     "as \\xNN escapes.", "warning")
            line = clean_text(line)
        text = line.strip()
        if not text:
            return
        if text.startswith("/"):
            await self.slash_command(text)
        elif text.startswith("!"):
            await self.user_command(text[1:].strip())
        else:
            await self.turn(line)

    async def slash_command(self, text: str) -> None:
        """Run one; whatever goes wrong in it is one line on the screen and the app goes on."""
        from tether.store.session import SessionCorrupt

        from .slash.handlers import COMMANDS

        name = "/" + text[1:].strip().partition(" ")[0]
        if not await self.runtime_ready():  # every command but a few reads the runtime
            return
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

    async def user_command(self, command: str) -> None:
        """`!command`: run it as the user's own `run_cmd` (the rules and the sandbox apply,
        no question is asked), show it as a call, and keep its output in the conversation
        for the next request."""
        if not command:
            self.say("Type a shell command after the !, e.g. !git status.", "warning")
            return
        await self.ready()
        if not self.built:
            return
        done = await self.run_cancellable(self.runtime.user_command(command))
        if done is None:  # Ctrl-C: the command was stopped, nothing is added
            return
        self.sessions.conv.messages.append(done.context)
        await self.sessions.save()
        self.say("Its output is in the conversation: your next request comes with it."
                 if done.ran else "It did not run; the refusal is in the conversation.")

    async def turn(self, line: str, source: str = "") -> None:
        text, attached = expand_mentions(line, self.options.root)
        found = attach_images(line, self.options.root)
        for problem in found.problems:
            self.say(problem, "warning")
        await self.ready()
        if not self.built:  # the runtime could not be built: the app is ending
            return
        if found.images and not self.images_may_go(line):
            return
        if attached or found.names:
            self.say("attached " + ", ".join(attached + found.names))
        self.runtime.new_request(line, source=source)  # the line as typed: no attached file
        if self.protocol != "native" and self.runtime.settings.protocol == "auto":
            self.protocol = await self.runtime.start()  # the server may have been down at start
        conv = self.sessions.conv
        if self.deepthink:
            from tether.engine.deepthink import Deepthink, deepthink_turn

            chain = Deepthink(self.runtime.loop, self.runtime.git, self.ui, self.runtime.plan_gate)
            await self.run_cancellable(deepthink_turn(chain, conv, text))
        else:
            await self.run_cancellable(self.runtime.loop.run_turn(conv, text, found.images))

    def images_may_go(self, line: str) -> bool:
        """Whether the model in use takes the request's images; if not, it is said, nothing
        is sent, and the line waits in the input to be changed."""
        refusal = self.runtime.image_refusal() or (
            "/deepthink sends no images; switch it off (/deepthink off) to attach them."
            if self.deepthink else "")
        if not refusal:
            return True
        self.say(refusal, "error")
        self.asker.typed_ahead.put_first(line)
        return False

    async def run_cancellable(self, work: Awaitable[Any]) -> Any:
        """Run a turn (or /compact) so that Ctrl-C stops it, keeps what it collected and
        returns here; a turn's result gets the footer line."""
        from tether.engine.loop import TurnResult

        from .terminal_ui import keys_not_echoed

        started = time.monotonic()
        turns = self.runtime.loop
        turns.interrupted = None  # set again only if this work is a turn that Ctrl-C stops
        task = asyncio.ensure_future(work)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        self.ui.waiting()
        self.notifier.turn_started()
        result = None
        try:
            with keys_not_echoed(), self.queue.collecting():
                result = await task
        except asyncio.CancelledError:
            self.ui.settle()
            self.console.print(Text("Stopped.", style="notice"))
            unsent = self.queue.give_back()
            if unsent:
                self.say(f"{unsent} queued message(s) not sent: they wait in the input line.")
            result = turns.interrupted  # what it had done before Ctrl-C gets the footer too
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self.ui.settle()
            self.notifier.turn_ended()
        if isinstance(result, TurnResult):
            self.last_result = result
            if result.stop_reason == "end_turn" and not result.text.strip():
                self.console.print(Text(no_answer_note(len(result.evidence)), style="notice"))
            self.footer(result, time.monotonic() - started)
        await self.sessions.save()
        if being_cancelled():  # the app itself is ending (SIGTERM), not just this turn
            raise asyncio.CancelledError
        return result

    def footer(self, result: TurnResult, elapsed: float) -> None:
        out = result.usage.output_tokens
        streaming = self.ui.streaming_seconds
        rate = f" · {out / streaming:.0f} tok/s" if out and streaming > 0.05 else ""
        stop = "" if result.stop_reason == "end_turn" else f" · stopped: {result.stop_reason}"
        self.console.print(Text(
            f"{requests_made(result)} · {len(result.evidence)} tool call(s) · "
            f"{tokens_used(result)}{rate} · {elapsed:.1f}s{stop}", style="status"))

    # ------------------------------------------------------------ talking to the user

    def say(self, message: str, level: NoticeLevel = "info") -> None:
        """One line for the user; above the input line when it is on the screen (a message
        from the background: the runtime built, the history file failing as Enter stores a
        line), so that line is drawn again, whole, under it."""
        style = {"error": "tool.error", "warning": "notice"}.get(level, "status")
        self.print_above_input(lambda: self.console.print(shown(message, style)))

    def print_above_input(self, show: Callable[[], None]) -> None:
        print_above_input(show, self.prompt.app if "prompt" in vars(self) else None)

    def warn_anytime(self, message: str) -> None:
        self.say(message, "warning")

    async def ask_line(self, message: str, default: str = "", secret: bool = False,
                       fresh: bool = True) -> str:
        return await self.asker.line(message, default, secret, fresh)

    async def choose(self, choices: Choices) -> str | None:
        return await self.asker.choose(choices)

    async def confirm(self, question: str) -> bool:
        return await self.asker.confirm(question)

    @property
    def show_thinking(self) -> bool:
        return self.ui.show_thinking

    @show_thinking.setter
    def show_thinking(self, value: bool) -> None:
        self.ui.show_thinking = value

    def toolbar(self) -> FormattedText:
        return FormattedText([("class:bottom-toolbar", self.status_line())])

    def status_line(self) -> str:
        """Provider, model, tools, profile, context and modes: under the input line, and
        under the activity line while a turn runs. Until the runtime is built, what the
        settings say, and that it is starting (asking the provider what the model can do)."""
        if not self.built or (self.starting is not None and not self.starting.done()):
            modes = [name for name, on in (("auto", self.options.auto),
                                           ("deepthink", self.deepthink)) if on]
            parts = [f" {self.settings.provider} · {self.model_name}", STARTING]
            droppable: list[str] = []
        else:
            runtime = self.runtime
            modes = [name for name, on in (
                ("auto", runtime.auto), ("think", self.ui.show_thinking),
                ("deepthink", self.deepthink), ("plan", runtime.plan_gate.active),
            ) if on]
            parts = [f" {runtime.settings.provider} · {runtime.model}", f"{self.protocol} tools",
                     runtime.profile_shown(), self.context_used()]
            droppable = [parts[2], parts[1]]  # the least needed, when the terminal is narrow
        if modes:
            parts.append("modes: " + ", ".join(modes))
        return fit_parts(parts, self.console.width - 1, droppable)

    def context_used(self) -> str:
        """The input tokens of the latest request; before one was made in this run (a
        continued session) an estimate of the history, marked with ~."""
        from tether.runtime import estimated_tokens

        conv = self.sessions.conv
        used, about = conv.context_tokens, ""
        if not used and conv.messages:
            used, about = estimated_tokens(self.runtime, conv.messages), "~"
        window = self.runtime.context_window
        if not used:
            return "context empty"
        if window:
            return f"context {about}{used:,}/{window:,} ({100 * used // window}%)"
        return f"context {about}{used:,} tokens"


def themed_console(palette: Palette) -> Console:
    """The chat's console in `palette`'s colours (none: styles without colour)."""
    return Console(file=cast(TextIO, SafeTextStream()), theme=palette.styles, highlight=False,
                   no_color=not palette.colours)


def requests_made(result: TurnResult) -> str:
    """The finished requests, and the one a failure or Ctrl-C ended (its text may have
    arrived: a dropped stream is not "0 requests")."""
    made = f"{result.requests} request(s)"
    if result.stop_reason not in ("error", "cancelled"):
        return made
    return made + (" + 1 cut off" if result.text else " + 1 failed")


def tokens_used(result: TurnResult) -> str:
    usage = result.usage
    if not (usage.input_tokens or usage.output_tokens) and result.stop_reason != "end_turn":
        return "tokens not reported"  # the provider counts them at the end of a reply
    return f"{usage.input_tokens}→{usage.output_tokens} tokens"


def recent_exchanges(messages: list[Message], count: int) -> list[tuple[str, str]]:
    """The last `count` (request, answer) pairs: a user message with text (tool results are
    user messages too, without text) and the last text the assistant gave after it."""
    pairs: list[tuple[str, str]] = []
    for message in messages:
        if message.role == "user" and message.text.strip():
            pairs.append((message.text.strip(), ""))
        elif message.role == "assistant" and message.text.strip() and pairs:
            pairs[-1] = (pairs[-1][0], message.text.strip())
    return pairs[-count:]


def clipped_lines(text: str, lines: int, width: int) -> str:
    """At most `lines` lines of at most `width` characters, cut at a word, saying what was left out."""
    kept = [clip_words(line, width) for line in text.splitlines()[:lines]]
    more = len(text.splitlines()) - lines
    return "\n".join(kept) + (f"\n… ({more} more lines)" if more > 0 else "")


def being_cancelled() -> bool:
    """Whether the running task was asked to stop (Python 3.10 cannot tell: False)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling and cancelling())


async def run_app(settings: Settings, options: RunOptions, env: dict[str, str],
                  resume: str | None, continue_last: bool, deepthink: bool = False,
                  first_request: str = "") -> int:
    """Set up and run the app; raises UsageProblem when the flags or settings cannot start it.
    `resume` "" lists this folder's sessions to pick one; `first_request` is sent as the first
    message once the app is up."""
    from tether.store.session import SessionCorrupt

    palette = chosen_palette(settings.theme, env)
    app = App(settings, options, env, deepthink=deepthink, first_request=first_request,
              palette=palette, console=themed_console(palette),
              notifier=Notifier(settings.notify, settings.notify_after))
    try:
        if resume == "":
            resume = await app.picked_session()
        app.setup(resume, continue_last)
    except (LookupError, SessionCorrupt) as exc:  # -r: no such session, or an unreadable one
        app.say(str(exc), "error")
        return 2
    except ValueError as exc:  # an unknown provider, a bad --allow rule, ...
        raise UsageProblem(str(exc)) from None
    return await app.run()

