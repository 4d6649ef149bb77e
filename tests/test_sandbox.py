"""The command sandbox: bubblewrap around run_cmd, and asking when it cannot run.

Tests marked `needs_bwrap` run real commands inside bubblewrap and are skipped
where it is missing or cannot start; the fallback tests always run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tether.cli import build_parser, setting_flags
from tether.core.messages import Evidence, ToolCall
from tether.core.toolspec import ToolContext
from tether.core.ui_protocol import Decision, SilentUI
from tether.engine.dispatch import Dispatcher
from tether.runtime import RunOptions, build_runtime
from tether.safety import sandbox as sandbox_module
from tether.safety import seccomp, stdin_probe
from tether.safety.approval import ApprovalPolicy
from tether.safety.permissions import Rule, RuleSet, load_rules
from tether.safety.sandbox import Sandbox, probe_problem
from tether.safety.shell_session import ShellSessions
from tether.store.config import Settings, load_settings
from tether.tools import builtin_tools

PY = getattr(sys, "_base_executable", None) or sys.executable
"""An interpreter outside /tmp: the sandbox's private /tmp hides a venv (or a CI checkout) kept there."""
HOST_DIR = next((Path(d) for d in ("/var/tmp", str(Path.home())) if Path(d).is_dir()), Path(sys.prefix))
"""A writable host folder outside /tmp, to show the sandbox makes it read-only."""
PROMPT = f"{PY} -c \"name=input('name? '); print('hi', name)\""
BWRAP_PROBLEM = probe_problem()
needs_bwrap = pytest.mark.skipif(bool(BWRAP_PROBLEM), reason=f"sandbox unusable: {BWRAP_PROBLEM}")
linux_only = pytest.mark.skipif(not stdin_probe.proc_usable(), reason="needs /proc")


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A project root and a separate state directory holding a saved key."""
    root, home = tmp_path / "proj", tmp_path / "state"
    root.mkdir()
    home.mkdir()
    (home / "credentials.json").write_text('{"openai": "sk-saved-not-real"}')
    return root, home


async def run_in(sandbox: Sandbox | None, command: str, timeout: float = 20):
    """Run one command in a fresh ShellSessions, inside `sandbox` (None: unconfined, in /tmp)."""
    root = sandbox.root if sandbox else Path("/tmp")
    shells = ShellSessions(root, launcher=sandbox)
    try:
        return await shells.run(command, timeout=timeout)
    finally:
        await shells.close_all()


def launched(box: Sandbox, argv: list[str], env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment the sandbox would start for `argv`."""
    with box.launch(argv, dict(os.environ) if env is None else env) as launch:
        launch.release()
        return launch.argv, launch.env


def without_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """PATH with bash and python but no bwrap."""
    bin_dir = tmp_path / "bin-no-bwrap"
    bin_dir.mkdir()
    for name in ("bash", "env", "true"):
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))


class ApprovingUI(SilentUI):
    """Says yes to every approval and remembers what it was asked."""

    can_ask = True

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, str]] = []
        self.ended: list[Evidence] = []

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.asked.append((call.name, reason))
        return Decision(True)

    def tool_end(self, evidence: Evidence) -> None:
        self.ended.append(evidence)


# ---------------------------------------------------------------- the command line


def test_workspace_write_binds_the_root_writable_and_hides_the_state_dir(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_module, "probe_problem", lambda *_: "")
    root, home = project
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-not-real")
    argv, env = launched(Sandbox("workspace-write", root, home), ["bash", "-c", "ls"])
    assert argv[-4:] == ["--", "bash", "-c", "ls"]
    options = argv[: argv.index("--")]
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent"):
        assert flag in options
    assert "--new-session" not in options  # the process group must stay ours to kill
    assert options[options.index("--ro-bind") + 1 : options.index("--ro-bind") + 3] == ["/", "/"]
    bind = options.index("--bind")
    assert options[bind + 1 : bind + 3] == [str(root), str(root)]
    assert bind > options.index("/tmp")  # a project under /tmp survives the private /tmp
    assert "--chdir" in options and options[options.index("--chdir") + 1] == str(root)
    hidden = [options[i + 1] for i, arg in enumerate(options) if arg == "--tmpfs"]
    assert hidden == ["/tmp", str(home)]
    assert "--seccomp" in options
    assert "OPENAI_API_KEY" not in env and "PATH" in env


def test_read_only_binds_the_root_read_only_and_state_inside_root_stays_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_module, "probe_problem", lambda *_: "")
    root = tmp_path / "proj"
    home = root / ".state"
    home.mkdir(parents=True)
    options = Sandbox("read-only", root, home).mount_args()
    assert "--bind" not in options
    binds = [i for i, arg in enumerate(options) if arg == "--ro-bind" and options[i + 1] == str(root)]
    assert binds and binds[0] < options.index(str(home))  # the root first, the tmpfs over it after


def test_a_project_inside_the_state_dir_is_bound_again_after_hiding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_module, "probe_problem", lambda *_: "")
    home = tmp_path / "state"
    root = home / "work"
    root.mkdir(parents=True)
    options = Sandbox("workspace-write", root, home).mount_args()
    binds = [i for i, arg in enumerate(options) if arg == "--bind"]
    assert len(binds) == 2 and binds[0] < options.index(str(home)) < binds[1]


@needs_bwrap
async def test_started_in_the_state_dir_itself_nothing_of_it_is_readable_or_writable(
    project: tuple[Path, Path],
) -> None:
    # The project bound again after hiding the state directory would be the state directory:
    # its keys readable, and its permissions.json (global allow rules) writable.
    _, home = project
    outcome = await run_in(
        Sandbox("workspace-write", home, home),
        "cat credentials.json; echo '{\"allow\": [\"run_cmd\"]}' > permissions.json",
    )
    assert "sk-saved-not-real" not in outcome.output
    assert not (home / "permissions.json").exists()


def test_a_missing_state_dir_is_not_mounted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "probe_problem", lambda *_: "")
    options = Sandbox("read-only", tmp_path, tmp_path / "absent").mount_args()
    assert str(tmp_path / "absent") not in options


def test_off_never_probes_and_leaves_commands_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object) -> str:
        raise AssertionError("probed")

    monkeypatch.setattr(sandbox_module, "probe_problem", fail)
    box = Sandbox("off", tmp_path, tmp_path)
    assert not box.enabled and not box.available() and box.confinement == "off"
    assert launched(box, ["bash", "-c", "ls"], {"OPENAI_API_KEY": "k"}) == (
        ["bash", "-c", "ls"], {"OPENAI_API_KEY": "k"})


# ---------------------------------------------------------------- setting and flag


def test_the_flag_sets_the_setting_and_bad_values_are_usage_errors(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--sandbox", "workspace-write", "-p", "x"])
    settings, warnings = load_settings(setting_flags(args), env={}, home=tmp_path)
    assert settings.sandbox == "workspace-write" and not warnings
    assert load_settings({}, env={}, home=tmp_path)[0].sandbox == "auto"
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--sandbox", "everything"])
    assert exc.value.code == 2


def test_an_invalid_sandbox_in_the_config_file_is_reported_and_ignored(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('sandbox = "strict"\n')
    settings, warnings = load_settings({}, env={}, home=tmp_path)
    assert settings.sandbox == "auto"
    assert any("sandbox" in w for w in warnings)


# ---------------------------------------------------------------- fallback


def test_missing_bwrap_is_reported_once_and_commands_run_unwrapped(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    without_bwrap(monkeypatch, tmp_path)
    notices: list[str] = []
    root, home = project
    box = Sandbox("read-only", root, home, notice=notices.append)
    assert not box.available() and not box.available()
    assert "not installed" in box.problem
    assert launched(box, ["bash", "-c", "ls"])[0] == ["bash", "-c", "ls"]
    assert len(notices) == 1 and "read-only sandbox cannot be used" in notices[0]


def test_a_bwrap_that_cannot_start_names_its_reason(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_dir = tmp_path / "fakebin"
    fake_dir.mkdir()
    fake = fake_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    root, home = project
    box = Sandbox("workspace-write", root, home)
    assert not box.available()
    assert "No permissions to create new namespace" in box.problem


async def test_unavailable_sandbox_makes_every_command_ask_even_under_auto(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    without_bwrap(monkeypatch, tmp_path)
    root, home = project
    box = Sandbox("workspace-write", root, home)
    table, closers = builtin_tools(ToolContext(root=root), sandbox=box)
    rules = RuleSet([Rule.parse("run_cmd", "test")], [])
    policy = ApprovalPolicy(root, rules, auto=True, home=home, sandbox=box)
    for name, args in (("run_cmd", {"command": "true"}), ("send_input", {"session": "s1", "text": "y"})):
        verdict = policy.check(ToolCall("c", name, args), table.get(name))
        assert verdict.action == "ask" and "unconfined" in verdict.reason
    assert policy.check(ToolCall("c", "end_process", {"session": "s1"}), table.get("end_process")).action == "allow"
    assert policy.check(ToolCall("c", "read_file", {"filepath": "a"}), table.get("read_file")).action == "allow"
    ui = ApprovingUI()
    dispatcher = Dispatcher(table, ToolContext(root=root), ui, policy=policy)
    result, _ = await dispatcher.dispatch(ToolCall("c", "run_cmd", {"command": "echo approved > ran.txt"}))
    assert not result.is_error and (root / "ran.txt").read_text() == "approved\n"
    assert ui.asked and "sandbox cannot be used" in ui.asked[0][1]
    for close in closers:
        await close()


async def test_one_shot_blocks_commands_and_says_so_once(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    without_bwrap(monkeypatch, tmp_path)
    root, home = project
    ui = SilentUI()
    runtime = build_runtime(
        Settings(sandbox="read-only"), RunOptions(root=root, home=home, auto=True), ui, env={}
    )
    try:
        for _ in range(2):
            result, _ = await runtime.loop.dispatcher.dispatch(
                ToolCall("c", "run_cmd", {"command": "touch ran.txt"})
            )
            assert result.is_error and "sandbox cannot be used" in result.content
            assert "install bubblewrap" in result.content
        assert not (root / "ran.txt").exists()
        sandbox_notices = [m for _, m in ui.notices if "sandbox" in m]
        assert len(sandbox_notices) == 1
        assert runtime.policy.home == home and runtime.policy.sandbox is not None
    finally:
        await runtime.aclose()


# ---------------------------------------------------------------- inside bubblewrap


@needs_bwrap
async def test_workspace_write_writes_inside_the_root_only(project: tuple[Path, Path]) -> None:
    root, home = project
    box = Sandbox("workspace-write", root, home)
    inside = await run_in(box, "echo kept > inside.txt && pwd")
    assert inside.exit_code == 0 and inside.output.strip() == str(root.resolve())
    assert (root / "inside.txt").read_text() == "kept\n"
    # Outside the root and outside /tmp: the host file system is read-only.
    stray = HOST_DIR / f"tether-sandbox-probe-{uuid.uuid4().hex}"
    try:
        outside = await run_in(box, f"echo x > {stray}")
        assert outside.exit_code != 0 and "Read-only file system" in outside.output
        assert not stray.exists()
    finally:
        stray.unlink(missing_ok=True)
    # Outside the root but under /tmp: it lands in the private /tmp, never on the host.
    neighbour = root.parent / "neighbour.txt"
    await run_in(box, f"echo x > {neighbour}")
    assert not neighbour.exists()


@needs_bwrap
async def test_read_only_refuses_writes_in_the_root(project: tuple[Path, Path]) -> None:
    root, home = project
    (root / "existing.txt").write_text("original\n")
    box = Sandbox("read-only", root, home)
    outcome = await run_in(box, "cat existing.txt; echo changed > existing.txt; touch new.txt")
    assert "original" in outcome.output and "Read-only file system" in outcome.output
    assert outcome.exit_code != 0
    assert (root / "existing.txt").read_text() == "original\n" and not (root / "new.txt").exists()


@needs_bwrap
async def test_tmp_is_private(project: tuple[Path, Path], tmp_path: Path) -> None:
    root, home = project
    name = f"/tmp/tether-sandbox-{uuid.uuid4().hex}"
    host_file = tmp_path / "host-only.txt"
    host_file.write_text("host\n")
    try:
        outcome = await run_in(
            Sandbox("workspace-write", root, home),
            f"echo inside > {name} && cat {name}; cat {host_file}",
        )
        assert "inside" in outcome.output and "No such file" in outcome.output
        assert not Path(name).exists()
    finally:
        Path(name).unlink(missing_ok=True)


@contextlib.contextmanager
def serving(server: socket.socket, greeting: bytes = b"") -> Iterator[list[bool]]:
    """Accept connections on a bound `server` in a thread, recording each one (and greeting it)."""
    server.listen()
    server.settimeout(0.2)
    accepted: list[bool] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(True)
            conn.sendall(greeting)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield accepted
    finally:
        stop.set()
        thread.join(2)
        server.close()


@pytest.fixture
def host_server() -> Iterator[tuple[int, list[bool]]]:
    """A TCP listener on 127.0.0.1 that records each connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    with serving(server) as accepted:
        yield server.getsockname()[1], accepted


@needs_bwrap
async def test_the_network_is_unreachable(project: tuple[Path, Path], host_server) -> None:
    port, accepted = host_server
    connect = (
        f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); "
        "print('connected')\""
    )
    root, home = project
    control = await run_in(None, connect)
    assert "connected" in control.output and len(accepted) == 1  # the test can tell
    sandboxed = await run_in(Sandbox("read-only", root, home), connect)
    assert "connected" not in sandboxed.output and sandboxed.exit_code != 0
    assert len(accepted) == 1


@needs_bwrap
async def test_the_state_dir_and_key_variables_are_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The state directory inside the project is the hard case: the root bind would expose it.
    root = tmp_path / "proj"
    home = root / ".tether"
    home.mkdir(parents=True)
    (home / "credentials.json").write_text('{"openai": "sk-saved-not-real"}')
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-not-real")
    box = Sandbox("workspace-write", root, home)
    outcome = await run_in(
        box, "cat .tether/credentials.json; ls -A .tether; echo key=${OPENAI_API_KEY:-unset}"
    )
    assert "sk-saved-not-real" not in outcome.output and "sk-env-not-real" not in outcome.output
    assert "No such file" in outcome.output and "key=unset" in outcome.output
    await run_in(box, "echo planted > .tether/credentials.json")
    assert "sk-saved-not-real" in (home / "credentials.json").read_text()  # not overwritten


@needs_bwrap
@linux_only
async def test_a_prompting_program_is_still_detected_and_answered(project: tuple[Path, Path]) -> None:
    root, home = project
    box = Sandbox("read-only", root, home)
    shells = ShellSessions(root, launcher=box)
    try:
        first = await shells.run(PROMPT, timeout=20)
        assert first.state == "waiting_for_input" and "name? " in first.output
        second = await shells.send_input(first.session_id or "", "bob", timeout=20)
        assert second.state == "exited" and "hi bob" in second.output
        quiet = await shells.run("sleep 0.6; echo done", timeout=20)
        assert quiet.state == "exited" and quiet.output == "done\n"  # silence is not a prompt
    finally:
        await shells.close_all()


def marked_processes(marker: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in " ".join(proc.info["cmdline"] or []) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


@needs_bwrap
async def test_the_timeout_kills_the_whole_sandboxed_tree(project: tuple[Path, Path]) -> None:
    root, home = project
    marker = f"{300 + uuid.uuid4().int % 1000}.25"
    box = Sandbox("workspace-write", root, home)
    shells = ShellSessions(root, launcher=box)
    try:
        outcome = await shells.run(f"sleep {marker} & sleep {marker}", timeout=1)
        assert outcome.state == "timed_out"
        assert marked_processes(marker) == []
        waiting = await shells.run(f"sleep {marker} & read answer", timeout=20)
        assert waiting.state == "waiting_for_input" and marked_processes(marker)
        await shells.end(waiting.session_id or "")
        assert marked_processes(marker) == []
    finally:
        await shells.close_all()


@needs_bwrap
async def test_run_cmd_through_the_dispatcher_runs_sandboxed(project: tuple[Path, Path]) -> None:
    root, home = project
    box = Sandbox("read-only", root, home)
    table, closers = builtin_tools(ToolContext(root=root), sandbox=box)
    policy = ApprovalPolicy(root, RuleSet([], []), auto=True, home=home, sandbox=box)
    dispatcher = Dispatcher(table, ToolContext(root=root), SilentUI(), policy=policy)
    try:
        result, _ = await dispatcher.dispatch(ToolCall("c", "run_cmd", {"command": "touch x"}))
        assert not result.is_error and "Read-only file system" in result.content
        assert not (root / "x").exists()
    finally:
        for close in closers:
            await close()


# ---------------------------------------------------------------- auto, the default


def test_auto_is_the_default_and_the_flags_reach_the_settings(tmp_path: Path) -> None:
    assert Settings().sandbox == "auto" and not Settings().sandbox_escalation
    args = build_parser().parse_args(["--sandbox", "auto", "--allow-unsandboxed", "-p", "x"])
    settings, _ = load_settings(setting_flags(args), env={}, home=tmp_path)
    assert settings.sandbox == "auto" and settings.sandbox_escalation
    off = build_parser().parse_args(["--sandbox", "off", "-p", "x"])
    assert load_settings(setting_flags(off), env={}, home=tmp_path)[0].sandbox == "off"


async def test_auto_without_bwrap_runs_commands_unconfined_after_one_notice_at_start(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    without_bwrap(monkeypatch, tmp_path)
    root, home = project
    ui = SilentUI()
    runtime = build_runtime(Settings(), RunOptions(root=root, home=home, auto=True), ui, env={})
    try:
        await runtime.probe_sandbox()
        notices = [m for _, m in ui.notices if "sandbox" in m]
        assert len(notices) == 1 and "Install bubblewrap" in notices[0] and 'sandbox = "off"' in notices[0]
        result, _ = await runtime.loop.dispatcher.dispatch(
            ToolCall("c", "run_cmd", {"command": "echo ran > ran.txt"})
        )
        assert not result.is_error and (root / "ran.txt").read_text() == "ran\n"  # off, not "ask"
        await runtime.probe_sandbox()
        assert len([m for _, m in ui.notices if "sandbox" in m]) == 1
    finally:
        await runtime.aclose()


def test_auto_where_namespaces_are_refused_says_how_to_enable_them(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_module, "probe_problem", lambda *_: "bwrap does not work here (denied)")
    monkeypatch.setattr(shutil, "which", lambda name, path=None: "/usr/bin/" + name)
    notices: list[str] = []
    box = Sandbox("auto", *project, notice=notices.append)
    assert box.confinement == "off" and not box.insisted_on()
    assert len(notices) == 1 and "unprivileged user namespaces" in notices[0]


@needs_bwrap
async def test_auto_where_bwrap_works_is_workspace_write(project: tuple[Path, Path]) -> None:
    root, home = project
    box = Sandbox("auto", root, home)
    assert box.confinement == "workspace-write"
    stray = HOST_DIR / f"tether-sandbox-probe-{uuid.uuid4().hex}"
    outcome = await run_in(box, f"echo in > inside.txt; echo out > {stray}")
    assert (root / "inside.txt").read_text() == "in\n"
    assert not stray.exists() and "Read-only file system" in outcome.output


def test_the_probe_is_remembered_per_machine_until_something_changes(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, home = project
    probes: list[int] = []

    def probe(*_: object) -> str:
        probes.append(1)
        return ""

    monkeypatch.setattr(sandbox_module, "probe_problem", probe)
    fake_dir = tmp_path / "fakebin"
    fake_dir.mkdir()
    fake = fake_dir / "bwrap"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    for _ in range(2):
        assert Sandbox("auto", root, home).available()
    assert len(probes) == 1 and (home / "sandbox.json").is_file()
    fake.write_text("#!/bin/sh\n# upgraded\nexit 0\n")  # another bwrap: probed again
    assert Sandbox("auto", root, home).available() and len(probes) == 2
    (home / "sandbox.json").write_text("{not json")
    assert Sandbox("auto", root, home).available() and len(probes) == 3
    assert (home / "sandbox.json").read_text() == "{not json"  # never overwritten


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_remembered_probe_that_is_no_regular_file_is_probed_again_not_waited_on(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A FIFO as TETHER_HOME/sandbox.json made every start wait for a writer; /dev/zero
    never ends. Such a file is not read, not replaced, and the machine is probed again."""
    from tether.safety.sandbox_probe import PROBE_FILE, remembered_problem

    _, home = project
    if kind == "fifo":
        os.mkfifo(home / PROBE_FILE)
    else:
        (home / PROBE_FILE).symlink_to("/dev/zero")
    monkeypatch.setattr("tether.safety.sandbox_probe.host_program", lambda *_: "/bin/true")
    assert remembered_problem(home, (), None, lambda: "probed") == "probed"
    assert not (home / PROBE_FILE).is_file()


# ---------------------------------------------------------------- what stays hidden

FAKE_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-0001",
    "OPENAI_API_KEY": "sk-openai-fake-0002",
    "GITHUB_TOKEN": "ghp-fake-0003",
    "SOME_SERVICE_SECRET": "secret-fake-0004",
}


@needs_bwrap
async def test_no_process_inside_shows_a_key_in_its_environment(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in FAKE_KEYS.items():
        monkeypatch.setenv(name, value)
    root, home = project
    every = "for f in /proc/[0-9]*/environ; do echo \"== $f\"; tr '\\0' '\\n' < $f; done"
    outcome = await run_in(Sandbox("workspace-write", root, home), every)
    assert "== /proc/1/environ" in outcome.output and "PATH=" in outcome.output  # it could read them
    for name, value in FAKE_KEYS.items():
        assert value not in outcome.output and f"{name}=" not in outcome.output
    control = await run_in(None, "env")
    assert FAKE_KEYS["ANTHROPIC_API_KEY"] in control.output  # the keys were there to leak


@pytest.fixture
def unix_server() -> Iterator[tuple[Path, list[bool]]]:
    """A Unix socket server bound outside the project and outside /tmp, recording connections."""
    folder = Path(tempfile.mkdtemp(prefix="tether-sock-", dir=str(HOST_DIR)))
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        with serving(server, b"hello from the host\n") as accepted:
            yield path, accepted
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
async def test_a_host_unix_socket_cannot_be_reached(project: tuple[Path, Path], unix_server) -> None:
    path, accepted = unix_server
    connect = (
        f"{PY} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); "
        "print(s.recv(100).decode())\""
    )
    control = await run_in(None, connect)
    assert "hello from the host" in control.output and len(accepted) == 1
    root, home = project
    for mode in ("workspace-write", "read-only"):
        sandboxed = await run_in(Sandbox(mode, root, home), connect)  # type: ignore[arg-type]
        assert "hello from the host" not in sandboxed.output and sandboxed.exit_code != 0
        assert "Permission denied" in sandboxed.output
    assert len(accepted) == 1


@needs_bwrap
async def test_socketpair_and_asyncio_still_work_inside(project: tuple[Path, Path]) -> None:
    script = (
        "import asyncio, socket; a, b = socket.socketpair(); a.sendall(b'pair'); "
        "print(b.recv(4).decode()); asyncio.run(asyncio.sleep(0)); print('loop ok')"
    )
    outcome = await run_in(Sandbox("workspace-write", *project), f'{PY} -c "{script}"')
    assert outcome.exit_code == 0 and "pair" in outcome.output and "loop ok" in outcome.output


@needs_bwrap
async def test_io_uring_cannot_be_set_up_inside(project: tuple[Path, Path]) -> None:
    if seccomp.machine() not in seccomp.SYSCALLS:
        pytest.skip("no seccomp table for this architecture")
    script = (
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); params = ctypes.create_string_buffer(120); "
        "r = libc.syscall(425, 4, params); print('result', r, os.strerror(ctypes.get_errno()))"
    )
    outcome = await run_in(Sandbox("workspace-write", *project), f'{PY} -c "{script}"')
    assert "result -1 Function not implemented" in outcome.output


@needs_bwrap
async def test_only_namespaced_socket_families_can_be_made_inside(project: tuple[Path, Path]) -> None:
    # A network namespace cuts IP, but not vsock (to the hypervisor and local VM services),
    # Bluetooth or the like: only families the namespace confines may be created.
    if seccomp.machine() not in seccomp.SYSCALLS:
        pytest.skip("no seccomp table for this architecture")
    families = {"vsock": 40, "bluetooth": 31, "packet": 17, "tipc": 30, "inet": 2, "inet6": 10,
                "netlink": 16}
    script = "; ".join(
        f"exec('try: socket.socket({number}, socket.SOCK_DGRAM if {number} in (2, 10) else "
        f"socket.SOCK_RAW if {number} in (16, 17) else socket.SOCK_STREAM).close(); print(\\'{name} made\\')"
        f"\\nexcept OSError as e: print(\\'{name} refused\\', e.errno)')"
        for name, number in families.items()
    )
    outcome = await run_in(Sandbox("workspace-write", *project), f'{PY} -c "import socket; {script}"')
    for name in ("vsock", "bluetooth", "packet", "tipc"):
        assert f"{name} refused" in outcome.output, outcome.output
    for name in ("inet", "inet6", "netlink"):
        assert f"{name} made" in outcome.output, outcome.output


@needs_bwrap
async def test_a_hard_link_to_the_keys_file_stops_sandboxed_commands(
    project: tuple[Path, Path],
) -> None:
    # The state directory is hidden by its path; a second name for the keys file made
    # beforehand (by a command outside the sandbox) would be readable inside.
    root, home = project
    os.link(home / "credentials.json", root / "innocent.txt")
    box = Sandbox("workspace-write", root, home)
    shells = ShellSessions(root, launcher=box)
    try:
        with pytest.raises(OSError, match="hard link"):
            await shells.run("cat innocent.txt", timeout=20)
    finally:
        await shells.close_all()
    (root / "innocent.txt").unlink()
    outcome = await run_in(box, "echo fine")
    assert outcome.exit_code == 0 and "fine" in outcome.output


def test_the_seccomp_program_is_whole_instructions_for_each_known_arch() -> None:
    for arch in ("x86_64", "aarch64"):
        program = seccomp.unix_socket_filter(arch)
        assert program and len(program) % 8 == 0
    assert seccomp.unix_socket_filter("sparc") is None


# ---------------------------------------------------------------- git and tether's config stay read-only


def git(cwd: Path, *args: str) -> str:
    import subprocess

    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "t")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-qm", "first")
    return path


PLANT = (
    "mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch planted\\n' > .git/hooks/post-commit; "
    "chmod +x .git/hooks/post-commit; "
    "git config filter.evil.clean 'touch planted-filter; cat'; echo '* filter=evil' > .gitattributes; "
    "echo '* filter=evil' >> .git/info/attributes; "
    "cp -r .git evil-common 2>/dev/null; echo ../evil-common > .git/commondir; "
    "mv .git .git-moved; echo 'gitdir: evil-common' > .git; "
    "echo '{\"allow\": [\"run_cmd\"]}' > .permissions.json; "
    "git status --short >/dev/null && echo status-ok"
)


@needs_bwrap
@pytest.mark.parametrize("hooks_dir", [True, False], ids=["hooks-dir", "no-hooks-dir"])
async def test_git_config_hooks_and_tether_config_cannot_be_planted(
    project: tuple[Path, Path], hooks_dir: bool
) -> None:
    root, home = project
    make_repo(root)
    if not hooks_dir:
        shutil.rmtree(root / ".git" / "hooks")
    config_before = (root / ".git" / "config").read_text()
    outcome = await run_in(Sandbox("workspace-write", root, home), PLANT)
    assert "status-ok" in outcome.output  # git still reads the repository inside
    assert "Read-only file system" in outcome.output or "Device or resource busy" in outcome.output
    assert not (root / ".git" / "hooks" / "post-commit").exists()
    assert (root / ".git" / "config").read_text() == config_before
    assert not (root / ".git" / "commondir").exists() and not (root / ".git-moved").exists()
    assert (root / ".git").is_dir() and not (root / ".permissions.json").exists()
    assert not (root / ".git" / "info" / "attributes").exists() or "evil" not in (
        root / ".git" / "info" / "attributes").read_text()
    assert (root / ".git" / "hooks").is_dir() == hooks_dir  # no placeholder left behind
    # tether's next checkpoint, outside the sandbox, runs nothing the command planted
    from tether.store.git_ops import GitOps

    (root / "a.txt").write_text("changed\n")
    GitOps(root, home).commit_paths("write_file", [root / "a.txt"])
    assert git(root, "log", "--format=%s", "-1").startswith("ai(write_file)")
    assert not (root / "planted").exists() and not (root / "planted-filter").exists()


@needs_bwrap
async def test_no_git_folder_can_be_made_where_there_is_none(project: tuple[Path, Path]) -> None:
    root, home = project
    outcome = await run_in(
        Sandbox("workspace-write", root, home), "git init -q; mkdir -p .git/hooks; echo made > kept.txt"
    )
    assert "Read-only file system" in outcome.output and (root / "kept.txt").read_text() == "made\n"
    assert not os.path.lexists(root / ".git")  # neither a repository nor the placeholder


@needs_bwrap
@pytest.mark.parametrize("pointer", ["file", "symlink"])
async def test_a_git_pointer_to_a_missing_folder_cannot_be_filled_in(
    project: tuple[Path, Path], pointer: str
) -> None:
    # A hostile repository ships `.git` naming a folder that does not exist yet: the command
    # must not be able to create the repository git would then use outside the sandbox.
    root, home = project
    if pointer == "file":
        (root / ".git").write_text("gitdir: stash/repo\n")
    else:
        (root / ".git").symlink_to("stash/repo")
    outcome = await run_in(
        Sandbox("workspace-write", root, home),
        "mkdir -p stash/repo/hooks && git init -q --bare stash/repo; echo made > kept.txt",
    )
    assert "Read-only file system" in outcome.output and (root / "kept.txt").read_text() == "made\n"
    assert not (root / "stash" / "repo" / "hooks").exists()
    assert not os.path.lexists(root / "stash")  # the placeholder is gone again


@needs_bwrap
async def test_a_worktree_keeps_its_git_file_and_the_main_repository_read_only(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    _, home = project
    main = make_repo(tmp_path / "main")
    root = tmp_path / "wt"
    git(main, "worktree", "add", "-q", str(root))
    git_file = (root / ".git").read_text()
    outcome = await run_in(
        Sandbox("workspace-write", root, home),
        "git status --short >/dev/null && echo status-ok; "
        "hooks=$(git rev-parse --git-common-dir)/hooks; printf '#!/bin/sh\\ntouch planted\\n' > $hooks/post-commit; "
        "echo \"gitdir: $PWD/elsewhere\" > .git; git config core.hooksPath /tmp",
    )
    assert "status-ok" in outcome.output and "Read-only file system" in outcome.output
    assert (root / ".git").read_text() == git_file
    assert not (main / ".git" / "hooks" / "post-commit").exists()
    assert "hooksPath" not in (main / ".git" / "config").read_text()


@needs_bwrap
async def test_a_placeholder_lasts_while_any_sandboxed_command_runs(project: tuple[Path, Path]) -> None:
    root, home = project
    box = Sandbox("workspace-write", root, home)
    shells = ShellSessions(root, launcher=box)
    try:
        waiting = await shells.run("read answer; echo '{}' > .permissions.json", timeout=20)
        assert waiting.state == "waiting_for_input"
        assert (root / ".permissions.json").read_text() == "{}\n"  # the stand-in the sandbox mounts
        assert load_rules(root, home, trusted=True)[0].unreadable == []  # tether reads it as no rules
        quick = await shells.run("echo '{}' > .permissions.json", timeout=20)
        assert "Read-only file system" in quick.output
        assert (root / ".permissions.json").is_file()  # still needed by the waiting command
        done = await shells.send_input(waiting.session_id or "", "go", timeout=20)
        assert "Read-only file system" in done.output
        assert not os.path.lexists(root / ".permissions.json")
    finally:
        await shells.close_all()


@needs_bwrap
async def test_an_existing_permissions_file_stays_as_it_was(project: tuple[Path, Path]) -> None:
    root, home = project
    (root / ".permissions.json").write_text('{"deny": ["run_cmd(rm *)"]}\n')
    outcome = await run_in(
        Sandbox("workspace-write", root, home),
        "cat .permissions.json; echo '{\"allow\": [\"run_cmd\"]}' > .permissions.json; rm -f .permissions.json",
    )
    assert "run_cmd(rm *)" in outcome.output  # readable
    assert (root / ".permissions.json").read_text() == '{"deny": ["run_cmd(rm *)"]}\n'


def test_every_project_config_path_is_protected_even_when_missing(tmp_path: Path) -> None:
    from tether.safety.sandbox_paths import PROJECT_CONFIG, protected_paths

    assert ".permissions.json" in [entry.name for entry in PROJECT_CONFIG]
    paths = {p.path: p.kind for p in protected_paths(tmp_path)}
    assert paths[tmp_path / ".git"] == "dir" and paths[tmp_path / ".permissions.json"] == "file"


@needs_bwrap
async def test_by_default_commands_run_in_the_workspace_write_sandbox(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-default")
    root, home = project
    ui = SilentUI()
    runtime = build_runtime(Settings(), RunOptions(root=root, home=home, auto=True), ui, env={})
    try:
        await runtime.probe_sandbox()
        assert not [m for _, m in ui.notices if "sandbox" in m]
        result, _ = await runtime.loop.dispatcher.dispatch(ToolCall("c", "run_cmd", {"command": (
            f"echo in > inside.txt; ls -A {home}; tr '\\0' '\\n' </proc/1/environ; touch .git"
        )}))
        assert (root / "inside.txt").read_text() == "in\n"
        assert "credentials.json" not in result.content and "sk-ant-fake-default" not in result.content
        assert not (root / ".git").exists() and "Read-only file system" in result.content
        assert (home / "sandbox.json").is_file()  # the probe is remembered for the next start
    finally:
        await runtime.aclose()


@needs_bwrap
async def test_an_interpreter_environment_under_tmp_is_seen_read_only(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CI virtualenv under /tmp: the private /tmp would hide it from the scripts and hooks
    # that run with sys.executable; one inside the project stays the project's (writable).
    root, home = project
    venv = Path(tempfile.mkdtemp(prefix="tether-venv-", dir="/tmp"))
    inside = root / ".venv"
    inside.mkdir()
    try:
        (venv / "marker").write_text("the venv\n")
        monkeypatch.setattr(sys, "prefix", str(venv))
        monkeypatch.setattr(sys, "exec_prefix", str(inside))
        outcome = await run_in(Sandbox("workspace-write", root, home),
                               f"cat {venv}/marker; touch {venv}/planted; touch {inside}/ok")
        assert "the venv" in outcome.output and "Read-only file system" in outcome.output
        assert not (venv / "planted").exists() and (inside / "ok").exists()
    finally:
        shutil.rmtree(venv)
