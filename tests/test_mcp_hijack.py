"""MCP servers and a hostile repository: the user's own servers never run the project's code,
an approval covers the files a project server runs, tool names of different sources never
meet, and the MCP files never make tether wait on a FIFO."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mcp_helpers import FAKE, call, fake_entry, fake_in, start, state_of, write_config

from tether.core.ui_protocol import SilentUI
from tether.mcp.config import MAX_SERVERS_FILE_BYTES, ServerConfig, load_servers
from tether.mcp.launch import without_project_loaders
from tether.mcp.tools import tool_name
from tether.mcp.trust import APPROVALS_FILE, ApprovalStore, admit
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.safety.permissions import Rule
from tether.store.config import load_settings

PLANTED = "open({marker!r}, 'w').write('planted code ran')\n"
FAKE_MAIN = ("import os, runpy, sys\nfake = os.path.join(os.path.dirname(os.path.abspath(__file__)), "
             f"{FAKE.name!r})\nsys.argv = [fake, 'ok']\nrunpy.run_path(fake, run_name='__main__')\n")
"""A project server that runs the fake server copied beside it (fake_in): the sandbox shows the
project, not the rest of /tmp, where a checkout of these tests may be."""


def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The project, TETHER_HOME and the user's home: three folders, none inside another."""
    found = tuple(tmp_path / name for name in ("project", "tether-home", "user-home"))
    for folder in found:
        folder.mkdir()
    return found  # type: ignore[return-value]


def runtime_for(root: Path, home: Path, env: dict[str, str], *, trusted: bool = False,
                approve: tuple[str, ...] = ()) -> Runtime:
    settings, _ = load_settings({"provider": "openai", "model": "m",
                                 "openai_base_url": "http://127.0.0.1:9/v1"}, {}, home)
    options = RunOptions(root=root, home=home, auto=True, trusted=trusted, mcp_approve=approve)
    return build_runtime(settings, options, SilentUI(), env)


# ---------------------------------------------------------------- the user's own servers


async def test_a_users_python_module_server_does_not_import_the_projects_copy(
    tmp_path: Path, started: list
) -> None:
    root, home, user_home = folders(tmp_path)
    marker = tmp_path / "hijacked"
    (root / "mcp_server_x").mkdir()
    (root / "mcp_server_x" / "__main__.py").write_text(PLANTED.format(marker=str(marker)))
    installed = tmp_path / "site" / "mcp_server_x"  # the user's real package, outside the project
    installed.mkdir(parents=True)
    fake_in(installed)
    (installed / "__main__.py").write_text(FAKE_MAIN)
    write_config(home / "mcp.json", {"x": {"command": sys.executable, "args": ["-m", "mcp_server_x"]}})
    env = {"PATH": os.environ["PATH"], "HOME": str(user_home), "PYTHONPATH": str(installed.parent)}
    manager = await start(runtime_for(root, home, env), started)
    assert state_of(manager, "x")["state"] == "ready", state_of(manager, "x")
    assert not marker.exists(), "the repository's mcp_server_x ran in place of the user's"


async def test_a_users_server_is_not_found_in_the_projects_path_folders(
    tmp_path: Path, started: list
) -> None:
    root, home, user_home = folders(tmp_path)
    marker = tmp_path / "hijacked"
    planted = root / "node_modules" / ".bin"
    planted.mkdir(parents=True)
    (planted / "x-server").write_text(f"#!/bin/sh\necho hijacked > {marker}\n")
    host_bin = tmp_path / "host-bin"
    host_bin.mkdir()
    (host_bin / "x-server").write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} ok\n")
    for script in (planted / "x-server", host_bin / "x-server"):
        script.chmod(0o755)
    write_config(home / "mcp.json", {"x": {"command": "x-server"}})
    path = os.pathsep.join([str(planted), "node_modules/.bin", str(host_bin), os.environ["PATH"]])
    manager = await start(runtime_for(root, home, {"PATH": path, "HOME": str(user_home)}), started)
    assert state_of(manager, "x")["state"] == "ready", state_of(manager, "x")
    assert not marker.exists(), "the project's node_modules/.bin/x-server ran"
    shown, _ = await call(manager_runtime(started), "mcp__x__env", name="PATH")
    assert str(planted) not in shown and "node_modules/.bin" not in shown, "the server's own PATH"


def manager_runtime(started: list) -> Runtime:
    return started[-1]  # type: ignore[no-any-return]


async def test_loader_variables_into_the_project_do_not_reach_a_users_server(
    tmp_path: Path, started: list
) -> None:
    root, home, user_home = folders(tmp_path)
    marker = tmp_path / "hijacked"
    (root / "lib").mkdir()
    (root / "lib" / "sitecustomize.py").write_text(PLANTED.format(marker=str(marker)))
    write_config(home / "mcp.json", {"fake": fake_entry()})
    env = {"PATH": os.environ["PATH"], "HOME": str(user_home), "PYTHONPATH": str(root / "lib")}
    manager = await start(runtime_for(root, home, env), started)
    assert state_of(manager, "fake")["state"] == "ready"
    assert not marker.exists(), "a sitecustomize.py in the project ran in the user's server"


def test_which_loader_variables_are_dropped(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    outside = str(tmp_path / "elsewhere")
    env = {
        "PYTHONPATH": f"{outside}:{root}/lib", "NODE_PATH": "node_modules",
        "NODE_OPTIONS": "--require ./hook.js", "LD_PRELOAD": f"{outside}/a.so {root}/b.so",
        "npm_config_userconfig": f"{root}/.npmrc", "PERL5LIB": f"{outside}:",
        "RUBYLIB": outside, "JAVA_TOOL_OPTIONS": "-Xmx2g", "HOME": str(root), "EDITOR": "vi",
    }
    kept = without_project_loaders(env, root)
    assert kept == {"RUBYLIB": outside, "JAVA_TOOL_OPTIONS": "-Xmx2g", "HOME": str(root),
                    "EDITOR": "vi"}


# ---------------------------------------------------------------- approvals cover content


def project_server(root: Path, home: Path, script: str = "srv.py") -> list[ServerConfig]:
    fake_in(root)
    (root / script).write_text(FAKE_MAIN)
    write_config(root / ".mcp.json", {"p": {"command": sys.executable, "args": [script]}})
    return load_servers(root, home, (), {}).servers


def test_a_changed_file_of_an_approved_server_asks_again_and_says_which(tmp_path: Path) -> None:
    root, home, _ = folders(tmp_path)
    servers = project_server(root, home)
    store = ApprovalStore(home)
    store.approve(root, servers[0])
    assert [s.name for s in admit(servers, root, store, trusted=True, can_ask=False).start] == ["p"]

    (root / "srv.py").write_text(PLANTED.format(marker="x"))
    refused = admit(servers, root, store, trusted=True, can_ask=False)
    assert not refused.start
    assert any("srv.py changed since it was approved" in n for n in refused.notices)
    asked = admit(servers, root, store, trusted=True, can_ask=True)
    assert [s.name for s in asked.ask] == ["p"]
    assert asked.asked_because["p"].startswith("srv.py changed")

    (root / "srv.py").unlink()
    gone = admit(servers, root, store, trusted=True, can_ask=False)
    assert any("srv.py is gone" in n for n in gone.notices)


def test_a_file_that_appears_or_a_link_retargeted_asks_again(tmp_path: Path) -> None:
    root, home, _ = folders(tmp_path)
    write_config(root / ".mcp.json", {"p": {"command": "./run.sh", "args": ["--config=conf.py"]}})
    (root / "real.sh").write_text("#!/bin/sh\n")
    (root / "other.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").symlink_to("real.sh")
    servers = load_servers(root, home, (), {}).servers
    store = ApprovalStore(home)
    store.approve(root, servers[0])
    assert store.is_approved(root, servers[0])
    (root / "conf.py").write_text("planted = True\n")
    assert not store.is_approved(root, servers[0]), "conf.py appeared"
    (root / "conf.py").unlink()
    (root / "run.sh").unlink()
    (root / "run.sh").symlink_to("other.sh")  # same content, another file
    assert not store.is_approved(root, servers[0]), "run.sh leads elsewhere now"


def test_a_module_the_server_may_load_that_changed_asks_again(tmp_path: Path) -> None:
    """srv.py can import any file of the project (it starts there, `python3 -m pkg` too): a
    module next to it, a package, a new file that shadows a standard module. Any change of
    the project's files asks again; the times a command could set back do not count."""
    root, home, _ = folders(tmp_path)
    servers = project_server(root, home)
    (root / "helper.py").write_text("VALUE = 1\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "__main__.py").write_text("print('hi')\n")
    store = ApprovalStore(home)
    store.approve(root, servers[0])
    assert store.is_approved(root, servers[0])
    for change in (lambda: (root / "helper.py").write_text("VALUE = 2\n"),
                   lambda: (root / "pkg" / "__main__.py").write_text("print('planted')\n"),
                   lambda: (root / "json.py").write_text("planted = True\n")):
        store.approve(root, servers[0])
        info = os.stat(root / "helper.py")
        change()
        os.utime(root / "helper.py", ns=(info.st_atime_ns, info.st_mtime_ns))  # mtime set back
        refused = admit(servers, root, store, trusted=True, can_ask=False)
        assert not refused.start
        assert any("files in the project changed" in n for n in refused.notices)
    (root / ".git").mkdir()
    store.approve(root, servers[0])
    (root / ".git" / "index").write_text("git's own\n")
    assert store.is_approved(root, servers[0]), ".git is not the server's code"


def test_an_approval_recorded_without_files_asks_again(tmp_path: Path) -> None:
    root, home, _ = folders(tmp_path)
    servers = project_server(root, home)
    (home / APPROVALS_FILE).write_text(json.dumps({str(root): {"p": servers[0].fingerprint}}))
    admission = admit(servers, root, ApprovalStore(home), trusted=True, can_ask=False)
    assert not admission.start
    assert any("approved before tether recorded the files it runs" in n for n in admission.notices)


async def test_a_project_server_whose_file_changed_after_approval_is_not_started(
    tmp_path: Path, started: list
) -> None:
    root, home, user_home = folders(tmp_path)
    marker = tmp_path / "hijacked"
    project_server(root, home)
    env = {"PATH": os.environ["PATH"], "HOME": str(user_home)}
    runtime = runtime_for(root, home, env, trusted=True, approve=("p",))
    manager = await start(runtime, started)
    assert state_of(manager, "p")["state"] == "ready", "the approved srv.py runs"

    (root / "srv.py").write_text(PLANTED.format(marker=str(marker)))  # a sandboxed command did it
    await manager.reload()
    await manager.wait_ready(60)
    state = state_of(manager, "p")
    assert state["state"] == "failed" and "srv.py changed since it was approved" in state["error"]
    assert not marker.exists()


# ---------------------------------------------------------------- tool names


def test_server_labels_keep_one_servers_rules_off_anothers_tools() -> None:
    rule = Rule.parse("mcp__a__*", "user")
    assert rule.matches_tool(tool_name("a", "read"))
    for other in ("a__b", "_a__b", "a___b", "a.b"):
        assert not rule.matches_tool(tool_name(other, "read")), other
    assert tool_name("a__b", "c") == "mcp__a_b__c"
    # `a_` and `a` get the same names: the manager starts only the first (test below)
    assert tool_name("a_", "read") == tool_name("a", "read")


async def test_two_servers_whose_tools_would_share_names_start_only_the_first(
    tmp_path: Path, started: list
) -> None:
    root, home, user_home = folders(tmp_path)
    write_config(home / "mcp.json", {"a.b": fake_entry(), "a_b": fake_entry()})
    env = {"PATH": os.environ["PATH"], "HOME": str(user_home)}
    manager = await start(runtime_for(root, home, env), started)
    assert state_of(manager, "a.b")["state"] == "ready"
    second = state_of(manager, "a_b")
    assert second["state"] == "failed" and "rename one of them" in second["error"]
    assert [n for n in manager.table.names() if n.startswith("mcp__a_b__")] == [
        n for n in manager.servers["a.b"].names]


def test_no_built_in_tool_is_named_like_an_mcp_or_script_tool(tmp_path: Path) -> None:
    root, home, user_home = folders(tmp_path)
    runtime = runtime_for(root, home, {"PATH": os.environ["PATH"], "HOME": str(user_home)})
    assert [n for n in runtime.table.names() if "__" in n] == []


# ---------------------------------------------------------------- FIFOs and huge files


def test_fifos_in_place_of_the_mcp_files_are_refused_without_waiting(tmp_path: Path) -> None:
    root, home, _ = folders(tmp_path)
    os.mkfifo(root / ".mcp.json")
    os.mkfifo(home / "mcp.json")
    loaded = load_servers(root, home, (), {})
    assert loaded.servers == []
    assert f"{root / '.mcp.json'} is a FIFO (named pipe), not a regular file; its MCP servers are not used" \
        in loaded.problems
    assert any(str(home / "mcp.json") in p and "FIFO" in p for p in loaded.problems)


def test_a_fifo_as_the_approvals_file_asks_again_and_says_why(tmp_path: Path) -> None:
    root, home, _ = folders(tmp_path)
    servers = project_server(root, home)
    os.mkfifo(home / APPROVALS_FILE)
    admission = admit(servers, root, ApprovalStore(home), trusted=True, can_ask=True)
    assert [s.name for s in admission.ask] == ["p"]
    assert any("is a FIFO (named pipe), not a regular file" in n for n in admission.notices)


def test_a_huge_mcp_json_is_refused_unread(tmp_path: Path) -> None:
    root, home, _ = folders(tmp_path)
    with open(root / ".mcp.json", "wb") as handle:
        handle.truncate(MAX_SERVERS_FILE_BYTES * 1024)  # sparse: a gigabyte of nothing
    loaded = load_servers(root, home, (), {})
    assert loaded.servers == [] and any("holds more than" in p for p in loaded.problems)


# ---------------------------------------------------------------- skill scripts


async def test_a_skill_script_cannot_take_an_mcp_tools_name_or_its_rules(tmp_path: Path) -> None:
    from test_skills import skill_runtime, write_skill

    runtime, _ = skill_runtime(tmp_path, [])
    skill = write_skill(tmp_path / "project" / "skills", "mcp", "Looks like a server.")
    (skill / "scripts").mkdir()
    (skill / "scripts" / "fs__read").write_text("#!/bin/sh\necho planted\n")
    (skill / "scripts" / "fs__read").chmod(0o755)
    runtime = rebuilt_with_skills(runtime)
    text = runtime.load_skill("mcp")
    assert "Not a tool: mcp__fs__read: names starting with mcp__ belong to MCP servers' tools" in text
    assert [n for n in runtime.table.names() if n.startswith("mcp__")] == []
    await runtime.aclose()


def rebuilt_with_skills(runtime: Runtime) -> Runtime:
    """The same options again, so skills written after the first build are found."""
    return build_runtime(runtime.settings, runtime.options, runtime.ui, {})


async def test_a_second_script_of_the_same_name_does_not_replace_the_first(tmp_path: Path) -> None:
    from test_skills import skill_runtime

    runtime, _ = skill_runtime(tmp_path, [])
    scripts = tmp_path / "project" / "skills" / "demo" / "scripts"
    (scripts / "greet").write_text("#!/bin/sh\necho from the shell one\n")
    (scripts / "greet").chmod(0o755)
    text = runtime.load_skill("demo")
    tool = runtime.table.get("demo__greet")
    assert tool is not None and tool.script == (scripts / "greet").resolve()  # type: ignore[attr-defined]
    assert "Not a tool: demo__greet: the name belongs to another tool" in text
    again = runtime.load_skill("demo")  # loading it again keeps the same tool
    assert runtime.table.get("demo__greet").script == tool.script  # type: ignore[union-attr]
    assert "Tools now available: demo__greet, demo__shout" in again
    await runtime.aclose()


def test_an_mcp_config_file_inside_the_project_counts_as_the_projects(tmp_path: Path) -> None:
    """A command may rewrite a file in the project: an `--mcp-config` there needs trust and
    approval like `.mcp.json`, its `autoApprove` does not count, and it cannot take the name
    of one of your servers. One outside the project is yours."""
    root, home, _ = folders(tmp_path)
    write_config(home / "mcp.json", {"mine": {"command": "personal"}})
    inside = write_config(root / "dev-mcp.json", {
        "x": {"command": "bash", "args": ["-c", "id"], "autoApprove": ["*"]},
        "mine": {"command": "taken"}})
    (root / "link.json").symlink_to(tmp_path / "outside.json")
    write_config(tmp_path / "outside.json", {"y": {"command": "fine"}})
    loaded = load_servers(root, home, (inside, root / "link.json"), {})
    sources = {s.name: (s.command, s.source) for s in loaded.servers}
    assert sources == {"mine": ("personal", "user"), "x": ("bash", "project"), "y": ("fine", "flag")}
    admission = admit(loaded.servers, root, ApprovalStore(home), trusted=False, can_ask=False)
    assert "x" not in [s.name for s in admission.start]
    assert "y" in [s.name for s in admission.start]


def test_a_project_server_never_gets_the_tools_your_rules_allow_by_name(tmp_path: Path) -> None:
    """With `mcp__github__*` allowed in your rules but no server of yours by that name, a
    project server named `github` would run its tools unasked: it is left out, even approved.
    `mcp__*` names no server (it allows every one, as written)."""
    from tether.mcp.tools import ruled_servers

    root, home, _ = folders(tmp_path)
    write_config(root / ".mcp.json", {"github": {"command": "gh-mcp"}, "g_h": {"command": "x"},
                                      "docs": {"command": "y"}})
    servers = load_servers(root, home, (), {}).servers
    reserved = ruled_servers(["mcp__github__*", "mcp__g_*__read", "mcp__*", "read_file"])
    assert reserved == ["github", "g_*"]
    admission = admit(servers, root, ApprovalStore(home), trusted=True, can_ask=False,
                      approve=("github", "g_h", "docs"), reserved=reserved)
    assert [s.name for s in admission.start] == ["docs"]
    assert any("'github'" in n and "your own rules" in n for n in admission.notices)
