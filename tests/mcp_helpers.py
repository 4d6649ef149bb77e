"""Where the tests find MCP servers (our fake one, the npm ones `.ci/run` installs, the PyPI
one), and a runtime with servers attached, started and called through dispatch."""

from __future__ import annotations

import json
import os
import shutil
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
NPM_PACKAGES = ("@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem")
LOCALHOST_ONLY = HERE / "mcp_localhost.cjs"
SDK_SERVER = HERE / "mcp_sdk_server.py"


def fake_entry(mode: str = "ok", **extra: object) -> dict:
    return {"command": sys.executable, "args": [str(FAKE), mode], **extra}


def write_config(path: Path, servers: dict) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def npm_bin(name: str) -> str:
    """A server installed by .ci/run; skipped only where there is no Node.js at all."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: the npm MCP servers cannot run")
    path = NPM_CACHE / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run .ci/run (or `npm install --prefix {NPM_CACHE} "
                    f"{' '.join(NPM_PACKAGES)}`) once to install the MCP test servers")
    return str(path)


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
    config = write_config(tmp_path / "servers.json", servers)
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
