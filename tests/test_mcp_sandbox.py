"""A project's own MCP servers start inside the sandbox commands run in, with the network;
the user's own servers, and every server with the sandbox off, run as the user.

Tests marked `needs_bwrap` start real servers inside bubblewrap."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest
from mcp_helpers import call, fake_in, start, state_of, write_config
from test_sandbox_config import needs_bwrap

from tether.core.ui_protocol import SilentUI
from tether.mcp.config import MCP_FILE
from tether.mcp.entry_files import project_fingerprint
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.safety.project_config import RULES_FILE
from tether.safety.secret_files import CREDENTIALS_FILE
from tether.store.config import load_settings

PROBE_SERVER = """\
import json, os, socket, sys
sys.dont_write_bytecode = True  # the project holds what the test put there, nothing more
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the copy beside it (fake_in)
import mcp_fake_server as fake

def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return type(exc).__name__

def connect(port):
    with socket.create_connection(("127.0.0.1", port), timeout=30):
        pass

def write(path):
    with open(path, "w") as handle:
        handle.write("written by the server")

def report(arguments):
    return {
        "keys_visible": os.path.exists(arguments["keys"]),
        "write_outside": attempt(lambda: write(arguments["outside"])),
        "write_inside": attempt(lambda: write(arguments["inside"])),
        "network": attempt(lambda: connect(arguments["port"])),
        "own_variable": os.environ.get("SERVER_OWN"),
        "tether_variable": os.environ.get("NOT_FOR_SANDBOXES"),
        "path": os.environ.get("PATH"),
    }

fake.PAGES[1].append(fake.tool("probe", "Say what the server can reach."))
plain_call = fake.call

def call(name, arguments):
    if name == "probe":
        return {"content": [{"type": "text", "text": json.dumps(report(arguments))}]}
    return plain_call(name, arguments)

fake.call = call
fake.main("ok")
"""


class Places:
    """The project, TETHER_HOME (with a keys file), a folder outside both, and a listener
    on the loopback: what a server is asked to reach."""

    def __init__(self, tmp_path: Path) -> None:
        self.root, self.home, self.outside = (tmp_path / n for n in ("project", "state", "outside"))
        for folder in (self.root, self.home, self.outside):
            folder.mkdir()
        (self.home / CREDENTIALS_FILE).write_text("{}")
        self.listener = socket.create_server(("127.0.0.1", 0))

    def server_entry(self, script: Path) -> dict:
        fake_in(script.parent)
        script.write_text(PROBE_SERVER)
        return {"command": sys.executable, "args": [str(script)], "env": {"SERVER_OWN": "approved"}}

    def probe_arguments(self) -> dict:
        return {"keys": str(self.home / CREDENTIALS_FILE), "outside": str(self.outside / "x"),
                "inside": str(self.root / "written.txt"), "port": self.listener.getsockname()[1]}


@pytest.fixture
def places(tmp_path: Path) -> Places:
    found = Places(tmp_path)
    yield found
    found.listener.close()


def runtime_for(places: Places, sandbox: str, approve: tuple[str, ...] = ("p",)) -> Runtime:
    """A trusted project, the servers `approve` names approved for this run."""
    settings, _ = load_settings({"provider": "openai", "model": "m", "sandbox": sandbox,
                                 "openai_base_url": "http://127.0.0.1:9/v1"}, {}, places.home)
    options = RunOptions(root=places.root, home=places.home, auto=True, trusted=True,
                         mcp_approve=approve)
    env = {"PATH": os.environ["PATH"], "NOT_FOR_SANDBOXES": "tether's own"}
    return build_runtime(settings, options, SilentUI(), env)


async def probed(runtime: Runtime, started: list, server: str, places: Places) -> dict:
    manager = await start(runtime, started)
    assert state_of(manager, server)["state"] == "ready", state_of(manager, server)
    text, is_error = await call(runtime, f"mcp__{server}__probe", **places.probe_arguments())
    assert not is_error, text
    return json.loads(text)


@needs_bwrap
async def test_a_project_server_runs_inside_the_sandbox_with_the_network(
    places: Places, started: list
) -> None:
    write_config(places.root / MCP_FILE, {"p": places.server_entry(places.root / "srv.py")})
    seen = await probed(runtime_for(places, "auto"), started, "p", places)
    assert seen["keys_visible"] is False, "TETHER_HOME is hidden from the server"
    assert seen["write_outside"] != "ok" and not (places.outside / "x").exists()
    assert seen["write_inside"] == "ok" and (places.root / "written.txt").exists()
    assert seen["network"] == "ok", "a project server keeps the network"
    assert seen["own_variable"] == "approved", "the entry's own env reaches it"
    assert seen["tether_variable"] is None, "only the variables the sandbox allows reach it"
    assert seen["path"] and str(places.root) not in seen["path"]


@needs_bwrap
async def test_a_project_server_in_the_sandbox_leaves_no_placeholder_behind(
    places: Places, started: list
) -> None:
    write_config(places.root / MCP_FILE, {"p": places.server_entry(places.root / "srv.py")})
    before = sorted(p.name for p in places.root.iterdir())
    runtime = runtime_for(places, "workspace-write")
    manager = await start(runtime, started)
    assert state_of(manager, "p")["state"] == "ready", state_of(manager, "p")
    assert (places.root / ".permissions.json").exists(), "held read-only while the server runs"
    await manager.aclose()
    assert sorted(p.name for p in places.root.iterdir()) == before


@needs_bwrap
async def test_two_project_servers_both_start_inside_the_sandbox(
    places: Places, started: list
) -> None:
    """The first one's sandbox makes placeholders (`.permissions.json`): they are not a
    change of the project's files that keeps the second one from starting."""
    entry = places.server_entry(places.root / "srv.py")
    write_config(places.root / MCP_FILE, {"p": entry, "q": entry})
    runtime = runtime_for(places, "auto", approve=("p", "q"))
    started.append(runtime)
    assert runtime.mcp is not None
    manager = runtime.mcp.manager
    for name in ("p", "q"):  # one after the other: q starts while p's sandbox runs
        manager.start([name])
        await manager.wait_ready(60)
    for name in ("p", "q"):
        assert state_of(manager, name)["state"] == "ready", state_of(manager, name)["error"]


@needs_bwrap
async def test_a_users_server_still_runs_outside_the_sandbox(places: Places, started: list) -> None:
    write_config(places.home / "mcp.json", {"u": places.server_entry(places.outside.parent / "user_srv.py")})
    seen = await probed(runtime_for(places, "auto"), started, "u", places)
    assert seen["keys_visible"] is True
    assert seen["write_outside"] == "ok" and (places.outside / "x").exists()
    assert seen["tether_variable"] == "tether's own"


async def test_with_the_sandbox_off_a_project_server_runs_as_before(
    places: Places, started: list
) -> None:
    write_config(places.root / MCP_FILE, {"p": places.server_entry(places.root / "srv.py")})
    seen = await probed(runtime_for(places, "off"), started, "p", places)
    assert seen["write_outside"] == "ok" and (places.outside / "x").exists()
    assert seen["keys_visible"] is True and seen["tether_variable"] == "tether's own"


async def test_a_chosen_sandbox_that_cannot_start_keeps_a_project_server_from_starting(
    places: Places, started: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dir = tmp_path / "fakebin"
    fake_dir.mkdir()
    fake = fake_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    write_config(places.root / MCP_FILE, {"p": places.server_entry(places.root / "srv.py")})
    runtime = runtime_for(places, "workspace-write")
    manager = await start(runtime, started)
    state = state_of(manager, "p")
    assert state["state"] == "failed" and "No permissions to create new namespace" in state["error"]
    assert isinstance(runtime.ui, SilentUI)
    said = [text for _, text in runtime.ui.notices if "MCP server 'p' did not start" in text]
    assert len(said) == 1 and "\n" not in said[0] and "runs only inside it" in said[0]
    assert not (places.root / "written.txt").exists()


def test_the_fingerprint_reads_a_config_placeholder_as_absent_and_any_other_text_as_a_change(
    tmp_path: Path,
) -> None:
    (tmp_path / "srv.py").write_text("print('hi')\n")
    absent = project_fingerprint(tmp_path)
    rules = tmp_path / RULES_FILE
    rules.write_bytes(b"{}\n")  # what a sandbox puts there while it runs
    assert project_fingerprint(tmp_path) == absent
    rules.write_text('{"allow": ["run_cmd"]}')
    assert project_fingerprint(tmp_path) != absent
    rules.unlink()
    (tmp_path / "rules.txt").write_bytes(b"{}\n")
    rules.symlink_to("rules.txt")  # tether's placeholders are never links
    with_link = project_fingerprint(tmp_path)
    rules.unlink()
    assert with_link != project_fingerprint(tmp_path)
