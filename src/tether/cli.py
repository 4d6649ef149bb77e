"""Command line: argument parsing, one-shot mode and the exit codes scripts rely on.

Exit codes: 0 answered; 1 error (provider unreachable, API error); 2 usage
error; 3 the step cap was reached; 4 --max-budget stopped the run; 130 interrupted; 128 + N ended by signal N
(SIGTERM, SIGHUP), after the same clean-up as Ctrl-C; 141 stdout's reader went away.

Heavy imports wait until they are needed so `tether --version` starts instantly.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__

if TYPE_CHECKING:
    from .core.conversation import Conversation
    from .core.ui_protocol import NoticeLevel
    from .engine.loop import TurnResult
    from .engine.run_options import RunOptions
    from .providers.prices import RunBudget
    from .runtime import Runtime
    from .store.config import Settings
    from .store.session import SessionRecord, SessionStore
    from .ui.headless import HeadlessUI

    Notice = Callable[[str, NoticeLevel], None]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_STEP_CAP, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_BUDGET = 4
"""--max-budget stopped the run: its estimated cost passed the limit."""

EXEC_COMMAND = "exec"
"""`tether exec REQUEST [flags]` is `tether -p REQUEST [flags]`, the habit other agents teach."""
HELP_COMMAND = "help"
"""`tether help TOPIC` prints a documentation page; `tether help` lists the topics."""
PICK_SESSION = ""
"""-r given without a session: the chat lists this folder's sessions to pick from."""

HELP_EPILOG = """\
commands:
  tether models [rm NAME]  the models --local has cached; remove one
  tether help [TOPIC]      print a page of the docs; alone: list the topics

Every flag: tether help headless. Every setting: tether help configuration."""


class OneLineHelp(argparse.RawDescriptionHelpFormatter):
    """`--help` with each flag on one line: an option's value is named once
    (`-r, --resume [SESSION]`, not after each spelling), and the help column leaves room."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=26)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        value = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{', '.join(action.option_strings)} {value}"


def build_parser() -> argparse.ArgumentParser:
    """The flags in groups, one line of help each; the docs pages hold the detail."""
    p = argparse.ArgumentParser(
        prog="tether", usage="tether [REQUEST] [-p PROMPT] [flags]  |  tether exec PROMPT [flags]",
        description="A terminal AI assistant that reads, writes and runs things on your machine.",
        epilog=HELP_EPILOG, formatter_class=OneLineHelp,
    )
    p.add_argument("request", nargs="?", metavar="REQUEST",
                   help="open the chat with REQUEST as its first message")
    run = p.add_argument_group("one request and exit (tether help headless)")
    run.add_argument("-p", "--print", dest="prompt", metavar="PROMPT",
                     help="answer PROMPT and exit; '-' reads it from stdin")
    run.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text",
                     metavar="FORMAT", help="text (default), json or stream-json")
    run.add_argument("--max-steps", type=positive_int, metavar="N",
                     help="tool round trips per request (default 20)")
    run.add_argument("--max-budget", type=positive_amount, metavar="USD",
                     help=f"stop once the estimated cost passes USD (exit {EXIT_BUDGET})")
    run.add_argument("--deepthink", action="store_true",
                     help="work as plan, check, implement, review, verify")
    model = p.add_argument_group("model (tether help providers)")
    model.add_argument("--provider", metavar="NAME",
                       help="ollama, openai, anthropic, gemini or local")
    model.add_argument("--model", metavar="NAME",
                       help="the model (with --local: cached name or ./x.gguf)")
    model.add_argument("--local", action="store_true",
                       help="a small GGUF model in this process")
    model.add_argument("--base-url", metavar="URL", help="the provider's API URL")
    model.add_argument("--protocol", choices=("auto", "native", "text"), metavar="NAME",
                       help="tool calls: auto (default), native or text")
    model.add_argument("--profile", choices=("auto", "small", "full"), metavar="NAME",
                       help="auto (by model size), small or full")
    safety = p.add_argument_group("permissions and safety (tether help safety)")
    safety.add_argument("--auto", action="store_true",
                        help="run every call no deny rule forbids")
    safety.add_argument("--allow", action="append", default=[], metavar="RULE",
                        help="allow calls matching RULE, e.g. 'run(pytest*)'")
    safety.add_argument("--deny", action="append", default=[], metavar="RULE",
                        help="refuse calls matching RULE, e.g. 'read(secrets/*)'")
    safety.add_argument("--sandbox", choices=("auto", "read-only", "workspace-write", "off"),
                        metavar="MODE", help="auto, read-only, workspace-write or off")
    safety.add_argument("--allow-unsandboxed", action="store_true",
                        help="allow rules may run commands unsandboxed")
    safety.add_argument("--trust", action="store_true",
                        help="trust this folder's own configuration")
    safety.add_argument("-C", dest="directory", metavar="DIR",
                        help="project root (default: current directory)")
    safety.add_argument("--undo", action="store_true",
                        help="put back the newest change, then exit")
    mcp = p.add_argument_group("MCP servers (tether help mcp)")
    mcp.add_argument("--mcp-config", action="append", default=[], metavar="FILE",
                     help="servers for this run, .mcp.json format")
    mcp.add_argument("--mcp-approve", action="append", default=[], metavar="NAME",
                     help="start the project's server NAME unasked")
    sessions = p.add_argument_group("sessions (tether help chat)")
    sessions.add_argument("-c", "--continue", dest="continue_last", action="store_true",
                          help="continue this folder's latest session")
    sessions.add_argument("-r", "--resume", metavar="SESSION", nargs="?", const=PICK_SESSION,
                          help="continue a session by title or id; alone: pick")
    p.add_argument("--version", action="version", version=f"tether {__version__}")
    return p


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def positive_amount(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an amount in US dollars, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be an amount above 0")
    return value


def skip_httpx_command_line() -> None:
    """httpx's package imports its own command-line client whenever click, rich and pygments
    are installed (about forty modules, a tenth of the chat's imports before it is ready), and
    tether never runs it: marked missing, httpx puts a stub in its place."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # the fast path: nothing else imported
        print(f"tether {__version__}")
        return EXIT_OK
    skip_httpx_command_line()
    if argv[:1] == ["models"]:
        return models_command(argv[1:], dict(os.environ))
    if argv[:1] == [HELP_COMMAND]:
        return help_command(argv[1:])
    executing = bool(argv) and argv[0] == EXEC_COMMAND
    try:
        args = build_parser().parse_args(argv[1:] if executing else argv)
    except SystemExit as exc:  # argparse: --help exits 0, a usage error 2
        return int(exc.code or 0)
    if args.undo:
        return undo_last_change(args)
    problem = place_request(args, executing)
    if problem:
        return usage_error(problem)
    if args.prompt is None and stdin_is_terminal():
        if args.max_budget is not None:  # the chat shows /cost instead; nothing would stop it
            return usage_error("--max-budget works with -p (or exec) only; in the chat, /cost "
                               "shows what the session has cost")
        return interactive(args)
    if args.prompt is None:  # `echo "explain x" | tether`: the chat needs a terminal to read from
        args.prompt, args.piped = "-", True
    import asyncio

    collect_after_start()
    try:
        stopper = RunStopper()
        return asyncio.run(until_terminated(one_shot(args, dict(os.environ), stopper), stopper))
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        return EXIT_INTERRUPTED


def place_request(args: argparse.Namespace, executing: bool) -> str:
    """Where the positional REQUEST goes: with `exec` it is the one-shot prompt (stdin when
    none is given and stdin is not a terminal), otherwise the chat's first message. The
    usage problem, or ""."""
    request = args.request
    if request is not None and args.prompt is not None:
        return "give the request once: as -p PROMPT or as the REQUEST argument, not both"
    if executing and args.prompt is None:
        if request is None and stdin_is_terminal():
            return ('exec needs a request, e.g. tether exec "fix the failing test" '
                    "(or - to read it from stdin)")
        args.prompt, args.request = ("-" if request is None else request), None
    elif request is not None and not stdin_is_terminal():
        return ("stdin is not a terminal, so there is no chat to open with the request: "
                f'use tether exec "{request}" (or -p) to answer it and exit')
    return ""


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # closed
        return False


PIPED_NOTE = ("stdin is not a terminal, so there is no chat: the piped text is one request, "
              "as with `tether -p -`")


def interactive(args: argparse.Namespace) -> int:
    import asyncio

    collect_after_start()
    try:
        return asyncio.run(until_terminated(start_app(args, dict(os.environ))))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last resort: one line, never a traceback
        detail = one_line_of(exc)
        write_stderr(f"tether: stopped by an unexpected {type(exc).__name__}"
                     + (f": {detail}" if detail else "") + "\n")
        return EXIT_ERROR


def collect_after_start() -> None:
    """What a start makes (modules, classes, functions, the tool table) lives as long as the
    process, so the collector's passes over it while it is being made free nothing and cost
    about a tenth of the chat's CPU to ready. Automatic collection waits until the runtime has
    started: `resume_collection` then sets what the start made aside and turns it back on."""
    gc.disable()


def one_line_of(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def write_stderr(text: str) -> None:
    from .host import write_safely

    write_safely(sys.stderr, text)


TERMINATING_SIGNALS = ("SIGTERM", "SIGHUP")


EXIT_OUTPUT_CLOSED = 128 + 13
"""What a shell reports for a program SIGPIPE ended: stdout's reader went away."""


class RunStopper:
    """Ends a run from outside it (a signal, the reader of its output going away) the way
    Ctrl-C does, and keeps the exit code the first reason gives."""

    def __init__(self) -> None:
        self.code: int | None = None
        self._cancel: Callable[[], object] | None = None

    def attach(self, cancel: Callable[[], object]) -> None:
        self._cancel = cancel

    def stop(self, code: int) -> None:
        if self.code is None and self._cancel is not None:  # a second reason must not
            self.code = code                                 # cut the clean-up short
            self._cancel()


async def until_terminated(work: Coroutine[Any, Any, int], stopper: RunStopper | None = None) -> int:
    """Run `work`; SIGTERM or SIGHUP (or `stopper`) cancels it, so it ends the way Ctrl-C
    ends a run: the commands it started are stopped and what was done is kept. Then 128 +
    the signal (or the stopper's code)."""
    import asyncio
    import signal

    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    stopper = stopper or RunStopper()
    stopper.attach(lambda: loop.call_soon_threadsafe(task.cancel))
    installed = []
    for name in TERMINATING_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:  # not on this platform
            continue
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stopper.stop, 128 + signum)
            installed.append(signum)
    try:
        code = await task
    except asyncio.CancelledError:
        if stopper.code is None:
            raise
        code = 0
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
    return stopper.code if stopper.code is not None else code


async def start_app(args: argparse.Namespace, env: dict[str, str]) -> int:
    from .ui.terminal.app import UsageProblem, run_app

    prepared = prepare(args, env)
    if isinstance(prepared, int):
        return prepared
    settings, options, warnings = prepared
    for warning in warnings:
        write_stderr(f"warning: {warning}\n")
    try:
        return await run_app(settings, options, env, args.resume, args.continue_last, args.deepthink,
                             first_request=args.request or "")
    except UsageProblem as exc:  # only set-up problems: a ValueError later is no usage error
        return usage_error(str(exc))


def prepare(args: argparse.Namespace, env: dict[str, str]) -> tuple[Settings, RunOptions, list[str]] | int:
    """Settings and run options from flags, environment and files; an int is a usage error's exit code."""
    from .engine.run_options import RunOptions
    from .providers import provider_names
    from .store.config import load_settings, tether_home

    root = Path(args.directory or os.getcwd()).expanduser().resolve()
    if not root.is_dir():
        return usage_error(f"-C: {root} is not a directory")
    if args.provider is not None and args.provider not in provider_names():
        return usage_error(f"unknown provider {args.provider!r}; known providers: "
                           + ", ".join(provider_names()))
    local = getattr(args, "local", False)
    if local and args.provider not in (None, "local"):
        return usage_error(f"--local runs the model in this process; it cannot go with "
                           f"--provider {args.provider}")
    if local:
        args.provider = "local"
    home = tether_home(env)
    remembered, problem = remembered_connection(home, args.provider or env.get("TETHER_PROVIDER"))
    settings, warnings = load_settings(setting_flags(args), env, home, remembered,
                                       providers=provider_names())
    if problem:
        warnings.append(f"{problem}; the last connection chosen with /connect is not used")
    try:
        settings = with_base_url(settings, args.base_url)
    except ValueError as exc:
        return usage_error(str(exc))
    options = RunOptions(root=root, home=home, auto=args.auto, allow=args.allow, deny=args.deny,
                         trusted=args.trust or trusted_before(home, root),
                         mcp_config=[Path(f).expanduser().resolve() for f in args.mcp_config],
                         mcp_approve=args.mcp_approve)
    return settings, options, warnings


async def nothing_to_talk_to(settings: Settings, env: dict[str, str]) -> str:
    """With nothing configured and no Ollama running, the one line that says what was found
    and names --local and /connect; "" when there is something to talk to."""
    from .providers.first_run import one_shot_error, survey, unconfigured

    if not unconfigured(settings):
        return ""
    findings = await survey(settings, env)
    return "" if findings.ollama_running else one_shot_error(findings)


def models_command(argv: list[str], env: dict[str, str]) -> int:
    """`tether models`: the cached models (size, where from); `tether models rm NAME`."""
    from .store.models import cached_models, format_size, models_dir, remove_model

    folder = models_dir(env)
    if not argv:
        models = cached_models(folder)
        if not models:
            sys.stdout.write(f"no models cached in {folder}\n")
        for model in models:
            sys.stdout.write(f"{model.name}  {format_size(model.size)}  from {model.source}\n")
        return EXIT_OK
    if len(argv) == 2 and argv[0] == "rm":
        try:
            removed = remove_model(folder, argv[1])
        except LookupError as exc:
            return usage_error(f"models rm: {one_line_of(exc)}")
        except OSError as exc:
            write_stderr(f"tether: models rm: {exc.strerror or exc}\n")
            return EXIT_ERROR
        sys.stdout.write(f"removed {removed}\n")
        return EXIT_OK
    return usage_error("usage: tether models [rm NAME]")


def help_command(argv: list[str]) -> int:
    """`tether help [TOPIC]`: the page of the docs TOPIC names, or the topics."""
    from .ui.docs_pages import find_topic, page_text, topics_listing

    if len(argv) > 1:
        return usage_error("usage: tether help [TOPIC]")
    topic = find_topic(argv[0]) if argv else None
    if topic is None:
        if argv:
            write_stderr(f"tether: no help topic {argv[0]!r}\n")
        write_stdout_quietly(topics_listing() + "\n")
        return EXIT_USAGE if argv else EXIT_OK
    return write_stdout_quietly(page_text(topic))


def write_stdout_quietly(text: str) -> int:
    """Write to stdout; a reader that went away (`tether help x | head`) ends it quietly
    with the code a program ended by SIGPIPE has."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        from .host import discard_output

        discard_output(sys.stdout)  # nor may the interpreter's final flush fail
        return EXIT_OUTPUT_CLOSED
    return EXIT_OK


def trusted_before(home: Path, root: Path) -> bool:
    """The folder was trusted in the chat (remembered in TETHER_HOME/trusted.json): a one-shot
    run honours that decision as the chat does, so it needs no --trust there."""
    from .safety.trusted_folders import TrustStore

    return TrustStore(home).is_trusted(root)


def undo_last_change(args: argparse.Namespace) -> int:
    from .store.config import tether_home
    from .store.git_ops import GitOps

    root = Path(args.directory or os.getcwd()).expanduser().resolve()
    if not root.is_dir():
        return usage_error(f"-C: {root} is not a directory")
    outcome = GitOps(root, tether_home()).undo()
    (sys.stdout if outcome.ok else sys.stderr).write(outcome.message.rstrip() + "\n")
    return EXIT_OK if outcome.ok else EXIT_ERROR


def usage_error(message: str) -> int:
    write_stderr(f"tether: {message}\n")
    return EXIT_USAGE


def read_prompt(value: str) -> tuple[str, int]:
    """The prompt as text, and how many of its characters were not valid UTF-8. Such
    bytes (a terminal or file in another encoding, an argument the locale could not
    decode) are kept as \\xNN escapes instead of failing the read."""
    from .host import clean_text, count_bad_chars

    if value != "-":
        raw = value
    elif hasattr(sys.stdin, "buffer"):
        raw = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    else:
        raw = sys.stdin.read()
    return clean_text(raw), count_bad_chars(raw)


def setting_flags(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "provider": args.provider,
        "model": args.model,
        "max_steps": args.max_steps,
        "protocol": args.protocol,
        "profile": args.profile,
        "sandbox": args.sandbox,
        "sandbox_escalation": True if args.allow_unsandboxed else None,
    }


def remembered_connection(home: Path, chosen: str | None) -> tuple[dict[str, str], str]:
    """The provider, model and base URL chosen with /connect last time, unless another
    provider is asked for; and why the file that holds them cannot be read ("" when it can).
    The environment and flags sit above this layer, so OPENAI_BASE_URL still wins."""
    from .providers import BASE_URL_SETTINGS
    from .store.keys import ConnectionStore

    store = ConnectionStore(home)
    last = store.last()
    if not last or (chosen and chosen != last.provider):
        return {}, store.problem
    layer = {"provider": last.provider, "model": last.model}
    url_setting = BASE_URL_SETTINGS.get(last.provider)
    if last.base_url and url_setting:
        layer[url_setting] = last.base_url
    return layer, ""


def with_base_url(settings: Settings, base_url: str | None) -> Settings:
    """--base-url sets the URL of whichever provider is chosen; ValueError (a usage
    error) for a URL no request could use, an empty one included."""
    if base_url is None:
        return settings
    from .providers import BASE_URL_SETTINGS
    from .store.config import check_base_url

    url = base_url.strip().rstrip("/")
    try:
        check_base_url(url)
    except ValueError as exc:
        raise ValueError(f"--base-url {base_url!r}: {exc}") from None
    key = BASE_URL_SETTINGS.get(settings.provider)
    if key is None:
        raise ValueError(f"--base-url is not supported for provider {settings.provider!r}")
    return settings.with_changes(**{key: url})


async def one_shot(
    args: argparse.Namespace, env: dict[str, str], stopper: RunStopper | None = None
) -> int:
    from .store.session import SessionCorrupt
    from .ui.headless import HeadlessUI

    piped = getattr(args, "piped", False)
    prepared = prepare(args, env)  # a flag's problem first: it is the same whatever the prompt
    if isinstance(prepared, int):
        return prepared
    settings, options, warnings = prepared
    prompt, bad_chars = read_prompt(args.prompt)
    prompt = prompt.strip()
    if not prompt:
        return usage_error("stdin is not a terminal and held no request: run `tether` in a "
                           "terminal for the chat, or give one with -p" if piped
                           else "the prompt is empty")
    if piped and prompt.startswith("/"):
        return usage_error(f"{prompt.split()[0]}: slash commands work in the chat only, and the "
                           "chat needs stdin to be a terminal")
    if bad_chars:
        warnings.append(f"the prompt held {bad_chars} byte(s) that are not UTF-8; "
                        "they are sent as \\xNN escapes")
    closed = (lambda: stopper.stop(EXIT_OUTPUT_CLOSED)) if stopper is not None else None
    ui = HeadlessUI(args.output_format, auto=args.auto, on_output_closed=closed)
    try:
        session = OneShotSession.opened(args, options.home, options.root, ui.notice)
    except (LookupError, SessionCorrupt) as exc:
        if args.resume == PICK_SESSION:  # the list of sessions to choose from, a line each
            return usage_error(str(exc))
        return usage_error(f"-r: {one_line_of(exc)}" if args.resume else one_line_of(exc))
    budget: RunBudget | None = None
    if args.max_budget is not None:
        kept = run_budget(settings, args.max_budget, stopper)
        if isinstance(kept, str):
            return usage_error(kept)
        budget = kept
    ui.session_id = session.id
    if piped:
        ui.notice(PIPED_NOTE)
    for warning in warnings:
        ui.notice(warning, "warning")
    routed = await local_route(settings, ui, session, env)
    if isinstance(routed, int):
        return routed
    return await run_one_shot(routed, options, ui, env, prompt, args.deepthink, session, budget)


async def local_route(settings: Settings, ui: HeadlessUI, session: OneShotSession,
                      env: dict[str, str]) -> Settings | int:
    """--local without the local extra and with Ollama running: the settings that run the
    model there (pulled or imported first only when ollama_pull allows it: nothing is asked in -p). An
    int is the exit code of a run that ended here, its result written."""
    import asyncio

    from .providers.first_run import NotPulled, local_through_ollama
    from .store.file_digests import digests_file

    started = time.monotonic()
    try:
        return await local_through_ollama(settings, ui.notice, digests=digests_file(env))
    except NotPulled as exc:
        ui.notice(str(exc), "error")
        ui.result(failed_result(session.conversation(), started, str(exc)))
        return EXIT_ERROR
    except asyncio.CancelledError:  # Ctrl-C stopped the pull
        ui.result(interrupted_result(session.conversation(), started))
        return EXIT_INTERRUPTED


def run_budget(settings: Settings, limit: float, stopper: RunStopper | None) -> RunBudget | str:
    """The run's budget, or why --max-budget cannot be kept (no price is known for the
    model: the flag is refused rather than silently ignored)."""
    from .providers import default_model
    from .providers.prices import HOSTED, RunBudget, price_of

    model = settings.model or default_model(settings.provider)
    price = price_of(settings.provider, model)
    if price is None:
        where = ("no price is kept for its models" if settings.provider not in HOSTED
                 else "the price table does not know this model")
        return (f"--max-budget: the cost of {settings.provider} model {model!r} cannot be "
                f"estimated ({where}); leave the flag out or pick a priced model")
    stop = (lambda: stopper.stop(EXIT_BUDGET)) if stopper is not None else (lambda: None)
    return RunBudget(limit, price, model, stop)


async def run_one_shot(
    settings: Settings, options: RunOptions, ui: HeadlessUI, env: dict[str, str], prompt: str,
    deepthink: bool = False, session: OneShotSession | None = None, budget: RunBudget | None = None,
) -> int:
    """One request, its result written in the UI's format; with a session (every run from the
    command line has one: new, or -c, -r) the exchange continues that conversation and is
    saved to it, however the run ends."""
    from .core.conversation import Conversation

    started = time.monotonic()
    conv = session.conversation() if session is not None else Conversation()
    try:
        return await run_on(conv, settings, options, ui, env, prompt, deepthink, started, budget)
    finally:
        if session is not None:
            session.save(conv, settings)


async def run_on(
    conv: Conversation, settings: Settings, options: RunOptions, ui: HeadlessUI,
    env: dict[str, str], prompt: str, deepthink: bool, started: float,
    budget: RunBudget | None = None,
) -> int:
    import asyncio

    from .runtime import build_runtime, resume_collection, session_started

    try:
        runtime = build_runtime(settings, options, ui, env)
    except ValueError as exc:
        return usage_error(str(exc))
    except Exception as exc:
        return unexpected_failure(ui, exc, conv, started)
    for warning in runtime.warnings:
        ui.notice(warning, "warning")
    runtime.resume_skills(conv)
    if budget is not None:
        runtime.loop.on_usage = budget.count
    try:
        nothing = await nothing_to_talk_to(settings, env)
        if nothing:  # nothing is asked in -p: one line naming the choices
            ui.notice(nothing, "error")
            ui.result(failed_result(conv, started, nothing))
            return EXIT_ERROR
        ui.record.watch(runtime.git)
        ui.record.agents = runtime.subagents.runs if runtime.subagents is not None else ()
        mode = await runtime.start()
        resume_collection()
        ui.init(run_info(runtime, options.root, mode))
        await session_started(runtime, "startup")
        try:
            result = await run_request(runtime, conv, prompt, deepthink)
        except asyncio.CancelledError:
            if budget is not None and budget.passed:
                ui.notice(budget.message(), "error")
                ui.result(failed_result(conv, started, budget.message()))
                return EXIT_BUDGET
            ui.result(interrupted_result(conv, started))
            return EXIT_INTERRUPTED
        ui.result({**result_object(result, started), "profile": runtime.profile.name,
                   "skills_loaded": runtime.skills.loaded if runtime.skills else [],
                   **mcp_info(runtime), **agents_info(runtime)})
        return exit_code(result.stop_reason)
    except Exception as exc:
        return unexpected_failure(ui, exc, conv, started)
    finally:
        await runtime.aclose()


class OneShotSession:
    """The saved session of a one-shot run (a new one, or the one -c or -r continues): read
    before the request, written after it, so a script can carry a conversation across runs."""

    def __init__(self, store: SessionStore, record: SessionRecord) -> None:
        self.store = store
        self.record = record

    @classmethod
    def opened(cls, args: argparse.Namespace, home: Path, root: Path,
               notice: Notice) -> OneShotSession:
        """Every run is saved, so a later -c continues it: -r finds the session by title or
        id (LookupError, SessionCorrupt; a -r without one cannot be picked here), -c takes
        the folder's latest, and otherwise (or when there is none) a new one is started."""
        from .store.session import SessionStore, continued_record

        store = SessionStore(home)
        if args.resume == PICK_SESSION:
            raise LookupError(no_picker_here(store, root))
        record = continued_record(store, root, lambda text: notice(text, "warning"),
                                  args.resume, continue_last=args.continue_last)
        return cls(store, record if record is not None else store.new(root, "", ""))

    @property
    def id(self) -> str:
        return self.record.id

    def conversation(self) -> Conversation:
        return self.record.to_conversation()

    def save(self, conv: Conversation, settings: Settings) -> None:
        """Write the conversation back (after the result: a failure goes to stderr)."""
        from .providers import provider_class
        from .store.session import SessionCorrupt

        self.record.update_from(conv)
        self.record.provider = settings.provider
        self.record.model = settings.model or getattr(provider_class(settings.provider),
                                                      "default_model", self.record.model)
        if not self.record.messages:
            return
        try:
            self.store.save(self.record)
        except (SessionCorrupt, OSError) as exc:  # stderr: the result stays the output's last line
            write_stderr(f"error: session not saved: {one_line_of(exc)}\n")


SESSIONS_LISTED = 10
"""Sessions a -r without a session lists when no picker can be shown."""


def no_picker_here(store: SessionStore, root: Path) -> str:
    """Why a -r without a session cannot be answered without a terminal chat, with the ids
    of this folder's newest sessions to pass instead."""
    found = [s for s in store.list(root) if s.corrupt is None]
    if not found:
        return ("-r needs a session id or title here, and this folder has no saved session "
                "(tether -c continues the newest one)")
    lines = [f"  {s.id}  {s.title or s.first_request or '(untitled)'}" for s in found[:SESSIONS_LISTED]]
    more = [f"  ... and {len(found) - SESSIONS_LISTED} more"] if len(found) > SESSIONS_LISTED else []
    return ("-r without a session opens a picker only in the chat on a terminal; pass one, "
            "e.g. tether -r ID -p ..., or -c for the newest. This folder's sessions:\n"
            + "\n".join([*lines, *more]))


def unexpected_failure(ui: HeadlessUI, exc: Exception, conv: Conversation, started: float) -> int:
    """The last resort: one line, never a traceback, and the output still ends with a result."""
    message = f"stopped by an unexpected {type(exc).__name__}: {one_line_of(exc)}"
    ui.notice(message, "error")
    ui.result(failed_result(conv, started, message))
    return EXIT_ERROR


async def run_request(runtime: Runtime, conv: Conversation, prompt: str, deepthink: bool) -> TurnResult:
    runtime.new_request(prompt)
    if not deepthink:
        return await runtime.loop.run_turn(conv, prompt)
    from .engine.deepthink import Deepthink, deepthink_turn

    chain = Deepthink(runtime.loop, runtime.git, runtime.loop.ui, runtime.plan_gate)
    return await deepthink_turn(chain, conv, prompt)


def run_info(runtime: Runtime, root: Path, mode: str) -> dict[str, Any]:
    return {
        "tether_version": __version__,
        "provider": runtime.settings.provider,
        "model": runtime.loop.settings.model,
        "protocol": mode,
        "profile": runtime.profile.name,
        "profile_reason": runtime.profile_reason,
        "model_table": runtime.model_match.shown() if runtime.model_match else None,
        "levers": runtime.profile.levers(),
        "cwd": str(root),
        "tools": [t.name for t in runtime.loop.offered()],
        "max_steps": runtime.loop.settings.max_steps,
        "instructions": [str(p) for p in runtime.instructions.paths],
        "skills": runtime.skills.catalog.names() if runtime.skills else [],
        "mcp_servers": mcp_info(runtime).get("mcp_servers", []),
    }


def agents_info(runtime: Runtime) -> dict[str, Any]:
    """The sub-agents the request ran, for the json result (nothing when none ran)."""
    runner = runtime.subagents
    return {"subagents": [run.as_dict() for run in runner.runs]} if runner and runner.runs else {}


def mcp_info(runtime: Runtime) -> dict[str, Any]:
    """The MCP servers and their state, for the json outputs (nothing when none is declared)."""
    if runtime.mcp is None or not runtime.mcp.manager.servers:
        return {}
    return {"mcp_servers": runtime.mcp.manager.statuses()}


def result_object(result: Any, started: float) -> dict[str, Any]:
    obj = {
        "type": "result",
        "is_error": result.stop_reason in ("error", "blocked"),
        "result": result.error if result.stop_reason in ("error", "blocked") else result.text,
        "stop_reason": result.stop_reason,
        "num_turns": result.requests,
        "duration_ms": round((time.monotonic() - started) * 1000),
        "usage": result.usage.as_dict(),
        "tool_calls": [e.as_dict() for e in result.evidence],
        "checks": list(getattr(result, "checks", [])),
    }
    if result.stop_reason == "error" and result.text:
        obj["partial_result"] = result.text  # what arrived before the failure
    return obj


def interrupted_result(conv: Any, started: float) -> dict[str, Any]:
    return failed_result(conv, started, "interrupted", "cancelled")


def failed_result(conv: Any, started: float, message: str, stop_reason: str = "error") -> dict[str, Any]:
    """The result object of a run that ended without a TurnResult."""
    return {
        "type": "result",
        "is_error": True,
        "result": message,
        "stop_reason": stop_reason,
        "num_turns": conv.requests,
        "duration_ms": round((time.monotonic() - started) * 1000),
        "usage": conv.usage.as_dict(),
        "tool_calls": [e.as_dict() for e in conv.evidence],
    }


def exit_code(stop_reason: str) -> int:
    return {"error": EXIT_ERROR, "blocked": EXIT_ERROR, "max_steps": EXIT_STEP_CAP}.get(
        stop_reason, EXIT_OK)
