"""What a start leaves for later: building and starting the runtime loads neither the assist
package, the answer checks, the hooks' runner, the skills' book (none is configured here),
the handler modules of the file, code-structure and web tools (their table names each handler
by where it lives), repo_map's modules, search_web's, the small profile's edit variants, an MCP
server's launch (no server is configured here), nor any tool's parameters model (nor pydantic
with them); the first turn, the first call of the tool, or the warm-up the chat runs once
ready, loads them. Nor httpx (with httpcore, h11 and anyio): a model server on this machine
over plain http is asked what the model can do without it; the first chat request, or the
warm-up, loads it. Nor the standard modules only a call, a reply or an error page needs (call
ids' uuid, difflib's matching, html's entities). And the collector waits for the start. A
fresh interpreter each, so that nothing an earlier test imported counts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakeserver import FakeServer

LATE = ("tether.tools.params", "tether.mcp.params", "tether.core.tool_params", "tether.assist",
        "tether.engine.answer_checks", "tether.hooks.runner", "tether.skills.book",
        "tether.tools.repo_map", "tether.tools.web_search", "tether.tools.web_text",
        "tether.tools.file_edit", "tether.tools.file_search", "tether.tools.code_notes",
        "tether.mcp.launch", "tether.mcp.stdio",
        # the handlers' modules of the tools whose table names them by where they live
        "tether.tools.files", "tether.tools.file_text", "tether.tools.copy_check",
        "tether.tools.outside_values", "tether.tools.nearby", "tether.tools._paths",
        "tether.tools.ast_tools", "tether.tools.ast_grammars", "tether.tools.ast_outline",
        "tether.tools.web", "tether.tools.web_fetch",
        "uuid", "difflib", "html")
EDIT_VARIANTS = ("tether.tools.simple_edit", "tether.tools.edit_syntax", "tether.tools.edit_blanks",
                 "tether.tools.edit_repair")
"""The small profile's edit_file and read_file: made by a start of that profile only."""
HTTP_CLIENT = ("httpx", "httpcore", "h11", "anyio")
WATCHED = ("tether", *HTTP_CLIENT, "uuid", "difflib", "html")
"""The packages whose modules a run reports (the standard library's other modules load anyway)."""
FIRST_CALLS = (
    ("write_file", {"filepath": "notes.txt", "content": "one\n"}),
    ("read_file", {"filepath": "notes.txt"}),
    ("edit_file", {"filepath": "notes.txt", "old_content": "one", "new_content": "two"}),
    ("copy_file", {"source": "notes.txt", "destination": "copy.txt"}),
    ("create_dir", {"path": "docs"}),
    ("list_dir", {"path": "."}),
    ("delete_file", {"filepath": "copy.txt"}),
    ("search_in_file", {"pattern": "two", "path": "."}),
    ("get_code_skeleton", {"filepath": "main.py"}),
    ("repo_map", {}),
    ("get_url", {"url": "{url}/v1/models"}),
)
"""Each tool whose handler loads at its first call, called as a model would (get_url reads
the fake server's model list: an allow rule names its address)."""

SCRIPT = """
import io, json, sys
from pathlib import Path
from tether.engine.turn_assist import TurnChecks
from tether.runtime import RunOptions, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI

root, home, step, url = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
WATCHED, FIRST_CALLS = json.loads(sys.argv[6]), json.loads(sys.argv[7])
settings = {"provider": "openai", "model": "m", "openai_base_url": url + "/v1", "sandbox": "off",
            "profile": sys.argv[5]}
loaded, _ = load_settings(settings, {}, home)
allow = [f"get_url({url}/*)"] if step == "first" else []
runtime = build_runtime(loaded, RunOptions(root=root, home=home, auto=True, allow=allow),
                        HeadlessUI(out=io.StringIO(), err=io.StringIO()), {})
results = {}
if step == "start":  # what the model can do, asked of the server as the chat does before ready
    import asyncio
    asyncio.run(runtime.start())
elif step == "turn":
    runtime.loop.assist.start("What does main.py do?", TurnChecks())
elif step == "warm":
    runtime.warm_up()
elif step == "tools":  # repo_map and search_in_file called as the model would; search_web's searcher made
    import asyncio
    from tether.core.messages import ToolCall
    for call in (ToolCall("1", "repo_map", {}), ToolCall("2", "search_in_file", {"pattern": "x", "path": "."})):
        result, _ = asyncio.run(runtime.loop.dispatcher.dispatch(call))
        assert not result.is_error, result.content
    runtime.table.get("search_web").handler.__self__.searcher
elif step == "first":  # each tool whose handler loads late, called once as the model would
    import asyncio
    from tether.core.messages import ToolCall
    (root / "main.py").write_text("def main():\\n    return 1\\n")
    for number, (name, arguments) in enumerate(FIRST_CALLS):
        arguments = {k: v.replace("{url}", url) for k, v in arguments.items()}
        result, _ = asyncio.run(runtime.loop.dispatcher.dispatch(ToolCall(str(number), name, arguments)))
        results[name] = [result.is_error, result.content]
# what is loaded now, before the models are read below (which loads them)
modules = sorted(m for m in sys.modules if m.split(".")[0] in WATCHED)
pydantic = "pydantic" in sys.modules
params = [tool.params for tool in runtime.table]
print(json.dumps({"modules": modules, "built": [p.__name__ for p in params if p.__pydantic_complete__],
                  "pydantic": pydantic, "results": results}))
"""


def loaded_after(step: str, tmp_path: Path) -> tuple[set[str], list[str]]:
    modules, built, _ = loaded_with_pydantic(step, tmp_path)
    return modules, built


def loaded_with_pydantic(step: str, tmp_path: Path, url: str = "http://127.0.0.1:9",
                         profile: str = "full") -> tuple[set[str], list[str], bool]:
    """The modules of WATCHED loaded, the parameters models built, and whether pydantic was
    imported before the models were read, after building the runtime and then `step`
    ("build": nothing more, "start": the start against the server at `url`, "turn": a turn's
    start, "warm": the warm-up, "tools": calls of repo_map and search_web, "first": FIRST_CALLS)."""
    found = run_step(step, tmp_path, url, profile)
    return set(found["modules"]), found["built"], found["pydantic"]


def run_step(step: str, tmp_path: Path, url: str, profile: str = "full") -> dict[str, Any]:
    """What SCRIPT reports after building the runtime and `step`, in a fresh interpreter."""
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(root), str(home), step, url, profile,
                           json.dumps(WATCHED), json.dumps(FIRST_CALLS)], capture_output=True, text=True,
                          check=True)
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_building_the_runtime_loads_no_assist_checks_hooks_or_skills(tmp_path: Path) -> None:
    modules, built = loaded_after("build", tmp_path)
    assert "tether.runtime" in modules
    assert modules.isdisjoint(LATE + EDIT_VARIANTS)
    assert built == []  # every schema waits for the first request that offers the tool


def test_building_and_starting_the_runtime_import_no_parameters_model_nor_pydantic(tmp_path: Path) -> None:
    """Ready (the chat's status line names the protocol) needs neither: the models and
    pydantic load with the first request's menu, or the warm-up after ready."""
    with FakeServer() as server:
        for step, profile in (("build", "full"), ("start", "full"), ("start", "small")):
            modules, _, pydantic = loaded_with_pydantic(step, tmp_path, server.url, profile)
            assert not pydantic, (step, profile)  # the small profile's variants load nothing either
            assert modules.isdisjoint(LATE), (step, profile)
            assert modules.isdisjoint(EDIT_VARIANTS) == (profile == "full"), (step, profile)


def test_starting_against_a_local_server_asks_it_without_httpx(tmp_path: Path) -> None:
    """The model list was asked (over plain http, of 127.0.0.1) with neither httpx nor the
    modules it brings; the warm-up after ready loads it for the first request."""
    with FakeServer() as server:
        for step in ("build", "start"):
            modules, _, _ = loaded_with_pydantic(step, tmp_path, server.url)
            assert not {m.split(".")[0] for m in modules} & set(HTTP_CLIENT), step
        assert [path for path, _ in server.requests] == ["/v1/models"]
    modules, _ = loaded_after("warm", tmp_path)
    assert "httpx" in modules


def test_a_turn_loads_the_assist_package_when_it_starts(tmp_path: Path) -> None:
    modules, _ = loaded_after("turn", tmp_path)
    assert {"tether.assist", "tether.engine.answer_checks"} <= modules


def test_repo_map_search_in_file_and_search_web_load_their_modules_when_used(tmp_path: Path) -> None:
    modules, built = loaded_after("tools", tmp_path)
    assert {"tether.tools.repo_map", "tether.tools.web_search", "tether.tools.file_search",
            "tether.tools.ast_tools", "tether.tools.web"} <= modules
    assert "RepoMapParams" in built and "ReadFileParams" not in built
    assert "tether.tools.files" not in modules  # no tool of its own was called


def test_the_tools_whose_handlers_load_late_work_at_their_first_call(tmp_path: Path) -> None:
    """In a fresh interpreter, as a model would call them: each handler's module loads at the
    tool's first call (the code-structure and web tools' shared object with it), and the
    call does its work."""
    with FakeServer() as server:
        found = run_step("first", tmp_path, server.url)
    results = found["results"]
    assert list(results) == [name for name, _ in FIRST_CALLS]
    for name, (is_error, content) in results.items():
        assert not is_error, (name, content)
    assert (tmp_path / "project" / "notes.txt").read_text() == "two\n"
    assert not (tmp_path / "project" / "copy.txt").exists()
    assert "notes.txt:1: two" in results["search_in_file"][1]
    assert "def main()" in results["get_code_skeleton"][1]
    assert '"object": "list"' in results["get_url"][1]
    assert {"tether.tools.files", "tether.tools.file_edit", "tether.tools.file_search",
            "tether.tools.ast_tools", "tether.tools.web", "tether.tools.web_fetch"} <= set(found["modules"])


def test_the_warm_up_loads_the_assist_package_and_builds_every_schema(tmp_path: Path) -> None:
    modules, built = loaded_after("warm", tmp_path)
    assert "tether.assist" in modules
    assert "ReadFileParams" in built and "RunCmdParams" in built
    assert "tether.hooks.runner" not in modules  # no hook is configured


COLLECTION = """
import gc
from tether.cli import collect_after_start
from tether.runtime import resume_collection

collect_after_start()
assert not gc.isenabled()
resume_collection()  # the first start is over: what it made is set aside, collection goes on
assert gc.isenabled() and gc.get_freeze_count() > 0
frozen = gc.get_freeze_count()
resume_collection()  # a later start (/rebuild) sets nothing more aside
assert gc.get_freeze_count() == frozen
"""


def test_the_collector_waits_for_the_start_and_then_goes_on() -> None:
    subprocess.run([sys.executable, "-c", COLLECTION], check=True)
