"""Where the tests find MCP servers: our fake one, the npm ones `.ci/run` installs, the PyPI one."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

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
