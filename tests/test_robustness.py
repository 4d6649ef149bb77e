"""A broken home folder, a bad setting or a failing command gives one clear line, never a
traceback: the interactive app (in a pseudo-terminal) and `tether -p` (in a subprocess),
against the local fake provider server."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO, cast

import pytest
from fakeserver import FakeServer, Reply
from leftovers import BACKGROUND_FORMS, WAIT, gone, pid_written, until_gone
from ptyapp import PtyApp, app_env, openai_args


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        fake.default_reply = Reply(text="Fine.")
        yield fake


def started(server: FakeServer, project: Path, home: Path, *extra: str) -> PtyApp:
    app = PtyApp(openai_args(server.url, *extra), cwd=project, env=app_env(home))
    try:
        app.wait_for_prompt()
    except BaseException:
        app.close()
        raise
    return app


def flat(text: str) -> str:
    """The text with the terminal's line wrapping undone (rich wraps at spaces)."""
    return " ".join(text.split())


def leave(app: PtyApp) -> str:
    """Exit with Ctrl-D; the whole session's text, unwrapped, checked for a traceback and
    a clean exit."""
    app.ctrl_d()
    assert app.wait_exit() == 0, app.text()
    text = flat(app.text())
    assert "Traceback" not in text, text
    return text


def run_cli(args: list[str], cwd: Path, home: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("OPENAI", "OLLAMA", "TETHER", "ANTHROPIC", "GEMINI"))
    }
    # the fake server is local, so auto would pick the small profile (its nudges ask again)
    environment.update({"TETHER_HOME": str(home), "TETHER_PROFILE": "full", **env})
    return subprocess.run(
        [sys.executable, "-m", "tether", *args],
        cwd=cwd, env=environment, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )


# ---------------------------------------------------------------- input history


def test_home_that_is_a_file_starts_with_history_in_memory(
    server: FakeServer, project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home-file"
    home.write_text("not a folder\n")
    with started(server, project, home) as app:
        app.line("hello")
        app.wait_for_text("Fine.")
        app.wait_for_prompt()
        text = leave(app)
    assert text.count("kept in memory only") == 1
    assert f"{home} cannot be created (a file is in the way)" in text
    assert home.read_text() == "not a folder\n"


def test_history_that_cannot_be_written_warns_once_and_the_app_goes_on(
    server: FakeServer, project: Path, home: Path
) -> None:
    (home / "history").mkdir(parents=True)  # neither readable nor writable as a file
    with started(server, project, home) as app:
        for request in ("one", "two"):
            app.line(request)
            app.wait_for_text("Fine.")
            app.wait_for_prompt()
        app.line("/usage")
        app.wait_for_output("input ")
        app.wait_for_prompt()
        text = leave(app)
    assert text.count("cannot be used") == 1


def test_safe_history_reports_a_failed_store_once(tmp_path: Path) -> None:
    from tether.ui.terminal.prompt import SafeFileHistory, open_history

    warnings: list[str] = []
    path = tmp_path / "history"
    history = open_history(path, warnings.append)
    assert isinstance(history, SafeFileHistory)
    assert list(history.load_history_strings()) == []
    path.mkdir()  # the file becomes unwritable after start-up
    history.append_string("first")
    history.append_string("second")
    assert len(warnings) == 1 and "kept in memory only" in warnings[0]
    assert history.get_strings() == ["first", "second"]


# ---------------------------------------------------------------- the sessions folder


SESSIONS_UNREADABLE = "sessions folder"


def sessions_is_a_file(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    (home / "sessions").write_text("not a folder\n")
    return home / "sessions"


def test_store_reports_a_sessions_path_that_is_not_a_folder(home: Path, project: Path) -> None:
    from tether.store.session import SessionCorrupt, SessionStore

    sessions_is_a_file(home)
    store = SessionStore(home)
    for call in (lambda: store.list(project), lambda: store.latest(project),
                 lambda: store.load("anything", project)):
        with pytest.raises(SessionCorrupt, match="cannot be read .Not a directory."):
            call()


@pytest.mark.parametrize("flag", [["-c"], ["-r", "anything"]])
def test_continue_and_resume_report_an_unusable_sessions_folder(
    server: FakeServer, project: Path, home: Path, flag: list[str]
) -> None:
    path = sessions_is_a_file(home)
    with PtyApp(openai_args(server.url, *flag), cwd=project, env=app_env(home)) as app:
        assert app.wait_exit() == 2
        text = flat(app.text())
    assert "Traceback" not in text, text
    assert f"The {SESSIONS_UNREADABLE} {path} cannot be read (Not a directory)" in text


def test_sessions_and_load_report_an_unusable_sessions_folder(
    server: FakeServer, project: Path, home: Path
) -> None:
    path = sessions_is_a_file(home)
    with started(server, project, home) as app:
        for command in ("/sessions", "/load anything"):
            app.line(command)
            app.wait_for_prompt()
        text = leave(app)
    assert text.count(f"The {SESSIONS_UNREADABLE} {path} cannot be read") == 2


# ---------------------------------------------------------------- trust


def trust_cannot_be_saved(home: Path) -> None:
    (home / "trusted.json").mkdir(parents=True)  # a folder where the file should be written


def project_rules(project: Path) -> None:
    (project / ".permissions.json").write_text('{"allow": ["run_cmd(ls)"]}\n')


def test_trust_that_cannot_be_saved_still_applies_for_the_session(
    server: FakeServer, project: Path, home: Path
) -> None:
    trust_cannot_be_saved(home)
    project_rules(project)
    with PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_cursor_on("[y/N]")
        app.line("y")
        app.wait_for_prompt()
        app.line("/perms")
        app.wait_for_text("run_cmd(ls)")
        app.wait_for_prompt()
        text = leave(app)
    assert f"Could not save the trust: {home / 'trusted.json'} is a directory, not a file" in text
    assert "Trusted for this session only" in text


def test_a_corrupt_trust_file_is_kept_when_the_user_says_yes(
    server: FakeServer, project: Path, home: Path
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    truncated = b'["/somewhere/trusted/before", "/and/anoth'
    (home / "trusted.json").write_bytes(truncated)
    project_rules(project)
    with PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_cursor_on("[y/N]")
        app.line("y")
        app.wait_for_prompt()
        text = leave(app)
    assert (home / "trusted.json").read_bytes() == truncated
    assert f"Could not save the trust: {home / 'trusted.json'} is not valid JSON" in text
    assert "kept as it is" in text and "Trusted for this session only" in text


def test_always_allowed_rule_is_kept_when_the_trust_cannot_be_saved(
    server: FakeServer, project: Path, home: Path
) -> None:
    trust_cannot_be_saved(home)
    server.add(
        Reply(tool_calls=[("write_file", {"filepath": "a.md", "content": "hello\n"})]),
        Reply(text="Wrote it."),
    )
    with started(server, project, home) as app:
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        app.send("a")
        app.wait_for_text("Wrote it.")
        app.wait_for_prompt()
        text = leave(app)
    assert (project / "a.md").read_text() == "hello\n"
    assert "write_file(a.md)" in (project / ".permissions.json").read_text()
    assert "Could not save the trust" in text


# ---------------------------------------------------------------- slash commands and the session


def test_a_slash_command_hitting_an_unusable_file_says_so_and_the_app_goes_on(
    server: FakeServer, project: Path, home: Path
) -> None:
    (home / "connection.json").mkdir(parents=True)  # /connect remembers its choice here
    with started(server, project, home) as app:
        app.line("/connect openai other-model")
        app.wait_for_text("not remembered")
        app.wait_for_prompt()
        app.line("/usage")
        app.wait_for_output("input ")
        app.wait_for_prompt()
        text = leave(app)
    assert "Connected: openai · other-model" in text
    assert ("This connection is not remembered for next time: "
            f"{home / 'connection.json'} is a directory, not a file") in text


class Boom(Exception):
    pass


@pytest.fixture
def failing_commands() -> Iterator[None]:
    from tether.ui.terminal.slash.handlers import COMMANDS

    async def boom(app: object, arg: str) -> None:
        raise Boom(f"bad {arg}\nsecond line")

    async def disk(app: object, arg: str) -> None:
        raise PermissionError(13, "Permission denied", "/some/file")

    COMMANDS.command("boom", "/boom", "fails")(boom)
    COMMANDS.command("disk", "/disk", "fails")(disk)
    yield
    for name in ("boom", "disk"):
        COMMANDS._commands.pop(name)


async def test_any_failure_in_a_slash_command_is_one_line(
    failing_commands: None, project: Path, home: Path
) -> None:
    import io

    from rich.console import Console

    from tether.runtime import RunOptions
    from tether.store.config import Settings
    from tether.ui.terminal.app import App

    out = io.StringIO()
    app = App(Settings(), RunOptions(root=project, home=home), {},
              console=Console(file=out, width=200, color_system=None))
    await app.handle("/boom thing")
    await app.handle("/disk")
    assert out.getvalue().splitlines() == [
        "/boom failed with Boom: bad thing second line",
        "/disk could not finish: Permission denied: /some/file",
    ]


def test_a_bad_flag_is_still_a_usage_error_interactively(project: Path, home: Path) -> None:
    with PtyApp(["--provider", "nosuch"], cwd=project, env=app_env(home)) as app:
        assert app.wait_exit() == 2
        text = app.text()
    assert text.startswith("tether: unknown provider 'nosuch'"), text


def test_a_value_error_during_the_session_is_no_usage_error(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tether.cli import EXIT_ERROR, build_parser, interactive
    from tether.ui.terminal import app as app_module

    async def buggy(*args: object, **kwargs: object) -> int:
        raise ValueError("a bug, not the user's flags")

    monkeypatch.setattr(app_module, "run_app", buggy)
    monkeypatch.setenv("TETHER_HOME", str(home))
    monkeypatch.chdir(project)
    assert interactive(build_parser().parse_args([])) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err == "tether: stopped by an unexpected ValueError: a bug, not the user's flags\n"


# ---------------------------------------------------------------- the trust question


@pytest.mark.parametrize("key", ["ctrl_d", "ctrl_c"])
def test_ctrl_d_or_ctrl_c_at_the_trust_question_means_no(
    server: FakeServer, project: Path, home: Path, key: str
) -> None:
    project_rules(project)
    with PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_cursor_on("[y/N]")
        getattr(app, key)()
        app.wait_for_prompt()
        app.line("/perms")
        app.wait_for_text("No rules")
        app.wait_for_prompt()
        text = leave(app)
    assert "Not trusted: its allow rules" in text
    assert not (home / "trusted.json").exists()


async def test_the_runtime_is_closed_however_the_start_ends(project: Path, home: Path) -> None:
    from tether.runtime import RunOptions
    from tether.store.config import Settings
    from tether.ui.terminal.app import App

    class Runtime:
        closed = False

        async def start(self) -> str:
            raise RuntimeError("the server went away")

        async def aclose(self) -> None:
            self.closed = True

    def broken_banner() -> None:
        raise RuntimeError("the terminal went away")

    app = App(Settings(), RunOptions(root=project, home=home), {})
    app.runtime = Runtime()  # type: ignore[assignment]
    app.banner = broken_banner  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="terminal"):
        await app.run()
    assert app.runtime.closed


# ---------------------------------------------------------------- malformed base URLs


BASE_URL_KEYS = ["ollama_host", "openai_base_url", "anthropic_base_url", "gemini_base_url"]


@pytest.mark.parametrize("key", BASE_URL_KEYS)
@pytest.mark.parametrize("value", ["http://[::1", "http://host:port", "localhost:11434",
                                   "ftp://example.com", "http://127.0.0.1:99999"])
def test_a_malformed_base_url_setting_is_reported_and_the_default_kept(
    home: Path, key: str, value: str
) -> None:
    from tether.store.config import Settings, load_settings

    home.mkdir()
    (home / "config.toml").write_text(f'{key} = "{value}"\nmodel = "kept"\n')
    settings, warnings = load_settings(env={}, home=home)
    assert getattr(settings, key) == getattr(Settings(), key)
    assert settings.model == "kept"
    assert len(warnings) == 1 and f"invalid value for '{key}'" in warnings[0]


def test_good_base_urls_are_accepted(home: Path) -> None:
    from tether.store.config import load_settings

    env = {"OLLAMA_HOST": "[::1]:11434", "OPENAI_BASE_URL": "https://user@example.com:8443/v1",
           "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "GEMINI_BASE_URL": "https://g.example"}
    settings, warnings = load_settings(env=env, home=home)
    assert warnings == []
    assert settings.ollama_host == "http://[::1]:11434"
    assert settings.openai_base_url == "https://user@example.com:8443/v1"


@pytest.mark.parametrize(("url", "shown"), [
    ("http://[::1", "http://[::1"),
    ("http://user:secret@[::1/v1?key=secret#x", "http://[::1/v1"),
    ("https://user:secret@example.com/v1?key=secret", "https://example.com/v1"),
])
def test_display_url_never_raises_and_never_shows_credentials(url: str, shown: str) -> None:
    from tether.providers._http import display_url

    assert display_url(url) == shown


def test_one_shot_with_a_malformed_ollama_host_warns_and_goes_on(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="Hello from the fake.")]) as fake:
        proc = run_cli(["-p", "hi", "--provider", "ollama", "--base-url", fake.url, "--model", "m"],
                       project, home, OLLAMA_HOST="http://[::1")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert "invalid value for 'ollama_host'" in proc.stderr
    assert proc.stdout == "Hello from the fake.\n"


def test_one_shot_with_a_malformed_base_url_flag_is_one_error_line(project: Path, home: Path) -> None:
    proc = run_cli(["-p", "hi", "--provider", "ollama", "--base-url", "http://[::1", "--model", "m"],
                   project, home)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2  # a bad flag value is a usage error (docs/headless.md: exit codes)
    assert proc.stderr.strip().splitlines() == [
        "tether: --base-url 'http://[::1': not a valid URL: Invalid IPv6 URL"]


# ---------------------------------------------------------------- saved keys


def corrupt_credentials(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "credentials.json"
    path.write_text('{"keys": {"openai": ')
    return path


def test_a_corrupt_credentials_file_is_a_warning_when_no_key_is_found(home: Path) -> None:
    from tether.providers import create_provider
    from tether.store.config import Settings

    path = corrupt_credentials(home)
    settings = Settings(provider="openai")
    heard: list[str] = []
    create_provider(settings, {}, notice=heard.append, home=home)
    assert len(heard) == 1 and str(path) in heard[0] and "not valid JSON" in heard[0]
    heard.clear()
    create_provider(settings, {"OPENAI_API_KEY": "from-env"}, notice=heard.append, home=home)
    assert heard == []  # the key was found: the broken file does not matter now


def test_one_shot_warns_about_a_corrupt_credentials_file(project: Path, home: Path) -> None:
    path = corrupt_credentials(home)
    with FakeServer([Reply(text="Answered.")]) as fake:
        proc = run_cli(["-p", "hi", *openai_args(fake.url)], project, home)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"warning: {path} is not valid JSON" in proc.stderr


# ---------------------------------------------------------------- wording by cause


def test_a_prompt_argument_that_is_not_utf8_is_sent_escaped(project: Path, home: Path) -> None:
    broken = b"fix \xff this".decode("utf-8", "surrogateescape")  # a lone surrogate
    with FakeServer([Reply(text="Fixed.")]) as fake:
        proc = run_cli(["-p", broken, *openai_args(fake.url)], project, home, OPENAI_API_KEY="k")
        (body,) = fake.bodies("/v1/chat/completions")
    assert proc.returncode == 0, proc.stderr
    assert body["messages"][-1]["content"].endswith("# Request\nfix \\xff this")
    assert "Traceback" not in proc.stderr and "1 byte(s) that are not UTF-8" in proc.stderr
    assert proc.stdout == "Fixed.\n"


def test_an_unreadable_memory_file_is_not_called_corrupt(home: Path) -> None:
    from tether.store.memory import MemoryCorrupt, MemoryStore

    (home / "memory.json").mkdir(parents=True)
    with pytest.raises(MemoryCorrupt) as info:
        MemoryStore(home / "memory.json").list()
    message = str(info.value)
    assert f"The memory file {home / 'memory.json'} cannot be read (Is a directory)." in message
    assert "corrupt" not in message


def test_an_unreadable_session_file_is_not_called_corrupt(home: Path, project: Path) -> None:
    from tether.store.session import SessionCorrupt, SessionStore

    store = SessionStore(home)
    record = store.new(project, "openai", "fake")
    store.path_for(record.id).mkdir(parents=True)  # in the way of the save, and unreadable
    with pytest.raises(SessionCorrupt) as info:
        store.save(record)
    assert str(info.value) == (
        f"Session file {store.path_for(record.id)} cannot be read (Is a directory). "
        "It was left untouched."
    )
    assert info.value.problem == "cannot be read (Is a directory)"


@pytest.mark.parametrize(("broken", "said"), [
    (0, "No earlier session for this folder; starting a new one."),
    (1, "No earlier session of this folder could be continued: the one saved session is unreadable"),
    (2, "No earlier session of this folder could be continued: all 2 saved sessions are unreadable"),
])
def test_continue_says_how_many_sessions_are_unreadable(
    server: FakeServer, project: Path, home: Path, broken: int, said: str
) -> None:
    (home / "sessions").mkdir(parents=True)
    for n in range(broken):
        (home / "sessions" / f"20250101-00000{n}-abcd.json").write_text("{not json")
    with started(server, project, home, "-c") as app:
        text = leave(app)
    assert said in text


# ---------------------------------------------------------------- nothing left behind, nothing hangs

STUCK_TOOL = """
import sys, threading
from pydantic import BaseModel
from tether import cli, runtime
from tether.core.toolspec import Tool

class NoArguments(BaseModel):
    pass

def stuck(args, ctx):
    threading.Event().wait()  # a handler that never returns (a hung file system)

def with_stuck(*args, **kwargs):
    table, closers = original(*args, **kwargs)
    table.add(Tool("stuck", "Never returns.", NoArguments, stuck, reads=True))
    return table, closers

original, runtime.builtin_tools = runtime.builtin_tools, with_stuck
sys.exit(cli.main(sys.argv[1:]))
"""
needs_setsid = pytest.mark.skipif(
    shutil.which("setsid") is None or not Path("/proc/self/environ").exists(),
    reason="needs setsid and /proc",
)


def spawn(argv: list[str], cwd: Path, home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *argv], cwd=cwd, env=app_env(home), text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def events_until(proc: subprocess.Popen[str], kind: str) -> list[dict]:
    """stream-json events read until one of `kind` (the pipe read blocks until tether writes)."""
    assert proc.stdout is not None
    events = []
    for line in proc.stdout:
        events.append(json.loads(line))
        if events[-1]["type"] == kind:
            return events
    raise AssertionError(f"no {kind} event before the output ended: {events}")


def tool_timeout(home: Path, seconds: float) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"tool_timeout = {seconds}\n")


@needs_setsid
def test_the_end_of_a_one_shot_run_stops_what_its_commands_left_running(
    project: Path, home: Path, server: FakeServer, tmp_path: Path
) -> None:
    pidfiles = [tmp_path / f"bg{i}.pid" for i in range(len(BACKGROUND_FORMS))]
    forms = BACKGROUND_FORMS.values()
    command = "; ".join(form.format(pid=p) for form, p in zip(forms, pidfiles, strict=True))
    server.add(Reply(tool_calls=[("run_cmd", {"command": command})]), Reply(text="Started."))
    proc = run_cli(["-p", "start them", "--auto", "--sandbox", "off", *openai_args(server.url)],
                   project, home)
    assert proc.returncode == 0, proc.stderr
    assert f"{len(pidfiles)} background processes still running" in server.requests[-1][1]["messages"][-1]["content"]
    pids = [pid_written(p) for p in pidfiles]
    assert all(until_gone(pid) for pid in pids), [p for p in pids if not gone(p)]


@needs_setsid
def test_sigterm_ends_a_one_shot_run_like_ctrl_c_and_stops_its_commands(
    project: Path, home: Path, server: FakeServer, tmp_path: Path
) -> None:
    pidfile = tmp_path / "bg.pid"
    command = BACKGROUND_FORMS["setsid -f"].format(pid=pidfile) + "; sleep 1000"
    server.add(Reply(tool_calls=[("run_cmd", {"command": command})]), Reply(text="Done."))
    proc = spawn(["-m", "tether", "-p", "go", "--auto", "--sandbox", "off", "--output-format",
                  "stream-json", *openai_args(server.url)], project, home)
    try:
        events_until(proc, "tool_start")
        pid = pid_written(pidfile)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    result = json.loads(out.splitlines()[-1])
    assert result["type"] == "result" and result["stop_reason"] == "cancelled"
    assert until_gone(pid)


def test_a_one_shot_run_whose_tool_is_stuck_still_exits(
    project: Path, home: Path, server: FakeServer
) -> None:
    tool_timeout(home, 1)
    server.add(Reply(tool_calls=[("stuck", {})]), Reply(text="It never answered."))
    proc = spawn(["-c", STUCK_TOOL, "-p", "go", *openai_args(server.url)], project, home)
    try:
        out, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out == "It never answered.\n"
    assert "timed out after 1s" in server.requests[-1][1]["messages"][-1]["content"]


def test_ctrl_c_ends_a_one_shot_run_whose_tool_is_stuck(
    project: Path, home: Path, server: FakeServer
) -> None:
    server.add(Reply(tool_calls=[("stuck", {})]), Reply(text="unused"))
    proc = spawn(["-c", STUCK_TOOL, "-p", "go", "--output-format", "stream-json",
                  *openai_args(server.url)], project, home)
    try:
        events_until(proc, "tool_start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert json.loads(out.splitlines()[-1])["stop_reason"] == "cancelled"


def test_ctrl_d_ends_the_chat_even_while_a_tool_is_stuck(
    project: Path, home: Path, server: FakeServer
) -> None:
    tool_timeout(home, 1)
    server.add(Reply(tool_calls=[("stuck", {})]), Reply(text="It never answered."))
    app = PtyApp(openai_args(server.url), cwd=project, env=app_env(home),
                 python_args=("-c", STUCK_TOOL))
    with app:
        app.wait_for_prompt()
        app.line("go")
        app.wait_for_text("It never answered.")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit(WAIT) == 0, app.text()


@needs_setsid
def test_sigterm_ends_the_chat_mid_turn_and_stops_its_commands(
    project: Path, home: Path, server: FakeServer, tmp_path: Path
) -> None:
    pidfile = tmp_path / "bg.pid"
    command = BACKGROUND_FORMS["setsid -f"].format(pid=pidfile) + "; sleep 1000"
    server.add(Reply(tool_calls=[("run_cmd", {"command": command})]), Reply(text="Done."))
    with started(server, project, home, "--auto", "--sandbox", "off") as app:
        app.line("go")
        pid = pid_written(pidfile)
        os.kill(app.pid, signal.SIGTERM)
        assert app.wait_exit(WAIT) == 128 + signal.SIGTERM, app.text()
        assert "Traceback" not in app.text()
    assert until_gone(pid)


# ---------------------------------------------------------------- bad bytes in the chat


def test_a_file_name_that_is_not_utf8_and_a_broken_reply_keep_the_chat_going(
    server: FakeServer, project: Path, home: Path
) -> None:
    """list_dir over a Latin-1 file name, then a reply with a lone surrogate: both are
    shown, the next request goes out, and the session is saved with the name escaped."""
    with open(os.fsencode(project) + b"/caf\xe9.txt", "wb") as fh:
        fh.write(b"x\n")
    server.add(Reply(tool_calls=[("list_dir", {"path": "."})]), Reply(text="Listed \ud800 it."))
    with started(server, project, home) as app:
        app.line("list the folder")
        app.wait_for_text("Listed")
        app.wait_for_prompt()
        app.line("thanks")
        app.wait_for_text("Fine.")
        app.wait_for_prompt()
        text = leave(app)
    assert "unexpected" not in text and "Listed \ufffd it." in text
    from tether.store.session import SessionStore

    (summary,) = SessionStore(home).list()
    saved = SessionStore(home).load(summary.id)
    contents = [p.content for m in saved.messages for p in m.tool_results]
    assert any("caf\\xe9.txt" in c for c in contents)


# ---------------------------------------------------------------- safetext


@pytest.mark.parametrize(("raw", "clean"), [
    ("caf\udce9.txt", "caf\\xe9.txt"),          # a byte surrogateescape kept
    ("a\ud800b", "a\ufffdb"),                    # a lone surrogate from JSON
    ("\ud83d\ude00", "\U0001F600"),              # a pair, joined back into its character
    ("\udfff\ud800", "\ufffd\ufffd"),            # a pair in the wrong order is two broken ones
    ("plain \x00\x1b text", "plain \x00\x1b text"),  # control characters are another concern
])
def test_clean_text_keeps_bytes_readable(raw: str, clean: str) -> None:
    from tether.host.safetext import clean_text, has_bad_chars

    assert clean_text(raw) == clean and not has_bad_chars(clean_text(raw))
    clean_text(raw).encode("utf-8")


class ShortWrites(io.RawIOBase):
    """A file that takes at most `most` bytes a write, as a pipe does when a signal or a
    leaving reader cuts a write short; `gone` after `limit` bytes, as a closed pipe."""

    def __init__(self, most: int, limit: int | None = None) -> None:
        self.most, self.limit, self.got = most, limit, bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.limit is not None and len(self.got) >= self.limit:
            raise BrokenPipeError(32, "Broken pipe")
        piece = bytes(data[: self.most])
        self.got += piece
        return len(piece)


def test_an_unbuffered_stream_gets_every_byte_or_an_error() -> None:
    """`python -u` / PYTHONUNBUFFERED: the text layer wrote once and dropped what a short
    write left, so a long answer was cut without an error."""
    from tether.host.safetext import write_safely

    raw = ShortWrites(most=7)
    stream = io.TextIOWrapper(cast(Any, raw), encoding="ascii", write_through=True)
    write_safely(cast(TextIO, stream), "an answer longer than one write, caf\u00e9\n")
    assert raw.got.decode() == "an answer longer than one write, caf\\xe9\n"
    closing = ShortWrites(most=7, limit=14)
    stream = io.TextIOWrapper(cast(Any, closing), encoding="utf-8", write_through=True)
    with pytest.raises(BrokenPipeError):
        write_safely(cast(TextIO, stream), "x" * 100)


def test_a_color_code_typed_or_pasted_at_the_prompt_is_text_not_a_crash(
    server: FakeServer, project: Path, home: Path
) -> None:
    """`ESC[31m` reads like a mouse report to the input parser (digits, then m); its handler
    failed on it and the chat showed "Unhandled exception in event loop"."""
    with started(server, project, home) as app:
        app.child.send(b"paint it \x1b[31m red\r")
        app.wait_for_text("Fine.")
        app.wait_for_prompt()
        text = leave(app)
    assert "Unhandled exception" not in text
    asked = [m["content"] for _, body in server.requests for m in body.get("messages", [])
             if m["role"] == "user"]
    assert asked[0].endswith("# Request\npaint it [31m red")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_input_history_that_is_no_regular_file_is_left_alone(tmp_path: Path, kind: str) -> None:
    """A FIFO as TETHER_HOME/history would make reading it wait forever, /dev/zero would
    never end: one warning, and the history lives in memory."""
    from tether.ui.terminal.prompt import open_history

    path = tmp_path / "history"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    warnings: list[str] = []
    history = open_history(path, warnings.append)
    assert list(history.load_history_strings()) == []
    history.append_string("typed")
    assert history.get_strings() == ["typed"]
    assert len(warnings) == 1 and ("FIFO" in warnings[0] or "device" in warnings[0])
