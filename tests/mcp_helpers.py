"""Where the tests find MCP servers (our fake one, the npm ones `.ci/run` installs, the PyPI
one), and a runtime with servers attached, started and called through dispatch."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tether.core.messages import ToolCall
from tether.core.ui_protocol import SilentUI
from tether.mcp.manager import McpManager
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.store.config import load_settings

HERE = Path(__file__).parent
FAKE = HERE / "mcp_fake_server.py"
NPM_CACHE = Path(os.environ.get("TETHER_CI_NPM") or Path.home() / ".cache" / "tether-ci-npm")
NPM_PACKAGES = ("@modelcontextprotocol/server-everything@2026.8.31",
                "@modelcontextprotocol/server-filesystem@2026.8.31")
"""What .ci/run installs into NPM_CACHE first; a test installs the same on first use."""
NPM_BINS = ("mcp-server-everything", "mcp-server-filesystem")
LOCALHOST_ONLY = HERE / "mcp_localhost.cjs"
SDK_SERVER = HERE / "mcp_sdk_server.py"


def fake_entry(mode: str = "ok", at: Path = FAKE, **extra: object) -> dict:
    return {"command": sys.executable, "args": [str(at), mode], **extra}


def fake_in(project: Path) -> Path:
    """A copy of the fake server inside `project`: a project server runs in the sandbox, which
    shows the project but not the rest of /tmp, where a checkout of these tests may be."""
    copy = project / FAKE.name
    shutil.copyfile(FAKE, copy)
    return copy


def outside_config(project: Path) -> Path:
    """Where a test keeps its `--mcp-config` file: beside the project, not in it (a file in
    the project counts as the project's own, needing trust and approval)."""
    return project.parent / f"{project.name}.mcp-servers.json"


def write_config(path: Path, servers: dict) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def npm_bin(name: str) -> str:
    """A server from npm: installed by .ci/run, else into the cache on first use; skipped, with
    the reason, where there is no Node.js or npm, or the install failed (offline)."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: the npm MCP servers cannot run")
    path = NPM_CACHE / "node_modules" / ".bin" / name
    if not path.exists():
        problem = install_npm_servers()
        if problem or not path.exists():
            pytest.skip(problem or f"the npm install put no {name} in {NPM_CACHE}")
    return str(path)


@functools.cache
def install_npm_servers() -> str:
    """Install NPM_PACKAGES into NPM_CACHE once; "" when done, else why not. xdist workers
    take turns on a lock file in the cache, so one installs and the others find it done; a
    failure is remembered for the rest of this worker's tests."""
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed: the npm MCP test servers cannot be installed"
    try:
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        with open(NPM_CACHE / ".install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if npm_servers_installed():
                return ""
            proc = subprocess.run(
                [npm, "install", "--prefix", str(NPM_CACHE), "--no-audit", "--no-fund",
                 "--loglevel=error", *NPM_PACKAGES],
                stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
            )
    except OSError as exc:
        return f"the npm MCP test servers cannot be installed in {NPM_CACHE}: {exc}"
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or ["no output"])[0]  # npm's error code
        return f"`npm install` of the MCP test servers failed (offline?): {said}"
    return ""


def npm_servers_installed() -> bool:
    bins = NPM_CACHE / "node_modules" / ".bin"
    return all((bins / name).exists() for name in NPM_BINS)


def everything_entry() -> dict:
    return {"command": npm_bin("mcp-server-everything"), "args": ["stdio"]}


def filesystem_entry(folder: Path) -> dict:
    return {"command": npm_bin("mcp-server-filesystem"), "args": [str(folder)]}


def time_entry() -> dict:
    pytest.importorskip("mcp_server_time", reason="the test extra (mcp-server-time) is not installed")
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


# ---------------------------------------------------------------- a runtime with servers


def runtime_with(tmp_path: Path, servers: dict, *, auto: bool = False, deny: tuple[str, ...] = (),
                 env: dict[str, str] | None = None, home: Path | None = None,
                 **settings: object) -> Runtime:
    """A runtime whose project is `tmp_path` (TETHER_HOME inside it unless `home` is given)."""
    home = home or tmp_path / "home"
    config = write_config(outside_config(tmp_path), servers)
    given = {"provider": "openai", "model": "m", "openai_base_url": "http://127.0.0.1:9/v1", **settings}
    loaded, _ = load_settings(given, {}, home)
    options = RunOptions(root=tmp_path, home=home, auto=auto, deny=deny, mcp_config=[config])
    environment = env if env is not None else {"PATH": os.environ["PATH"]}
    return build_runtime(loaded, options, SilentUI(), environment)


async def start(runtime: Runtime, runtimes: list[Runtime], wait: float = 60) -> McpManager:
    runtimes.append(runtime)
    assert runtime.mcp is not None
    runtime.mcp.manager.start()
    await runtime.mcp.manager.wait_ready(wait)
    runtime.set_menu()
    return runtime.mcp.manager


async def call(runtime: Runtime, tool: str, **arguments: object) -> tuple[str, bool]:
    """One call as a request of its own, as a user's request would start it."""
    runtime.new_request("")
    result, _ = await runtime.loop.dispatcher.dispatch(ToolCall("c1", tool, dict(arguments)))
    return result.content, result.is_error


def state_of(manager: McpManager, name: str) -> dict:
    return next(s for s in manager.statuses() if s["name"] == name)
