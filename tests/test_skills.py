"""Skills: discovery order and trust, frontmatter errors, the prompt index, use_skill, and
script tools run end to end through the runtime (approval, rules, sandbox, output)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say

from tether.core.toolspec import ToolError
from tether.engine.loop import Conversation
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.safety.sandbox import probe_problem
from tether.skills.catalog import discover_skills, prompt_index
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI

REPO = Path(__file__).resolve().parent.parent
BWRAP_PROBLEM = probe_problem()
needs_bwrap = pytest.mark.skipif(bool(BWRAP_PROBLEM), reason=f"sandbox unusable: {BWRAP_PROBLEM}")

GREET = '''import argparse, sys
p = argparse.ArgumentParser(description="Greet someone and exit with a code.")
p.add_argument("name", help="who to greet")
p.add_argument("--code", metavar="N", default="0", help="the exit code")
p.add_argument("--shout", action="store_true", help="in capitals")
a = p.parse_args()
text = "hello " + a.name
print(text.upper() if a.shout else text)
print("to stderr", file=sys.stderr)
sys.exit(int(a.code))
'''


def write_skill(folder: Path, name: str, description: str = "Does a thing.", body: str = "Steps.",
                extra: str = "") -> Path:
    skill = folder / name
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n")
    return skill


def test_personal_skills_come_first_and_project_folders_go_in_order(tmp_path: Path) -> None:
    root, home, user = tmp_path / "p", tmp_path / "home", tmp_path / "user"
    write_skill(root / ".agents" / "skills", "deploy", "agents deploy")
    write_skill(root / ".tether" / "skills", "deploy", "tether deploy")
    write_skill(user / ".agents" / "skills", "notes", "from ~/.agents")
    write_skill(home / "skills", "notes", "from TETHER_HOME")
    (root / "skills").mkdir(parents=True)
    (root / "skills" / "lint.md").write_text("---\nname: lint\ndescription: one file\n---\nRun it.\n")
    catalog = discover_skills(root, home, trusted=True, user_home=user)
    found = {s.name: (s.meta.description, s.source) for s in catalog.skills}
    assert found["deploy"] == ("tether deploy", "project .tether/skills")
    assert found["notes"] == ("from TETHER_HOME", "personal TETHER_HOME/skills")
    assert found["lint"][0] == "one file" and catalog.get("lint").folder is None
    assert catalog.problems == []


@pytest.mark.parametrize("personal_text", ids=["valid", "broken"], argvalues=[
    "---\nname: deploy\ndescription: my deploy\n---\nMine.\n",
    "---\nname: deploy\n---\nbroken: no description\n",
])
def test_a_project_skill_never_takes_the_name_of_a_personal_one(
    tmp_path: Path, personal_text: str
) -> None:
    """Its scripts would be tools named like the personal skill's (deploy__run), judged by
    the rules and hooks written for those; a broken personal skill keeps its name too."""
    root, home, user = tmp_path / "p", tmp_path / "home", tmp_path / "user"
    (home / "skills" / "deploy").mkdir(parents=True)
    (home / "skills" / "deploy" / "SKILL.md").write_text(personal_text)
    project_skill = write_skill(root / ".claude" / "skills", "deploy", "the repository's deploy")
    (project_skill / "scripts").mkdir()
    (project_skill / "scripts" / "run.py").write_text("print('from the repository')\n")
    catalog = discover_skills(root, home, trusted=True, user_home=user)
    assert all(s.source.startswith("personal") for s in catalog.skills)
    clash = [p for p in catalog.problems if "one of your own skills" in p]
    assert len(clash) == 1 and str(project_skill / "SKILL.md") in clash[0]


def test_an_untrusted_project_brings_no_skills(tmp_path: Path) -> None:
    root, home = tmp_path / "p", tmp_path / "home"
    write_skill(root / "skills", "evil", "from the repository")
    write_skill(home / "skills", "mine", "my own")
    catalog = discover_skills(root, home, trusted=False, user_home=tmp_path / "user")
    assert catalog.names() == ["mine"]


@pytest.mark.parametrize(("frontmatter", "line", "why"), [
    ("name: Bad_Name\ndescription: x\n", 2, "a-z, 0-9"),
    ("name: other\ndescription: x\n", 2, "does not match"),
    ("name: tool\n", 2, "'description' is missing"),
    ("name: tool\ndescription: x\nmetadata: [1\n", 5, "invalid YAML"),
    ("name: tool\ndescription: " + "d" * 1025 + "\n", 3, "longer than 1024"),
])
def test_invalid_frontmatter_is_reported_with_file_and_line_and_skipped(
    tmp_path: Path, frontmatter: str, line: int, why: str
) -> None:
    folder = tmp_path / "p" / "skills" / "tool"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{frontmatter}---\nbody\n")
    write_skill(tmp_path / "p" / "skills", "good")
    catalog = discover_skills(tmp_path / "p", tmp_path / "home", trusted=True,
                              user_home=tmp_path / "u")
    assert catalog.names() == ["good"]
    [problem] = catalog.problems
    assert problem.startswith(f"{folder / 'SKILL.md'}:{line}: ") and why in problem
    assert problem.endswith("skill skipped")


def test_the_prompt_index_shortens_descriptions_and_drops_no_skill(tmp_path: Path) -> None:
    for n in range(120):
        write_skill(tmp_path / "p" / "skills", f"skill-{n:03}", "word " * 150)
    catalog = discover_skills(tmp_path / "p", tmp_path / "h", trusted=True, user_home=tmp_path / "u")
    index = prompt_index(catalog.skills, budget=8000)
    lines = [line for line in index.splitlines() if line.startswith("- ")]
    assert [line.split(":")[0] for line in lines] == [f"- skill-{n:03}" for n in range(120)]
    assert all(line.endswith("…") for line in lines)
    assert len(index) <= 8000 + 200
    roomy = prompt_index(catalog.skills[:2], budget=8000)
    assert ("word " * 150).strip() in roomy


def skill_runtime(tmp_path: Path, replies: list, *, auto: bool = True, trusted: bool = True,
                  deny: tuple[str, ...] = (), sandbox: str = "off", profile: str = "full",
                  ) -> tuple[Runtime, ScriptedProvider]:
    root, home = tmp_path / "project", tmp_path / "home"
    skill = write_skill(root / "skills", "demo", "Greets people.", "Call demo__greet.",
                        "allowed-tools: run_cmd\n")
    (skill / "scripts").mkdir()
    (skill / "scripts" / "greet.py").write_text(GREET)
    (skill / "references").mkdir()
    (skill / "references" / "notes.md").write_text("notes\n")
    tool = skill / "scripts" / "shout"
    tool.write_text("#!/bin/sh\necho \"args: $*\"\n")
    tool.chmod(0o755)
    settings, _ = load_settings({"provider": "openai", "openai_base_url": "http://127.0.0.1:9/v1",
                                 "model": "m", "sandbox": sandbox, "profile": profile,
                                 "protocol": "native"}, {}, home)
    options = RunOptions(root=root, home=home, auto=auto, trusted=trusted, deny=deny)
    runtime = build_runtime(settings, options, HeadlessUI("json"), {})
    provider = ScriptedProvider(replies)
    runtime.provider = runtime.loop.provider = provider
    return runtime, provider


def last_result(provider: ScriptedProvider) -> str:
    return result_of(provider, -1)


def result_of(provider: ScriptedProvider, index: int) -> str:
    """Every tool result of the request's last message."""
    return "\n".join(p.content for p in provider.requests[index].messages[-1].parts)


@needs_bwrap
async def test_a_script_becomes_a_tool_after_use_skill_and_runs_with_output_and_exit_code(
    tmp_path: Path,
) -> None:
    runtime, provider = skill_runtime(tmp_path, [
        call(("use_skill", {"name": "demo"})),
        call(("demo__greet", {"name": "Ann", "code": "3", "shout": True})),
        call(("demo__shout", {"args": ["a b", "c"]})),
        say("done"),
    ], sandbox="workspace-write")
    await runtime.start()
    assert "demo__greet" not in [t.name for t in runtime.loop.offered()]
    assert "- demo: Greets people." in provider_prompt(runtime)
    result = await runtime.loop.run_turn(Conversation(), "greet Ann")
    loaded = result_of(provider, 1)
    assert "Call demo__greet." in loaded and "- references/notes.md" in loaded
    assert "- scripts/greet.py" in loaded and "advice only" in loaded and "run_cmd" in loaded
    offered = [t.name for t in provider.requests[1].tools]
    assert "demo__greet" in offered and "demo__shout" in offered
    schema = runtime.table.get("demo__greet").json_schema()
    assert set(schema["properties"]) == {"name", "code", "shout"} and schema["required"] == ["name"]
    greet = result_of(provider, 2)
    assert "HELLO ANN" in greet and "to stderr" in greet and "exit code 3" in greet
    assert "args: a b c" in last_result(provider)
    assert result.evidence[1].command.exit_code == 3
    assert runtime.skills.loaded == ["demo"]
    await runtime.aclose()


async def test_without_a_sandbox_no_script_runs_at_load_and_a_python_script_takes_a_list(
    tmp_path: Path,
) -> None:
    ran = tmp_path / "ran-at-load"
    runtime, provider = skill_runtime(tmp_path, [
        call(("use_skill", {"name": "demo"})),
        call(("demo__greet", {"args": ["Ann", "--code", "3"]})),
        call(("demo__greet", {"args": ["--help"]})),
        say("done"),
    ])
    greet = runtime.root / "skills" / "demo" / "scripts" / "greet.py"
    greet.write_text(f"open({str(ran)!r}, 'a').write('x')\n" + GREET)
    await runtime.start()
    result = await runtime.loop.run_turn(Conversation(), "greet Ann")
    tool = runtime.table.get("demo__greet")
    assert set(tool.json_schema()["properties"]) == {"args"}
    assert "Its options were not read at load" in tool.description
    assert "hello Ann" in result_of(provider, 2) and result.evidence[1].command.exit_code == 3
    assert "usage: greet.py" in last_result(provider)  # its options, seen by calling it
    assert ran.read_text() == "xx"  # the two calls ran it; loading the skill did not
    await runtime.aclose()


def test_argparse_help_gives_the_parameters(tmp_path: Path) -> None:
    import subprocess

    from tether.skills.scripts import help_arguments, params_model

    (tmp_path / "greet.py").write_text(GREET)
    help_text = subprocess.run([sys.executable, str(tmp_path / "greet.py"), "--help"],
                               capture_output=True, text=True, check=True).stdout
    arguments = help_arguments(help_text)
    assert [(a.flag, a.field, a.takes_value) for a in arguments] == [
        ("", "name", True), ("--code", "code", True), ("--shout", "shout", False)]
    schema = params_model("demo__greet", arguments).model_json_schema()
    assert schema["required"] == ["name"] and schema["properties"]["shout"]["default"] is False


def provider_prompt(runtime: Runtime) -> str:
    """The system prompt and the project context that opens the first request."""
    return runtime.system_prompt(runtime.loop.mode) + runtime.context()


async def test_a_script_tool_asks_like_run_cmd_and_is_refused_with_nobody_to_ask(
    tmp_path: Path,
) -> None:
    runtime, provider = skill_runtime(tmp_path, [
        call(("use_skill", {"name": "demo"})),
        call(("demo__greet", {"name": "Ann"})), say("ok"),
    ], auto=False)
    await runtime.start()
    result = await runtime.loop.run_turn(Conversation(), "greet")
    assert result.evidence[1].error and "hello Ann" not in last_result(provider)
    await runtime.aclose()


async def test_a_deny_run_rule_stops_a_script_tool_under_auto(tmp_path: Path) -> None:
    runtime, provider = skill_runtime(tmp_path, [
        call(("use_skill", {"name": "demo"})),
        call(("demo__greet", {"name": "Ann"})), say("ok"),
    ], deny=(f"run({sys.executable} *)",))
    await runtime.start()
    result = await runtime.loop.run_turn(Conversation(), "greet")
    assert result.evidence[1].error and "denied by rule run(" in last_result(provider)
    await runtime.aclose()


@needs_bwrap
async def test_a_script_tool_and_its_help_run_inside_the_sandbox(tmp_path: Path) -> None:
    outside = Path("/var/tmp") / f"tether-skill-{tmp_path.name}"
    # The write comes before the parser: it is tried when --help is read and when it runs.
    script = ("import argparse, pathlib\n"
              f"try:\n    pathlib.Path({str(outside)!r}).write_text('x')\n"
              "except OSError as exc:\n    print('write failed:', exc)\n"
              "argparse.ArgumentParser(description='escape').parse_args()\n")
    runtime, provider = skill_runtime(tmp_path, [
        call(("use_skill", {"name": "demo"})), call(("demo__escape", {})), say("ok"),
    ], sandbox="workspace-write")
    (runtime.root / "skills" / "demo" / "scripts" / "escape.py").write_text(script)
    await runtime.start()
    await runtime.loop.run_turn(Conversation(), "go")
    assert not outside.exists() and "Read-only file system" in last_result(provider)
    await runtime.aclose()


async def test_use_skill_names_the_skills_for_an_unknown_name(tmp_path: Path) -> None:
    runtime, _ = skill_runtime(tmp_path, [])
    with pytest.raises(ToolError, match="No skill named 'nope'. Skills: demo."):
        runtime.skills.load("nope")


async def test_one_shot_json_names_the_instructions_skills_and_skills_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    import tether.runtime
    from tether.cli import run_one_shot

    runtime, _ = skill_runtime(tmp_path, [call(("use_skill", {"name": "demo"})), say("ok")])
    (runtime.root / "AGENTS.md").write_text("Be brief.\n")
    monkeypatch.setattr(tether.runtime, "build_runtime", lambda *a, **k: rebuilt(runtime))
    out = io.StringIO()
    ui = HeadlessUI("stream-json", out=out, err=io.StringIO())
    code = await run_one_shot(runtime.settings, runtime.options, ui, {}, "hi")
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    init = next(e for e in events if e["type"] == "init")
    assert code == 0 and init["skills"] == ["demo"]
    assert init["instructions"] == [str(runtime.root / "AGENTS.md")]
    assert events[-1]["skills_loaded"] == ["demo"]


def rebuilt(runtime: Runtime) -> Runtime:
    """The same runtime with its instructions read again (the test wrote AGENTS.md after)."""
    tether_runtime = __import__("tether.runtime", fromlist=["attach_context_files"])
    runtime.table.remove("use_skill")
    tether_runtime.attach_context_files(runtime)
    return runtime


@pytest.mark.parametrize("sandbox", [
    "off", pytest.param("workspace-write", marks=needs_bwrap)])
async def test_the_shipped_skills_load_and_their_scripts_run(tmp_path: Path, sandbox: str) -> None:
    import shutil
    import subprocess

    root = tmp_path / "project"
    shutil.copytree(REPO / "skills", root / "skills")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.py").write_text("x = 1  # TODO tidy\n")
    subprocess.run(["git", "-C", str(root), "add", "a.py"], check=True)
    settings, _ = load_settings({"provider": "openai", "openai_base_url": "http://127.0.0.1:9/v1",
                                 "model": "m", "sandbox": sandbox, "profile": "full",
                                 "protocol": "native"}, {}, tmp_path / "home")
    runtime = build_runtime(settings, RunOptions(root=root, home=tmp_path / "home", auto=True,
                                                 trusted=True), HeadlessUI("json"), {})
    # in the sandbox the parameters come from the scripts' --help; without one, a list
    folder = {"folder": "."} if sandbox != "off" else {"args": ["."]}
    provider = ScriptedProvider([
        call(("use_skill", {"name": "git-commit"}), ("use_skill", {"name": "code-review"})),
        call(("git_commit__staged_summary", {})),
        call(("code_review__open_markers", folder)),
        say("ok"),
    ])
    runtime.provider = runtime.loop.provider = provider
    await runtime.start()
    await runtime.loop.run_turn(Conversation(), "commit and review")
    loaded = result_of(provider, 1)
    assert "references/message-style.md" in loaded and "references/checklist.md" in loaded
    assert "+1 -0 a.py" in result_of(provider, 2)
    assert "a.py:1: x = 1  # TODO tidy" in last_result(provider)
    await runtime.aclose()


async def test_the_prompt_prefix_stays_when_a_skill_brings_tools(tmp_path: Path) -> None:
    runtime, _ = skill_runtime(tmp_path, [])
    before = runtime.system_prompt("text")
    runtime.load_skill("demo")
    after = runtime.system_prompt("text")
    # the menu comes first (the same in every project); a skill's tools join its end, so
    # the stance and every tool offered before stay in the cached prefix
    steady_end = before.index("- spawn_agents(")
    assert after[:steady_end] == before[:steady_end]
    assert "demo__greet" in after[steady_end:] and "demo__greet" not in before
    await runtime.aclose()


async def test_a_script_never_takes_the_name_of_another_tool(tmp_path: Path) -> None:
    from scripted import make_tool

    runtime, _ = skill_runtime(tmp_path, [])
    other = make_tool("demo__greet", lambda args, ctx: "the other tool")
    runtime.table.add(other)
    text = runtime.load_skill("demo")
    assert runtime.table.get("demo__greet") is other
    assert "Not a tool: demo__greet: the name belongs to another tool" in text
    assert "Tools now available: demo__shout" in text
    await runtime.aclose()


async def test_a_rebuilt_runtime_keeps_the_loaded_skills_and_their_tools(tmp_path: Path) -> None:
    runtime, _ = skill_runtime(tmp_path, [])
    runtime.load_skill("demo")
    new = runtime.rebuilt()
    assert new.skills.loaded == ["demo"] and "demo__greet" in new.table
    await runtime.aclose()
    await new.aclose()


def test_the_sandbox_protects_every_project_skill_folder() -> None:
    from tether.safety.sandbox_paths import PROJECT_CONFIG
    from tether.skills.catalog import PROJECT_FOLDERS

    assert set(PROJECT_FOLDERS) <= {entry.name for entry in PROJECT_CONFIG}


@needs_bwrap
async def test_a_sandboxed_command_cannot_plant_a_skill(tmp_path: Path) -> None:
    from tether.core.messages import ToolCall

    runtime, _ = skill_runtime(tmp_path, [], sandbox="workspace-write")
    command = ("mkdir -p .agents/skills/evil; echo planted > skills/demo/SKILL.md; "
               "echo ok > fine.txt")
    result, _ = await runtime.loop.dispatcher.dispatch(ToolCall("c", "run_cmd", {"command": command}))
    assert (runtime.root / "fine.txt").read_text() == "ok\n"
    assert "Read-only file system" in result.content
    assert not (runtime.root / ".agents" / "skills" / "evil").exists()
    assert "Greets people." in (runtime.root / "skills" / "demo" / "SKILL.md").read_text()
    await runtime.aclose()


async def test_a_skill_that_broke_after_discovery_is_a_clear_error(tmp_path: Path) -> None:
    runtime, _ = skill_runtime(tmp_path, [])
    (runtime.root / "skills" / "demo" / "SKILL.md").write_text("no frontmatter now\n")
    with pytest.raises(ToolError, match="Skill demo cannot be read now .*frontmatter fence"):
        runtime.load_skill("demo")
    await runtime.aclose()


async def test_the_short_menu_of_the_small_profile_offers_a_script_right_after_use_skill(
    tmp_path: Path,
) -> None:
    runtime, provider = skill_runtime(tmp_path, [
        call(("use_skill", {"name": "demo"})), call(("demo__greet", {"args": ["Ann"]})), say("ok"),
    ], profile="small")
    await runtime.start()
    assert runtime.loop.menu is not None and "use_skill" in [t.name for t in runtime.loop.offered()]
    await runtime.loop.run_turn(Conversation(), "greet")
    assert "demo__greet" in [t.name for t in provider.requests[1].tools]
    assert "hello Ann" in result_of(provider, 2)
    await runtime.aclose()
