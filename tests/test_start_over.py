"""Starting over (assist/start_over.py, the `restart` lever): when the check a request names
still fails after the fixes asked for, the files the turn changed are put back through the
dispatcher, the history goes back to the request, and the model tries again with sampled
replies; through the real loop, dispatcher, run_cmd and git on a real project."""

from __future__ import annotations

import io
import subprocess
from dataclasses import replace
from pathlib import Path

from scripted import ScriptedProvider, call, say
from test_verify_after_change import REQUEST, RIGHT, STILL_WRONG, WRONG, checks_run, project, write

from tether.assist.start_over import RESTORE_ID, TurnStartFiles, changed_in
from tether.core.messages import Evidence
from tether.core.profile import profile_named
from tether.engine.loop import Conversation, TurnResult
from tether.engine.repeatstop import LOOP_TEMPERATURE
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI

ALSO_WRONG = "def add(a, b):\n    return a ** b\n"


def runtime_for(root: Path, home: Path, replies: list, levers: str = "restart",
                **given: object) -> tuple[Runtime, ScriptedProvider, io.StringIO]:
    settings = {"provider": "openai", "model": "gpt-test", "openai_base_url": "http://127.0.0.1:9/v1",
                "sandbox": "off", **given}
    loaded, _ = load_settings(settings, {}, home)
    err = io.StringIO()
    runtime = build_runtime(loaded, RunOptions(root=root, home=home, auto=True),
                            HeadlessUI(out=io.StringIO(), err=err), {})
    runtime.apply_profile(profile_named("full", levers_on=levers))
    provider = ScriptedProvider(replies)
    runtime.loop.provider = provider
    return runtime, provider, err


def restores(result: TurnResult) -> list:
    return [record for record in result.evidence if record.call.id.startswith(RESTORE_ID)]


def texts_sent(provider: ScriptedProvider, index: int) -> list[str]:
    return [m.text for m in provider.requests[index].messages if m.role in ("user", "assistant")]


async def test_a_check_that_still_fails_puts_the_files_back_and_starts_over(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    replies = [write(STILL_WRONG), say("Fixed."), write(ALSO_WRONG), say("Fixed again."),
               write(RIGHT), say("Done.")]
    runtime, provider, err = runtime_for(root, home, replies, verify_after_change=1)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert (root / "calc.py").read_text() == RIGHT
    [put_back] = restores(result)
    assert put_back.call.name == "write_file" and put_back.call.arguments == {
        "filepath": "calc.py", "content": WRONG}
    # the fresh attempt's first request holds the request and none of the first attempt
    fresh = texts_sent(provider, 4)
    assert any(REQUEST in text for text in fresh)
    assert not any(STILL_WRONG in text or ALSO_WRONG in text or "Fixed." in text for text in fresh)
    assert [r.options.temperature for r in provider.requests[4:]] == [LOOP_TEMPERATURE] * 2
    assert provider.requests[0].options.temperature != LOOP_TEMPERATURE
    assert "the files this turn changed are put back" in err.getvalue()
    assert "fresh start 1 of 2" in err.getvalue()
    assert result.text.splitlines()[-1].startswith("Verified: ")
    # the dropped attempt is still evidence: both of its writes and its checks
    writes = [r.call.arguments["content"] for r in result.evidence
              if r.call.name == "write_file" and not r.call.id.startswith(RESTORE_ID)]
    assert writes == [STILL_WRONG, ALSO_WRONG, RIGHT]
    assert len(checks_run(result)) == 3


async def test_the_fresh_starts_are_counted_and_the_last_line_says_so(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    attempt = [write(STILL_WRONG), say("Fixed."), say("It is fixed.")]
    runtime, _, _ = runtime_for(root, home, attempt * 3, verify_after_change=1)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(restores(result)) == 2 and len(checks_run(result)) == 3
    assert (root / "calc.py").read_text() == STILL_WRONG  # the last attempt's, as it ended
    last = result.text.splitlines()[-1]
    assert last.startswith("Not fixed: ") and "after 3 attempts to fix it and 2 fresh starts" in last


async def test_each_put_back_is_an_undo_commit(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    replies = [write(STILL_WRONG), say("Fixed."), say("It is fixed."), write(RIGHT), say("Done.")]
    runtime, _, _ = runtime_for(root, home, replies, verify_after_change=1)
    await runtime.loop.run_turn(Conversation(), REQUEST)
    log = subprocess.run(["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True).stdout
    assert log.count("write_file") == 3  # the attempt, the put back, the fresh attempt


async def test_a_turn_that_changed_a_file_not_kept_does_not_start_over(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    (root / "notes.txt").write_text("notes\n")
    replies = [call(("write_file", {"filepath": "notes.txt", "content": "changed\n"})),
               write(STILL_WRONG), say("Fixed."), say("It is fixed.")]
    runtime, _, err = runtime_for(root, home, replies, verify_after_change=1)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert restores(result) == [] and "put back" not in err.getvalue()
    assert result.text.splitlines()[-1].startswith("Not fixed: ")
    assert "fresh start" not in result.text


async def test_without_the_lever_the_turn_never_starts_over(tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    replies = [write(STILL_WRONG), say("Fixed."), say("It is fixed.")]
    runtime, _, _ = runtime_for(root, home, replies, levers="", verify_after_change=1)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert restores(result) == [] and (root / "calc.py").read_text() == STILL_WRONG


async def test_a_put_back_that_fails_ends_the_turn_saying_so(tmp_path: Path, home: Path) -> None:
    from tether.assist import Assist
    from tether.core.messages import ToolCall, ToolResult

    root = project(tmp_path)
    replies = [write(STILL_WRONG), say("Fixed."), say("It is fixed.")]
    runtime, _, _ = runtime_for(root, home, replies, verify_after_change=1)
    dispatch = runtime.loop.dispatcher.dispatch

    async def refusing_put_backs(call: ToolCall) -> tuple[ToolResult, Evidence]:
        result, record = await dispatch(call)
        if call.id.startswith(RESTORE_ID):  # as a hook or a full disk would fail it
            return ToolResult(call.id, call.name, "Error: no space left on device", True), \
                replace(record, error=True)
        return result, record

    runtime.loop.assist = Assist(root, refusing_put_backs, lambda: ["calc.py", "test_calc.py"])
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    [tried] = restores(result)
    assert tried.error
    last = result.text.splitlines()[-1]
    assert last.startswith("Not fixed: ") and "could not all be put back to start over (Error: no space left" in last


def test_only_project_files_are_kept_and_a_new_file_is_deleted_to_put_it_back(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text("a = 1\n")
    (tmp_path / "outside.py").write_text("x\n")
    (root / "link.py").symlink_to(tmp_path / "outside.py")
    (root / "bin.dat").write_bytes(b"\xff\xfe\x00")
    kept = TurnStartFiles.capture(root, ["a.py", "new.py", "../outside.py", "link.py", "bin.dat"])
    assert sorted(Path(key).name for key in kept.texts) == ["a.py", "new.py"]
    (root / "a.py").write_text("a = 2\n")
    (root / "new.py").write_text("made\n")
    changed = [str(root / "a.py"), str(root / "new.py")]
    assert kept.restorable(changed) and not kept.restorable([str(root / "bin.dat")])
    assert not kept.restorable([])
    calls = kept.calls_to_restore(changed)
    assert [(c.name, c.arguments) for c in calls] == [
        ("write_file", {"filepath": "a.py", "content": "a = 1\n"}),
        ("delete_file", {"filepath": "new.py"})]
    (root / "a.py").write_text("a = 1\n")
    assert [c.name for c in kept.calls_to_restore(changed)] == ["delete_file"]


def test_the_changed_paths_are_taken_in_order_each_once() -> None:
    from tether.core.messages import ToolCall

    def record(*paths: str) -> Evidence:
        return Evidence(ToolCall("x", "write_file", {}), 0.0, 0.0, "", "", changed_paths=paths)

    assert changed_in([record("/p/b"), record(), record("/p/a", "/p/b")]) == ["/p/b", "/p/a"]


async def test_a_fix_asked_for_and_answered_with_no_change_starts_over_at_once(
        tmp_path: Path, home: Path) -> None:
    root = project(tmp_path)
    # checked after each change (lever early): the failure is shown with the write's result
    replies = [write(STILL_WRONG), say("Fixed."), say("Fixed."), write(RIGHT), say("Done.")]
    runtime, provider, err = runtime_for(root, home, replies, levers="early,restart",
                                         verify_after_change=2)
    result = await runtime.loop.run_turn(Conversation(), REQUEST)
    assert len(restores(result)) == 1 and len(provider.requests) == 5
    assert "after 1 fix:" in err.getvalue()  # the second of two fixes was not asked for
    assert (root / "calc.py").read_text() == RIGHT
    assert result.text.splitlines()[-1].startswith("Verified: ")
