"""MCP: configuration, trust, the client against real servers and our fault server, the bridge
through dispatch (approval, rules, windowing), deferral, and `tether -p` end to end."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from mcp_helpers import (
    LOCALHOST_ONLY,
    SDK_SERVER,
    call,
    everything_entry,
    fake_entry,
    fake_in,
    filesystem_entry,
    npm_bin,
    outside_config,
    runtime_with,
    start,
    state_of,
    time_entry,
    write_config,
)

from tether.core.profile import SMALL
from tether.core.ui_protocol import SilentUI
from tether.engine.toolmenu import TOOL_SEARCH
from tether.mcp.config import load_servers
from tether.mcp.resources import parse_prompt_arguments, prompt_list, prompt_text
from tether.mcp.stdio import server_environment
from tether.mcp.tools import tool_name
from tether.mcp.trust import ApprovalStore, admit
from tether.runtime import RunOptions, build_runtime

# ---------------------------------------------------------------- configuration


def test_variables_expand_and_an_unset_one_disables_the_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write_config(home / "mcp.json", {
        "a": {"command": "${TOOL_DIR}/srv", "args": ["--mode=${MODE:-fast}"],
              "env": {"TOKEN": "${TOKEN}"}},
        "b": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${MISSING}"}},
    })
    loaded = load_servers(tmp_path, home, (), {"TOOL_DIR": "/opt", "TOKEN": "t0k", "HOST": "h"})
    a, b = loaded.servers
    assert (a.command, a.args, dict(a.env), a.problem) == ("/opt/srv", ("--mode=fast",), {"TOKEN": "t0k"}, "")
    assert "MISSING" in b.problem and "headers.Authorization" in b.problem
    assert b.headers == {}, "the literal text is never kept to be sent"
    admission = admit(loaded.servers, tmp_path, ApprovalStore(home), trusted=True, can_ask=False)
    assert [s.name for s in admission.start] == ["a"]
    assert any("MISSING" in n for n in admission.notices)


def test_a_project_entry_never_takes_a_personal_name_and_a_flag_file_wins_over_both(
    tmp_path: Path,
) -> None:
    """A project server named like one of yours would inherit the rules written for your
    server's tools (`mcp__x__*`): it is left out, with a problem that says how to use it."""
    home, root = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    root.mkdir()
    write_config(home / "mcp.json", {"x": {"command": "personal"}, "y": {"command": "mine"}})
    write_config(root / ".mcp.json", {"x": {"command": "project"}, "z": {"command": "theirs"}})
    flag = write_config(tmp_path / "run.json", {"y": {"command": "flag"}})
    loaded = load_servers(root, home, (flag,), {})
    assert {s.name: (s.command, s.source) for s in loaded.servers} == {
        "x": ("personal", "user"), "y": ("flag", "flag"), "z": ("theirs", "project")}
    assert any("'x'" in p and "one of your own servers" in p for p in loaded.problems)


def test_broken_files_are_named_and_nothing_crashes(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text("{not json")
    loaded = load_servers(tmp_path, tmp_path / "home", (tmp_path / "absent.json",), {})
    assert loaded.servers == []
    assert any(".mcp.json" in p for p in loaded.problems)
    assert any("absent.json" in p and "does not exist" in p for p in loaded.problems)


def test_example_file_at_the_repository_root_parses() -> None:
    example = Path(__file__).parent.parent / ".mcp.json.example"
    loaded = load_servers(Path("/nonexistent"), Path("/nonexistent"), (example,),
                          {"GITHUB_TOKEN": "x", "HOME": "/home/u"})
    assert loaded.servers and not loaded.problems
    assert all(not s.problem for s in loaded.servers)


def test_tool_names_are_sanitized_and_at_most_64_characters() -> None:
    assert tool_name("my fs", "read.file") == "mcp__my_fs__read_file"
    long_a, long_b = tool_name("s", "a" * 80), tool_name("s", "a" * 79 + "b")
    assert len(long_a) == 64 and len(long_b) == 64 and long_a != long_b


# ---------------------------------------------------------------- trust


def test_project_servers_need_trust_and_an_approval_of_that_exact_entry(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "project"
    root.mkdir()
    write_config(root / ".mcp.json", {"p": {"command": "run-me", "autoApprove": ["x"]}})
    servers = load_servers(root, home, (), {}).servers
    store = ApprovalStore(home)

    untrusted = admit(servers, root, store, trusted=False, can_ask=True)
    assert not untrusted.start and not untrusted.ask and "not trusted" in untrusted.notices[0]
    one_shot = admit(servers, root, store, trusted=True, can_ask=False)
    assert not one_shot.start and "--mcp-approve p" in one_shot.notices[0]
    chat = admit(servers, root, store, trusted=True, can_ask=True)
    assert [s.name for s in chat.ask] == ["p"] and chat.ask[0].auto_approve == frozenset()
    flagged = admit(servers, root, store, trusted=True, can_ask=False, approve=["p"])
    assert [s.name for s in flagged.start] == ["p"]

    store.approve(root, servers[0])
    assert [s.name for s in admit(servers, root, store, trusted=True, can_ask=False).start] == ["p"]
    write_config(root / ".mcp.json", {"p": {"command": "run-me", "args": ["--evil"]}})
    changed = load_servers(root, home, (), {}).servers
    assert not admit(changed, root, store, trusted=True, can_ask=False).start, "a changed entry asks again"


def test_stdio_environment_drops_provider_keys_unless_the_entry_names_them() -> None:
    base = {"PATH": "/bin", "OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "sk-2"}
    env = server_environment(base, {"ANTHROPIC_API_KEY": "sk-2"})
    assert env == {"PATH": "/bin", "ANTHROPIC_API_KEY": "sk-2"}


# ---------------------------------------------------------------- a runtime with servers


def test_a_missing_npm_server_is_a_skip_that_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # On a fresh clone nothing has installed the npm servers: the README's test command must
    # pass there, so a test that needs one installs it, or skips with the reason (no npm here).
    import mcp_helpers

    node_only = tmp_path / "bin"
    node_only.mkdir()
    node = shutil.which("node")
    if node is not None:
        (node_only / "node").symlink_to(node)
    monkeypatch.setattr(mcp_helpers, "NPM_CACHE", tmp_path / "empty-cache")
    monkeypatch.setenv("PATH", str(node_only))
    mcp_helpers.install_npm_servers.cache_clear()
    try:
        with pytest.raises(pytest.skip.Exception, match="(npm|Node.js) is not installed"):
            mcp_helpers.npm_bin("mcp-server-everything")
    finally:
        mcp_helpers.install_npm_servers.cache_clear()


def test_ci_installs_the_npm_servers_the_tests_install() -> None:
    import mcp_helpers

    ci = (Path(__file__).parent.parent / ".ci" / "run").read_text()
    assert all(package in ci for package in mcp_helpers.NPM_PACKAGES)


# ---------------------------------------------------------------- faults (our own server)


async def test_tools_come_over_pages_and_run_through_dispatch(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"fake": fake_entry()}, auto=True)
    manager = await start(runtime, started)
    names = sorted(n for n in runtime.table.names() if n.startswith("mcp__"))
    assert names == ["mcp__fake__add_tool", "mcp__fake__die", "mcp__fake__echo",
                     "mcp__fake__env", "mcp__fake__huge"], "both pages were read"
    assert await call(runtime, "mcp__fake__echo", text="hello") == ("hello", False)
    assert "\\x1b" in runtime.table.get("mcp__fake__echo").description, "a control character is escaped"
    assert "Use echo for echoes." in runtime.context()
    assert "not JSON-RPC" in manager.servers["fake"].diagnostics(), "the stray line is kept, not fatal"


async def test_without_approval_a_call_is_refused_and_rules_name_mcp_tools(tmp_path: Path, started: list) -> None:
    asking = runtime_with(tmp_path, {"fake": fake_entry()})
    await start(asking, started)
    text, is_error = await call(asking, "mcp__fake__echo", text="hi")
    assert is_error and "approve" in text, "nobody can approve in this mode: refused"
    (tmp_path / "x").mkdir()
    denying = runtime_with(tmp_path / "x", {"fake": fake_entry()}, auto=True, deny=("mcp__fake__*",))
    await start(denying, started)
    text, is_error = await call(denying, "mcp__fake__echo", text="hi")
    assert is_error and "permission rule" in text


async def test_auto_approve_in_the_users_own_file_runs_unasked(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"fake": fake_entry(autoApprove=["echo"])})
    await start(runtime, started)
    assert await call(runtime, "mcp__fake__echo", text="hi") == ("hi", False)
    assert (await call(runtime, "mcp__fake__huge", size=5))[1] is True, "only the named tool"


async def test_a_server_dying_mid_call_is_an_error_result_and_reload_brings_it_back(
    tmp_path: Path, started: list
) -> None:
    runtime = runtime_with(tmp_path, {"fake": fake_entry()}, auto=True)
    manager = await start(runtime, started)
    text, is_error = await call(runtime, "mcp__fake__die")
    assert is_error and "exited (code 3)" in text and "dying on purpose" in text
    assert state_of(manager, "fake")["state"] == "failed"
    assert "mcp__fake__echo" in runtime.table, "the tools stay, and say what happened"
    text, is_error = await call(runtime, "mcp__fake__echo", text="again")
    assert is_error and "not running" in text and "/mcp reload" in text
    await manager.reload()
    await manager.wait_ready(60)
    assert await call(runtime, "mcp__fake__echo", text="back") == ("back", False)


async def test_servers_survive_a_rebuild_after_a_command_and_stop_quietly_at_the_end(
    tmp_path: Path, started: list
) -> None:
    # An MCP server runs in a session of its own, as an orphan a command left behind does:
    # closing the shell sessions took it for one and sent SIGTERM, so /connect (a runtime
    # rebuilt, the old one closed) killed the new runtime's servers, and every run that ran a
    # command ended with "stopped: the server exited (code -15)".
    old = runtime_with(tmp_path, {"fake": fake_entry()}, auto=True, sandbox="off")
    await start(old, started)
    said: list[str] = []
    old.mcp.manager.notice = lambda message, level: said.append(message)
    assert (await call(old, "run_cmd", command="echo ran"))[1] is False
    new, _ = await old.restarted()
    started.remove(old)
    started.append(new)
    new.mcp.manager.notice = lambda message, level: said.append(message)
    await new.mcp.manager.wait_ready(60)
    assert state_of(new.mcp.manager, "fake")["state"] == "ready"
    assert (await call(new, "run_cmd", command="echo again"))[1] is False
    assert await call(new, "mcp__fake__echo", text="still here") == ("still here", False)
    started.remove(new)
    await new.aclose()
    assert state_of(new.mcp.manager, "fake")["state"] == "stopped"
    assert not [m for m in said if "stopped" in m], said


async def test_a_huge_result_is_windowed_and_saved_whole_for_read_file_to_page(
    tmp_path: Path, started: list
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    runtime = runtime_with(project, {"fake": fake_entry(autoApprove=["huge"])}, home=home)
    await start(runtime, started)  # nobody to ask: a read outside the project is refused
    text, is_error = await call(runtime, "mcp__fake__huge", size=3_000_000)
    assert not is_error and len(text) <= 16_000 and "characters omitted" in text
    saved = Path(re.search(r"is saved in (\S+), 250,000 lines", text).group(1))
    assert saved.parent.parent == home / "results"
    assert saved.read_text() == "".join(f"row {i:07d}\n" for i in range(250_001))[:3_000_000]
    assert saved.stat().st_mode & 0o077 == 0, "a third party's answer may be private"
    page, is_error = await call(runtime, "read_file", filepath=str(saved), offset=125_000, limit=2)
    assert not is_error, "this run's saved results are read without asking"
    assert [line.split("|")[1] for line in page.splitlines()[:2]] == ["row 0124999", "row 0125000"]
    other = home / "results" / "another-run" / "001-x.txt"
    other.parent.mkdir()
    other.write_text("what another project's tools returned\n")
    text, is_error = await call(runtime, "read_file", filepath=str(other))
    assert is_error and "outside the project" in text, "only this run's folder is readable"


async def test_a_result_that_cannot_be_saved_is_still_windowed_and_says_so(
    tmp_path: Path, started: list
) -> None:
    runtime = runtime_with(tmp_path, {"fake": fake_entry()}, auto=True)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "results").write_text("a file where the folder should be")
    await start(runtime, started)
    text, is_error = await call(runtime, "mcp__fake__huge", size=100_000)
    assert not is_error and "characters omitted" in text and len(text) <= 16_500
    assert "The whole result could not be saved" in text


async def test_a_saved_result_that_is_one_long_line_of_json_is_indented_to_page() -> None:
    from tether.store.result_files import LINE_LIMIT, pageable_text
    from tether.tools.file_text import READ_LINE_CAP

    document = json.dumps({"rows": [{"id": i, "name": f"n{i}"} for i in range(2000)]})
    text, how = pageable_text(document)
    assert json.loads(text) == json.loads(document) and how == "the JSON indented"
    split, how = pageable_text("y" * 5000 + "\nshort")
    assert split.split("\n") == ["y" * 2000, "y" * 2000, "y" * 1000, "short"] and "split" in how
    text, how = pageable_text(json.dumps({"blob": "z" * 5000}))
    assert how == "the JSON indented, lines over 2,000 characters split"
    assert max(len(line) for line in text.split("\n")) <= LINE_LIMIT
    assert LINE_LIMIT <= READ_LINE_CAP, "read_file shows every line of the saved file whole"


async def test_list_changed_refreshes_the_tools(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"fake": fake_entry()}, auto=True)
    manager = await start(runtime, started)
    refreshed = asyncio.Event()
    manager.on_change = lambda: (runtime.set_menu(), refreshed.set())
    assert await call(runtime, "mcp__fake__add_tool") == ("added", False)
    await asyncio.wait_for(refreshed.wait(), 60)
    assert "mcp__fake__added" in runtime.table


async def test_hanging_failing_and_odd_servers_are_skipped_and_the_good_one_works(
    tmp_path: Path, started: list
) -> None:
    servers = {"good": fake_entry(), "hang": fake_entry("hang", timeout=2),
               "gone": fake_entry("exit"), "old": fake_entry("version"),
               "nowhere": {"command": str(tmp_path / "no-such-program")}}
    runtime = runtime_with(tmp_path, servers, auto=True)
    manager = await start(runtime, started)
    await manager.wait_ready(60)  # the hanging one only gives up after its own timeout
    states = {s["name"]: s for s in manager.statuses()}
    assert states["good"]["state"] == "ready"
    assert states["hang"]["state"] == "failed" and "no answer within 2s" in states["hang"]["error"]
    assert "exited (code 2)" in states["gone"]["error"] and "no config" in states["gone"]["error"]
    assert "1999-01-01" in states["old"]["error"]
    assert "could not start" in states["nowhere"]["error"]
    assert await call(runtime, "mcp__good__echo", text="x") == ("x", False)


async def test_provider_keys_do_not_reach_a_stdio_server(tmp_path: Path, started: list) -> None:
    env = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "sk-secret", "GEMINI_API_KEY": "g-secret"}
    runtime = runtime_with(tmp_path, {"fake": fake_entry(env={"GEMINI_API_KEY": "${GEMINI_API_KEY}"})},
                           auto=True, env=env)
    await start(runtime, started)
    assert await call(runtime, "mcp__fake__env", name="OPENAI_API_KEY") == ("None", False)
    assert await call(runtime, "mcp__fake__env", name="GEMINI_API_KEY") == ("'g-secret'", False)


# ---------------------------------------------------------------- deferral


async def test_many_mcp_tools_wait_behind_tool_search(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"fake": fake_entry()}, auto=True, mcp_defer_tools=3)
    await start(runtime, started)
    offered = [t.name for t in runtime.loop.offered()]
    assert TOOL_SEARCH in offered and "read_file" in offered
    assert not any(n.startswith("mcp__") for n in offered)
    assert "mcp__fake__echo" in runtime.table.get(TOOL_SEARCH).description
    text, is_error = await call(runtime, TOOL_SEARCH, query="select:mcp__fake__echo")
    assert not is_error and "mcp__fake__echo" in [t.name for t in runtime.loop.offered()]


async def test_the_small_profile_always_defers_mcp_tools(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"fake": fake_entry()}, auto=True)
    runtime.apply_profile(SMALL)
    await start(runtime, started)
    assert not any(t.name.startswith("mcp__") for t in runtime.loop.offered())
    assert "mcp__fake__huge" in runtime.table.get(TOOL_SEARCH).description


# ---------------------------------------------------------------- real third-party servers


async def test_server_everything_over_stdio(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"everything": everything_entry()}, auto=True)
    manager = await start(runtime, started)
    assert state_of(manager, "everything")["state"] == "ready", manager.statuses()
    assert await call(runtime, "mcp__everything__echo", message="hi") == ("Echo: hi", False)
    image, _ = await call(runtime, "mcp__everything__get-tiny-image")
    assert re.search(r"\[image: image/png, [\d.]+ (bytes|KB)\]", image)
    weather, _ = await call(runtime, "mcp__everything__get-structured-content", location="Chicago")
    assert "temperature" in weather
    embedded, _ = await call(runtime, "mcp__everything__get-resource-reference")
    assert "[resource demo://" in embedded
    summed, _ = await call(runtime, "mcp__everything__get-sum", a=2, b=3)
    assert "5" in summed
    listing, is_error = await call(runtime, "list_mcp_resources", server="everything")
    assert not is_error and "demo://resource/static/document/" in listing
    uri = re.search(r"(demo://resource/static/document/\S+)", listing).group(1)
    body, is_error = await call(runtime, "read_mcp_resource", server="everything", uri=uri)
    assert not is_error and f"[resource {uri}" in body and len(body) > len(uri) + 20
    prompts = await prompt_list(manager)
    assert any(line.startswith("everything args-prompt(city, state?)") for line in prompts)
    text = await prompt_text(manager, "everything", "args-prompt",
                             parse_prompt_arguments(["city=Oslo"]))
    assert text == "What's weather in Oslo?"


async def test_server_filesystem_reads_a_real_folder(tmp_path: Path, started: list) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "note.txt").write_text("from the filesystem server\n")
    runtime = runtime_with(tmp_path, {"fs": filesystem_entry(shared)}, auto=True)
    await start(runtime, started)
    listing, is_error = await call(runtime, "mcp__fs__list_directory", path=str(shared))
    assert not is_error and "note.txt" in listing
    text, is_error = await call(runtime, "mcp__fs__read_text_file", path=str(shared / "note.txt"))
    assert (text.strip(), is_error) == ("from the filesystem server", False)
    outside, is_error = await call(runtime, "mcp__fs__read_text_file", path="/etc/hostname")
    assert is_error, "the server's own refusal comes back as an error result"


async def test_mcp_server_time_from_pypi(tmp_path: Path, started: list) -> None:
    runtime = runtime_with(tmp_path, {"time": time_entry()}, auto=True)
    await start(runtime, started)
    text, is_error = await call(runtime, "mcp__time__get_current_time", timezone="UTC")
    assert not is_error and '"timezone": "UTC"' in text


async def test_a_server_written_with_the_official_sdk(tmp_path: Path, started: list) -> None:
    pytest.importorskip("mcp.server.mcpserver", reason="the test extra (mcp) is not installed")
    entry = {"command": sys.executable, "args": [str(SDK_SERVER)], "trusted": True}
    runtime = runtime_with(tmp_path, {"sdk": entry})  # nobody to ask: only unasked tools run
    manager = await start(runtime, started)
    assert "[read-only]" in runtime.table.get("mcp__sdk__add").description
    text, is_error = await call(runtime, "mcp__sdk__add", a=2, b=3)
    assert not is_error and json.loads(text) == {"sum": 5}, "read-only, of a trusted server: unasked"
    assert "sdk: Add numbers with add." in runtime.context()
    body, _ = await call(runtime, "read_mcp_resource", server="sdk", uri="memo://today")
    assert body == "[resource memo://today (text/plain)]\nBuy milk."
    assert await prompt_text(manager, "sdk", "review", {"topic": "the plan"}) == "Please review the plan."


@pytest.fixture
def everything_web(request: pytest.FixtureRequest) -> object:
    """server-everything in an HTTP mode (`streamableHttp` or `sse`), on 127.0.0.1 and a
    free port; yields its URL."""
    mode, path = request.param
    command = npm_bin("mcp-server-everything")
    process = subprocess.Popen(["node", "--require", str(LOCALHOST_ONLY), command, mode],
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        port = None
        for line in process.stderr:  # the preload says where it listens, before anything else
            match = re.match(r"TETHER_TEST_PORT=(\d+)", line)
            if match:
                port = match.group(1)
                break
        assert port, "the server did not start"
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.parametrize("everything_web", [("streamableHttp", "/mcp")], indirect=True)
async def test_server_everything_over_streamable_http(tmp_path: Path, started: list, everything_web: str) -> None:
    runtime = runtime_with(tmp_path, {"web": {"type": "http", "url": everything_web}}, auto=True)
    manager = await start(runtime, started)
    assert state_of(manager, "web") == {"name": "web", "transport": "http", "state": "ready",
                                        "tools": len(manager.servers["web"].tools), "error": ""}
    transport = manager.servers["web"].session.transport
    assert transport.session_id, "the server's session id is kept and sent"
    await asyncio.wait_for(transport.listening.wait(), 60)  # it keeps a GET stream for pushes
    assert await call(runtime, "mcp__web__echo", message="over http") == ("Echo: over http", False)
    await manager.aclose()
    assert transport.client.is_closed


@pytest.mark.parametrize("everything_web", [("sse", "/sse")], indirect=True)
async def test_server_everything_over_the_legacy_sse_transport(
    tmp_path: Path, started: list, everything_web: str
) -> None:
    runtime = runtime_with(tmp_path, {"old": {"type": "sse", "url": everything_web}}, auto=True)
    manager = await start(runtime, started)
    assert state_of(manager, "old")["state"] == "ready", manager.statuses()
    assert manager.servers["old"].session.transport.endpoint.startswith(everything_web[:-4])
    assert await call(runtime, "mcp__old__echo", message="over sse") == ("Echo: over sse", False)


# ---------------------------------------------------------------- tether -p end to end


def run_cli(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    home.mkdir(exist_ok=True)  # the first request waits for the servers as long as they need here
    (home / "config.toml").write_text("mcp_startup_wait = 120\ncontext_window = 200000\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "TETHER"))}
    env.update({"TETHER_HOME": str(home), "OPENAI_API_KEY": "sk-test", "TETHER_PROFILE": "full"})
    return subprocess.run([sys.executable, "-m", "tether", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


def echo_script() -> list[Reply]:
    return [Reply(tool_calls=[("mcp__everything__echo", {"message": "ping"})]), Reply(text="done")]


@pytest.mark.parametrize(("flags", "ran"), [(["--auto"], True), ([], False)])
def test_one_shot_calls_a_real_server_only_when_allowed(tmp_path: Path, flags: list[str], ran: bool) -> None:
    config = write_config(outside_config(tmp_path), {"everything": everything_entry()})
    with FakeServer(echo_script()) as server:
        proc = run_cli(["-p", "echo", "--output-format", "json", "--provider", "openai",
                        "--base-url", server.url + "/v1", "--model", "fake",
                        "--mcp-config", str(config), *flags], tmp_path, tmp_path / "home")
        request = server.bodies("/v1/chat/completions")[0]
    result = json.loads(proc.stdout)
    assert result["mcp_servers"][0]["state"] == "ready"
    assert "mcp__everything__echo" in [t["function"]["name"] for t in request["tools"]]
    call_record = result["tool_calls"][0]
    assert call_record["is_error"] is (not ran)
    if ran:
        assert call_record["summary"].startswith("Echo: ping")


def test_an_untrusted_folders_mcp_json_starts_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    starter = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]}
    write_config(tmp_path / ".mcp.json", {"evil": starter})
    with FakeServer([Reply(text="hi")]) as server:
        proc = run_cli(["-p", "hi", "--output-format", "stream-json", "--provider", "openai",
                        "--base-url", server.url + "/v1", "--model", "fake", "--auto"],
                       tmp_path, tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert "not trusted" in proc.stdout


# ---------------------------------------------------------------- the chat


def test_the_chat_asks_once_for_a_project_server_and_mcp_shows_it(tmp_path: Path) -> None:
    from ptyapp import PtyApp, app_env, openai_args

    from tether.safety.trusted_folders import TrustStore

    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    write_config(project / ".mcp.json", {"fake": fake_entry(at=fake_in(project))})
    TrustStore(home).trust(project)
    with FakeServer() as server, PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_text("declares the MCP server 'fake'")
        app.wait_for_text("Start it now")  # an answer typed before the question is typed ahead
        app.line("y")
        app.wait_for_text("is ready (5 tools)")
        app.line("/mcp")
        app.wait_for_text("fake · stdio · ready · 5 tools")
        app.line("/mcp tools")
        app.wait_for_text("mcp__fake__huge")
        app.line("/mcp reload")
        app.wait_for_text("Restarting the MCP servers")
        app.wait_for_text("fake · stdio · ready · 5 tools")
    servers = load_servers(project, home, (), {}).servers
    assert ApprovalStore(home).is_approved(project, servers[0]), "kept for the next start"


async def test_mcp_prompt_sends_the_prompt_as_the_next_request(tmp_path: Path) -> None:
    pytest.importorskip("mcp.server.mcpserver", reason="the test extra (mcp) is not installed")
    from slash_context import FakeContext, fake_settings

    config = write_config(outside_config(tmp_path),
                          {"sdk": {"command": sys.executable, "args": [str(SDK_SERVER)]}})
    options = RunOptions(root=tmp_path, home=tmp_path / "home", mcp_config=[config])
    runtime = build_runtime(fake_settings("http://127.0.0.1:9", mcp_startup_wait=120), options,
                            SilentUI(), {"PATH": os.environ["PATH"]})
    ctx = FakeContext(runtime)
    try:
        runtime.mcp.manager.start()
        await runtime.mcp.manager.wait_ready(120)
        await ctx.run("/mcp")
        assert "sdk · stdio · ready · 1 tools" in ctx.messages()
        await ctx.run("/mcp prompt")
        assert "sdk review(topic): Ask for a review of a topic." in ctx.messages()
        await ctx.run("/mcp prompt sdk review 'topic=the new parser'")
        assert ctx.turns == ["Please review the new parser."]
        assert ctx.turn_sources == ["MCP server sdk"]  # a server wrote it, not the user
        await ctx.run("/mcp prompt sdk review topic")
        assert "expected key=value" in ctx.messages("warning")[-1]
    finally:
        await runtime.aclose()
