"""Hooks as real subprocesses: a PreToolUse hook vetoes (exit 2 or JSON) with a reason the
model reads, rewrites a call (validated again), a PostToolUse hook adds context, a slow hook
is stopped, one that cannot start is an error and not a block, a strict one blocks; project
hooks count only in a trusted folder; hooks run inside the sandbox when it is on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from fakeserver import FakeServer, Reply
from scripted import ScriptedProvider, call, say
from test_cli import openai_args, run_cli
from waiting import wait_until

from tether.core.messages import Message, Text
from tether.core.ui_protocol import SilentUI
from tether.engine.loop import Conversation
from tether.hooks.config import HookSet, load_hooks
from tether.runtime import RunOptions, Runtime, build_runtime, session_started
from tether.safety.sandbox import probe_problem
from tether.store.config import Settings

BWRAP_PROBLEM = probe_problem()
needs_bwrap = pytest.mark.skipif(bool(BWRAP_PROBLEM), reason=f"sandbox unusable: {BWRAP_PROBLEM}")


def hook_script(folder: Path, name: str, body: str) -> str:
    """A hook written in Python (no jq needed): `payload` is the JSON it was given."""
    path = folder / name
    path.write_text("import json, os, sys, time\npayload = json.load(sys.stdin)\n" + body)
    return f"{sys.executable} {path}"


def pre_tool(command: str, matcher: str = "run_cmd", **extra: Any) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": command,
                                                           **extra}]}]}


def runtime_with(tmp_path: Path, hooks: dict[str, Any], replies: list[Any], *,
                 sandbox: str = "off", trusted: bool = False) -> tuple[Runtime, SilentUI]:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    ui = SilentUI()
    settings = Settings(sandbox=sandbox, hooks=hooks)  # type: ignore[arg-type]
    options = RunOptions(root=root, home=home, auto=True, trusted=trusted)
    runtime = build_runtime(settings, options, ui, dict(os.environ))
    runtime.loop.provider = ScriptedProvider(replies)
    return runtime, ui


async def one_turn(runtime: Runtime, prompt: str = "go") -> tuple[Conversation, Any]:
    conv = Conversation()
    try:
        result = await runtime.loop.run_turn(conv, prompt)
    finally:
        await runtime.aclose()
    return conv, result


async def touch_turn(tmp_path: Path, hooks: dict[str, Any]) -> tuple[Conversation, SilentUI, Path]:
    """One turn whose model asks to touch a marker file under `hooks`."""
    marker = tmp_path / "ran"
    runtime, ui = runtime_with(tmp_path, hooks, [
        call(("run_cmd", {"command": f"touch {marker}"})), say("ok")])
    conv, _ = await one_turn(runtime)
    return conv, ui, marker


def results(conv: Conversation) -> list[str]:
    return [r.content for m in conv.messages if m.role == "tool" for r in m.tool_results]


async def test_exit_code_2_vetoes_a_command_with_a_reason_the_model_reads(tmp_path: Path) -> None:
    veto = hook_script(tmp_path, "veto.py",
                       "open(os.environ['TETHER_PROJECT_DIR'] + '/../payload.json', 'w')"
                       ".write(json.dumps(payload))\n"
                       "print('rm is not allowed here', file=sys.stderr)\nsys.exit(2)\n")
    marker = tmp_path / "ran"
    runtime, ui = runtime_with(tmp_path, pre_tool(veto), [
        call(("run_cmd", {"command": f"touch {marker}"})), say("It was blocked.")])
    conv, _ = await one_turn(runtime)
    assert not marker.exists()
    [seen] = results(conv)
    assert "Blocked by a hook: rm is not allowed here" in seen
    assert "rm is not allowed here" in runtime.loop.provider.requests[1].messages[-1].tool_results[0].content
    payload = json.loads((tmp_path / "payload.json").read_text())
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "run_cmd"
    assert payload["tool_input"] == {"command": f"touch {marker}"}
    assert payload["cwd"] == str(tmp_path / "project") and payload["session_id"]
    assert ("warning", "A PreToolUse hook blocked run_cmd: rm is not allowed here") in ui.notices


@pytest.mark.parametrize("reply", [
    {"decision": "block", "reason": "not on Fridays"},
    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                            "permissionDecisionReason": "not on Fridays"}},
])
async def test_json_output_blocks_too(tmp_path: Path, reply: dict[str, Any]) -> None:
    veto = hook_script(tmp_path, "veto.py", f"print(json.dumps({reply!r}))\n")
    conv, _, marker = await touch_turn(tmp_path, pre_tool(veto))
    assert not marker.exists()
    assert "Blocked by a hook: not on Fridays" in results(conv)[0]


async def test_a_matcher_that_does_not_match_leaves_the_call_alone(tmp_path: Path) -> None:
    veto = hook_script(tmp_path, "veto.py", "sys.exit(2)\n")
    conv, _, marker = await touch_turn(tmp_path, pre_tool(veto, matcher="write_file|edit_file"))
    assert marker.exists()


async def test_updated_input_is_what_runs_and_the_model_is_told(tmp_path: Path) -> None:
    safe = tmp_path / "safe"
    rewrite = hook_script(tmp_path, "rewrite.py", "print(json.dumps({'hookSpecificOutput': "
                          f"{{'updatedInput': {{'command': 'touch {safe}'}}}}}}))\n")
    asked = tmp_path / "asked"
    runtime, _ = runtime_with(tmp_path, pre_tool(rewrite), [
        call(("run_cmd", {"command": f"touch {asked}"})), say("ok")])
    conv, result = await one_turn(runtime)
    assert safe.exists() and not asked.exists()
    assert f"what ran was: {{'command': 'touch {safe}'}}" in results(conv)[0]
    assert result.evidence[0].call.arguments == {"command": f"touch {safe}"}


async def test_updated_input_is_validated_against_the_tool_schema(tmp_path: Path) -> None:
    rewrite = hook_script(tmp_path, "rewrite.py",
                          "print(json.dumps({'hookSpecificOutput': {'updatedInput': {'command': 42}}}))\n")
    conv, _, marker = await touch_turn(tmp_path, pre_tool(rewrite))
    assert not marker.exists()
    assert "a hook rewrote the arguments, and they are invalid" in results(conv)[0]
    assert "'command'" in results(conv)[0]


async def test_post_tool_use_adds_context_for_the_model(tmp_path: Path) -> None:
    note = hook_script(tmp_path, "note.py", "print(json.dumps({'hookSpecificOutput': "
                       "{'additionalContext': 'exit was ' + str('exit code' in "
                       "payload['tool_response']['content'])}}))\n")
    hooks = {"PostToolUse": [{"matcher": "run_cmd", "hooks": [{"command": note}]}]}
    runtime, _ = runtime_with(tmp_path, hooks, [call(("run_cmd", {"command": "echo hi"})), say("ok")])
    conv, _ = await one_turn(runtime)
    assert results(conv)[0].endswith("[PostToolUse hook context]\nexit was True")


async def test_a_slow_hook_is_stopped_with_what_it_started_and_the_call_runs(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    slow = hook_script(tmp_path, "slow.py",
                       "import subprocess\nchild = subprocess.Popen(['sleep', '300'])\n"
                       f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
                       "time.sleep(300)\n")
    conv, ui, marker = await touch_turn(tmp_path, pre_tool(slow, timeout=1))
    assert marker.exists()
    assert any(level == "warning" and "timed out after 1s and was stopped" in message
               for level, message in ui.notices)
    for pid in map(int, pids.read_text().split()):
        wait_until(lambda pid=pid: not psutil.pid_exists(pid)
                   or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, f"hook process {pid} stopped")


async def test_a_hook_that_cannot_start_is_an_error_not_a_block(tmp_path: Path) -> None:
    conv, ui, marker = await touch_turn(tmp_path, pre_tool(str(tmp_path / "no-such-hook")))
    assert marker.exists()
    [(level, message)] = [n for n in ui.notices if "hook" in n[1]]
    assert level == "error" and "could not start" in message and "no-such-hook" in message


@pytest.mark.parametrize("strict", [False, True])
async def test_a_hook_command_the_system_cannot_start_is_told_not_raised(tmp_path: Path, strict: bool) -> None:
    conv, ui, marker = await touch_turn(tmp_path, pre_tool("echo a\0b", strict=strict))  # a NUL byte
    assert marker.exists() is not strict
    assert any(level == "error" and "could not start" in message for level, message in ui.notices)


async def test_post_tool_use_runs_after_a_call_whose_error_reads_like_a_refusal(tmp_path: Path) -> None:
    """Whether a call ran is known, not guessed from its summary: a handler's error whose
    first line is "blocked" still ran, so its PostToolUse hook runs."""
    from scripted import make_tool

    from tether.core.toolspec import ToolError

    def refuses(args: object, ctx: object) -> str:
        raise ToolError("blocked")

    note = hook_script(tmp_path, "note.py", "print(json.dumps({'hookSpecificOutput': {'additionalContext': 'seen'}}))\n")
    hooks = {"PostToolUse": [{"matcher": "probe", "hooks": [{"command": note}]}]}
    runtime, _ = runtime_with(tmp_path, hooks, [call(("probe", {"filepath": "a.txt"})), say("ok")])
    runtime.table.add(make_tool("probe", refuses))
    conv, _ = await one_turn(runtime)
    assert results(conv) == ["blocked\n[PostToolUse hook context]\nseen"]


@pytest.mark.parametrize("body", ["sys.exit(1)\n", None])
async def test_a_strict_hook_that_fails_blocks(tmp_path: Path, body: str | None) -> None:
    command = hook_script(tmp_path, "fails.py", body) if body else str(tmp_path / "missing")
    conv, _, marker = await touch_turn(tmp_path, pre_tool(command, strict=True))
    assert not marker.exists()
    assert "Blocked by a hook: a strict PreToolUse hook" in results(conv)[0]


async def test_a_failing_hook_that_is_not_strict_lets_the_call_run(tmp_path: Path) -> None:
    fails = hook_script(tmp_path, "fails.py", "print('broken', file=sys.stderr)\nsys.exit(1)\n")
    conv, ui, marker = await touch_turn(tmp_path, pre_tool(fails))
    assert marker.exists()
    assert any("failed (exit 1): broken" in message for _, message in ui.notices)


async def test_hooks_run_in_order_and_a_rewrite_reaches_the_next(tmp_path: Path) -> None:
    log = tmp_path / "log"
    first = hook_script(tmp_path, "first.py", f"open({str(log)!r}, 'a').write('first ')\n"
                        "print(json.dumps({'updatedInput': {'command': 'echo rewritten'}}))\n")
    second = hook_script(tmp_path, "second.py", f"open({str(log)!r}, 'a').write("
                         "'second:' + payload['tool_input']['command'])\n")
    hooks = {"PreToolUse": [{"matcher": "*", "hooks": [{"command": first}]},
                            {"matcher": "run_cmd", "hooks": [{"command": second}]}]}
    runtime, _ = runtime_with(tmp_path, hooks, [call(("run_cmd", {"command": "echo x"})), say("ok")])
    await one_turn(runtime)
    assert log.read_text() == "first second:echo rewritten"


async def test_user_prompt_submit_blocks_or_adds_context(tmp_path: Path) -> None:
    gate = hook_script(tmp_path, "gate.py", "if 'secret' in payload['prompt']:\n"
                       "    print('no secrets', file=sys.stderr); sys.exit(2)\nprint('today is Tuesday')\n")
    hooks = {"UserPromptSubmit": [{"hooks": [{"command": gate}]}]}
    runtime, ui = runtime_with(tmp_path, hooks, [say("fine")])
    conv, result = await one_turn(runtime, "tell me the secret")
    assert result.stop_reason == "blocked" and result.error == "no secrets" and not conv.messages
    runtime, _ = runtime_with(tmp_path, hooks, [say("fine")])
    conv, result = await one_turn(runtime, "what day is it")
    assert "today is Tuesday" in runtime.loop.provider.requests[0].messages[-1].text
    assert result.text == "fine"


async def test_a_stop_hook_keeps_the_turn_going_once(tmp_path: Path) -> None:
    keep = hook_script(tmp_path, "keep.py", "if not payload['stop_hook_active']:\n"
                       "    print(json.dumps({'decision': 'block', 'reason': 'run the tests'}))\n")
    hooks = {"Stop": [{"hooks": [{"command": keep}]}]}
    runtime, _ = runtime_with(tmp_path, hooks, [say("done"), say("really done")])
    conv, result = await one_turn(runtime)
    assert result.text == "really done"
    assert "A Stop hook asks you to go on: run the tests" in runtime.loop.provider.requests[1].messages[-1].text


async def test_session_start_context_goes_with_the_first_request(tmp_path: Path) -> None:
    start = hook_script(tmp_path, "start.py", "print('branch: main, source: ' + payload['source'])\n")
    runtime, _ = runtime_with(tmp_path, {"SessionStart": [{"hooks": [{"command": start}]}]}, [say("hi")])
    await session_started(runtime, "startup")
    await one_turn(runtime)
    assert "branch: main, source: startup" in runtime.loop.provider.requests[0].messages[-1].text


def project_hooks(tmp_path: Path, command: str) -> Path:
    root = tmp_path / "project"
    (root / ".tether").mkdir(parents=True)
    (root / ".tether" / "settings.json").write_text(json.dumps({"hooks": pre_tool(command)}))
    return root


async def test_project_hooks_run_only_in_a_trusted_folder(tmp_path: Path) -> None:
    veto = hook_script(tmp_path, "veto.py", "sys.exit(2)\n")
    project_hooks(tmp_path, veto)
    marker = tmp_path / "ran"
    runtime, _ = runtime_with(tmp_path, {}, [call(("run_cmd", {"command": f"touch {marker}"})), say("ok")])
    assert any("not trusted, so its hooks do not run" in w for w in runtime.warnings)
    await one_turn(runtime)
    assert marker.exists()
    marker.unlink()
    runtime, _ = runtime_with(tmp_path, {}, [call(("run_cmd", {"command": f"touch {marker}"})), say("ok")],
                              trusted=True)
    await one_turn(runtime)
    assert not marker.exists()


def test_bad_entries_are_named_and_skipped(tmp_path: Path) -> None:
    found = load_hooks({"PreToolUse": [{"matcher": "(", "hooks": [{"command": "x"}]},
                                       {"hooks": [{"command": ""}, {"command": "ok", "timeout": -1},
                                                  {"command": "good"}]}],
                        "Nope": []}, tmp_path, tmp_path, trusted=False)
    assert [h.command for h in found.hooks] == ["good"]
    joined = "\n".join(found.warnings)
    assert "not a valid pattern" in joined and "non-empty 'command'" in joined
    assert "'timeout' must be" in joined and "unknown hook event 'Nope'" in joined


def test_user_files_come_first_and_each_hook_names_its_file(tmp_path: Path) -> None:
    root = project_hooks(tmp_path, "project-hook")
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"hooks": pre_tool("json-hook")}))
    found: HookSet = load_hooks(pre_tool("toml-hook"), home, root, trusted=True)
    assert [(h.command, h.source) for h in found.hooks] == [
        ("toml-hook", str(home / "config.toml")), ("json-hook", str(home / "settings.json")),
        ("project-hook", str(root / ".tether" / "settings.json"))]


@needs_bwrap
async def test_hooks_run_inside_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    probe = hook_script(tmp_path / "project", "probe.py", "home = os.path.join(os.environ['TETHER_PROJECT_DIR'], '..', 'home')\n"
                        "open(os.path.join(os.environ['TETHER_PROJECT_DIR'], 'seen'), 'w')"
                        ".write(json.dumps(sorted(os.listdir(home))))\n")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "keys.json").write_text("{}")
    runtime, ui = runtime_with(tmp_path, pre_tool(probe), [call(("run_cmd", {"command": "true"})), say("ok")],
                               sandbox="workspace-write")
    await runtime.probe_sandbox()
    await one_turn(runtime)
    assert not ui.notices
    assert json.loads((tmp_path / "project" / "seen").read_text()) == []  # TETHER_HOME is hidden


def test_one_shot_runs_project_hooks_only_with_trust(tmp_path: Path) -> None:
    veto = hook_script(tmp_path, "veto.py", "print('not in CI', file=sys.stderr)\nsys.exit(2)\n")
    root = project_hooks(tmp_path, veto)
    home = tmp_path / "home"
    home.mkdir()
    marker = tmp_path / "ran"
    script = [Reply(tool_calls=[("run_cmd", {"command": f"touch {marker}"})]), Reply(text="Done.")]
    with FakeServer(list(script)) as server:
        proc = run_cli(["-p", "go", "--auto", "--sandbox", "off", "--output-format", "json",
                        *openai_args(server)], root, home)
    assert marker.exists(), proc.stderr
    assert "not trusted, so its hooks do not run" in proc.stderr
    marker.unlink()
    with FakeServer(list(script)) as server:
        proc = run_cli(["-p", "go", "--auto", "--trust", "--sandbox", "off", "--output-format",
                        "json", *openai_args(server)], root, home)
        requests = server.requests
    assert not marker.exists(), proc.stderr
    result = json.loads(proc.stdout)
    assert result["tool_calls"][0]["summary"] == "blocked by a hook"
    tool_messages = [m for m in requests[-1][1]["messages"] if m["role"] == "tool"]
    assert "Blocked by a hook: not in CI" in tool_messages[-1]["content"]


def test_one_shot_json_lists_the_answer_checks(tmp_path: Path) -> None:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    script = [Reply(tool_calls=[("list_dir", {"path": "."})]), Reply(text="Fixed it. All tests pass.")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "fix it", "--output-format", "json", *openai_args(server)], root, home)
    result = json.loads(proc.stdout)
    assert result["checks"] == ["The answer says that the tests pass, but no command ran in this turn."]
    with FakeServer([Reply(text="Fixed it. All tests pass.")]) as server:
        proc = run_cli(["-p", "fix it", *openai_args(server)], root, home)
    assert proc.stdout == "Fixed it. All tests pass.\n"
    assert proc.stderr.endswith("check: The answer says that the tests pass, but no command ran in this turn.\n")


async def test_pre_compact_hooks_run_before_the_history_is_condensed(tmp_path: Path) -> None:
    seen = tmp_path / "compact.json"
    note = hook_script(tmp_path, "note.py", f"open({str(seen)!r}, 'w').write(json.dumps(payload))\n")
    runtime, _ = runtime_with(tmp_path, {"PreCompact": [{"hooks": [{"command": note}]}]},
                              [say("a summary")])
    runtime.provider = runtime.loop.provider
    await runtime.start()
    guard = runtime.compactor()
    assert guard is not None
    history = [Message.user("first"), Message("assistant", [Text("an answer")]), Message.user("second")]
    await guard.compact(history)
    await runtime.aclose()
    assert json.loads(seen.read_text())["trigger"] == "manual"
    assert json.loads(seen.read_text())["hook_event_name"] == "PreCompact"


async def test_the_chat_asks_to_trust_a_folder_that_brings_hooks(tmp_path: Path) -> None:
    from tether.ui.terminal import trust as trust_module

    root = project_hooks(tmp_path, "./check.sh")
    (tmp_path / "home").mkdir()
    options = RunOptions(root=root, home=tmp_path / "home")
    said: list[str] = []

    async def answer(question: str) -> bool:
        said.append(question)
        return True

    async def rebuild() -> None:
        said.append("rebuilt")

    await trust_module.FolderTrust(options, lambda message, level="info": said.append(message),
                                   answer).ask(rebuild)
    assert options.trusted
    assert said[0].startswith("This folder brings configuration of its own")
    assert said[1].strip().startswith(".tether/settings.json: hooks")
    assert said[2] == "Trust this folder?"
    assert said[3] == "rebuilt"
