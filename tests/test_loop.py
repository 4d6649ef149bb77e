"""The turn loop against a scripted model: ordering, concurrency, reuse, the cap, errors, windowing."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from scripted import ScriptedProvider, TextArgs, call, make_tool, say

from tether.core.messages import Done, Message, TextDelta, ToolCall, Usage
from tether.core.toolspec import ToolContext, ToolError, ToolOutput, ToolTable
from tether.core.ui_protocol import Decision, SilentUI
from tether.engine.dispatch import Dispatcher, GateVerdict, window_text
from tether.engine.loop import STEP_LIMIT_NOTE, Conversation, TurnLoop, TurnSettings, batches
from tether.providers.base import ProviderError


class RecordingUI(SilentUI):
    can_ask = True

    def __init__(self, allow: bool = True) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []
        self.allow = allow
        self.shown = ""

    def text(self, delta: str) -> None:
        self.shown += delta

    def tool_start(self, call: ToolCall) -> None:
        self.events.append(("start", call.name))

    def tool_end(self, evidence) -> None:  # noqa: ANN001
        self.events.append(("end", evidence.call.name))

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.events.append(("approve", call.name))
        return Decision(self.allow, "" if self.allow else "not now")


def build(provider, tools, tmp_path: Path, ui=None, policy=None, **settings):  # noqa: ANN001
    table = ToolTable(tools)
    ui = ui or RecordingUI()
    dispatcher = Dispatcher(table, ToolContext(root=tmp_path), ui, default_timeout=2.0)
    if policy is not None:
        dispatcher.policy = policy
    loop = TurnLoop(
        provider, table, dispatcher, ui, TurnSettings(model="m", **settings),
        system_prompt=lambda mode: f"SYSTEM ({mode})",
    )
    loop.mode = "native" if provider.native else "text"
    return loop, ui


def tool_results(conv: Conversation) -> list:
    return [r for m in conv.messages if m.role == "tool" for r in m.tool_results]


async def test_plain_answer_streams_and_ends(tmp_path: Path) -> None:
    provider = ScriptedProvider([say("Hello there, friend.")])
    loop, ui = build(provider, [], tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "hi")
    assert result.text == "Hello there, friend."
    assert result.stop_reason == "end_turn" and result.requests == 1
    assert ui.shown == "Hello there, friend."
    assert [m.role for m in conv.messages] == ["user", "assistant"]
    assert provider.requests[0].messages[0].role == "system"


async def test_results_return_in_call_order_and_run_concurrently(tmp_path: Path) -> None:
    in_flight, peak = 0, 0
    both_started = asyncio.Event()

    async def slow_read(args, ctx):  # noqa: ANN001
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 1.5)  # deadlocks if run one at a time
        in_flight -= 1
        return f"content of {args.filepath}"

    provider = ScriptedProvider([call(("read", {"filepath": "b"}), ("read", {"filepath": "a"})), say("done")])
    loop, _ = build(provider, [make_tool("read", slow_read)], tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "read both")
    assert peak == 2
    assert [r.content for r in tool_results(conv)] == ["content of b", "content of a"]
    assert [e.call.arguments["filepath"] for e in result.evidence] == ["b", "a"]


async def test_calls_with_side_effects_run_one_at_a_time_in_order(tmp_path: Path) -> None:
    order: list[str] = []
    running = 0

    async def write(args, ctx):  # noqa: ANN001
        nonlocal running
        running += 1
        assert running == 1, "two writes ran at once"
        await asyncio.sleep(0.01)
        order.append(args.filepath)
        running -= 1
        return "ok"

    writer = make_tool("write", write, TextArgs, reads=False, writes_files=True)
    calls = [("write", {"filepath": str(i), "content": "x"}) for i in range(4)]
    provider = ScriptedProvider([call(*calls), say("done")])
    loop, _ = build(provider, [writer], tmp_path)
    await loop.run_turn(Conversation(), "go")
    assert order == ["0", "1", "2", "3"]


def test_batches_group_only_consecutive_reads() -> None:
    table = ToolTable([
        make_tool("r", lambda a, c: ""),
        make_tool("w", lambda a, c: "", reads=False, writes_files=True),
    ])
    names = ["r", "r", "w", "r", "w", "w", "r", "r"]
    grouped = batches([ToolCall(str(i), n, {}) for i, n in enumerate(names)], table)
    assert [[c.name for c in b] for b in grouped] == [["r", "r"], ["w"], ["r"], ["w"], ["w"], ["r", "r"]]


async def test_duplicate_read_reuses_result_until_something_writes(tmp_path: Path) -> None:
    reads = 0

    def read(args, ctx):  # noqa: ANN001
        nonlocal reads
        reads += 1
        return f"read #{reads}"

    tools = [
        make_tool("read", read),
        make_tool("write", lambda a, c: "ok", TextArgs, reads=False, writes_files=True),
    ]
    same = ("read", {"filepath": "x"})
    provider = ScriptedProvider([
        call(same), call(same), call(("write", {"filepath": "x", "content": "y"})), call(same), say("done"),
    ])
    loop, _ = build(provider, tools, tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "go")
    contents = [r.content for r in tool_results(conv)]
    assert contents == ["read #1", "read #1", "ok", "read #2"]
    assert result.evidence[1].summary == "reused earlier result"
    assert reads == 2


async def test_step_cap_makes_one_final_tool_free_request(tmp_path: Path) -> None:
    provider = ScriptedProvider([call(("read", {"filepath": "x"})), call(("read", {"filepath": "y"})), say("final words")])
    loop, _ = build(provider, [make_tool("read", lambda a, c: "data")], tmp_path, max_steps=2)
    result = await loop.run_turn(Conversation(), "loop forever")
    assert result.stop_reason == "max_steps"
    assert result.text == "final words"
    assert len(provider.requests) == 3
    assert provider.requests[0].tools is not None
    final = provider.requests[-1]
    assert final.tools is None
    assert final.messages[-1].text == STEP_LIMIT_NOTE


async def test_soft_pressure_note_after_configured_steps(tmp_path: Path) -> None:
    replies = [call(("read", {"filepath": str(i)})) for i in range(3)] + [say("ok")]
    provider = ScriptedProvider(replies)
    loop, _ = build(provider, [make_tool("read", lambda a, c: "d")], tmp_path, soft_pressure_after=2)
    conv = Conversation()
    await loop.run_turn(conv, "go")
    last_texts = [r.messages[-1].text for r in provider.requests]
    assert "Finish soon" not in last_texts[1]
    assert "Finish soon" in last_texts[2] and "Finish soon" in last_texts[3]
    assert not any("Finish soon" in m.text for m in conv.messages), "the nudge is not stored"


async def test_errors_are_results_and_the_turn_goes_on(tmp_path: Path) -> None:
    def expected_failure(args, ctx):  # noqa: ANN001
        raise ToolError("no such thing")

    def bug(args, ctx):  # noqa: ANN001
        raise RuntimeError("boom")

    tools = [make_tool("fails", expected_failure), make_tool("crashes", bug)]
    provider = ScriptedProvider([
        call(("fails", {"filepath": "a"}), ("crashes", {"filepath": "b"}), ("nope", {}), ("fails", {"wrong": 1})),
        say("recovered"),
    ])
    loop, _ = build(provider, tools, tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "go")
    results = tool_results(conv)
    assert all(r.is_error for r in results)
    assert results[0].content == "no such thing"
    assert "RuntimeError: boom" in results[1].content
    assert "Unknown tool 'nope'" in results[2].content and "fails, crashes" in results[2].content
    assert "'filepath'" in results[3].content and "Field required" in results[3].content
    assert result.text == "recovered" and result.stop_reason == "end_turn"


async def test_invalid_native_json_is_reported_to_the_model(tmp_path: Path) -> None:
    provider = ScriptedProvider([call(("read", {"__invalid_json__": '{"filepath": "a'})), say("ok")])
    ran = []
    loop, _ = build(provider, [make_tool("read", lambda a, c: ran.append(1) or "x")], tmp_path)
    conv = Conversation()
    await loop.run_turn(conv, "go")
    assert not ran
    assert "not valid JSON" in tool_results(conv)[0].content


async def test_results_are_windowed_head_and_tail(tmp_path: Path) -> None:
    big = "HEAD" + "x" * 50_000 + "TAIL"
    tool = make_tool("read", lambda a, c: big, result_cap=1000)
    provider = ScriptedProvider([call(("read", {"filepath": "a"})), say("ok")])
    loop, _ = build(provider, [tool], tmp_path)
    conv = Conversation()
    await loop.run_turn(conv, "go")
    content = tool_results(conv)[0].content
    assert content.startswith("HEAD") and content.endswith("TAIL")
    assert "characters omitted ..." in content and len(content) <= 1000


def test_window_text_counts_what_it_omits() -> None:
    text = "".join(str(i % 10) for i in range(5000))
    out = window_text(text, 500)
    omitted = int(out.split("[... ")[1].split(" characters")[0])
    head, tail = out.split("\n[...")[0], out.rsplit("...]\n", 1)[1]
    assert len(head) + len(tail) + omitted == len(text)
    assert window_text("short", 500) == "short"


async def test_sync_handler_timeout_becomes_a_result(tmp_path: Path) -> None:
    def slow(args, ctx):  # noqa: ANN001
        time.sleep(0.5)
        return "late"

    tool = make_tool("slow", slow, timeout=0.1)
    provider = ScriptedProvider([call(("slow", {"filepath": "a"})), say("ok")])
    loop, _ = build(provider, [tool], tmp_path)
    conv = Conversation()
    await loop.run_turn(conv, "go")
    result = tool_results(conv)[0]
    assert result.is_error and "timed out after 0.1s" in result.content


async def test_text_protocol_round_trip(tmp_path: Path) -> None:
    written: dict[str, str] = {}

    def write(args, ctx):  # noqa: ANN001
        written[args.filepath] = args.content
        return ToolOutput("wrote it", summary="wrote 1 line")

    tool = make_tool("write_file", write, TextArgs, reads=False, writes_files=True,
                     block_params=("content",))
    reply = (
        'Writing it now.\n<tool_call>\n{"name": "write_file", "arguments": {"filepath": "g.py"}}\n'
        '<content>\nprint("hi \\n there")\n</content>\n</tool_call>'
    )
    provider = ScriptedProvider([say(reply, chunk=3), say("All done.")], native=False)
    loop, ui = build(provider, [tool], tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "write g.py")
    assert written == {"g.py": 'print("hi \\n there")\n'}
    assert "<tool_call>" not in ui.shown and "Writing it now." in ui.shown
    second = provider.requests[1]
    assert second.tools is None
    assert second.messages[0].text == "SYSTEM (text)"
    assert all(m.role in ("system", "user", "assistant") for m in second.messages)
    assert "<tool_call>" in second.messages[2].text
    assert "[Tool Result for 'write_file']" in second.messages[3].text
    assert result.text == "All done."


def _recording_write(written: dict[str, str]):  # noqa: ANN202
    def write(args, ctx):  # noqa: ANN001
        written[args.filepath] = args.content
        return ToolOutput("wrote it", summary="wrote 1 line")

    return make_tool("write_file", write, TextArgs, reads=False, writes_files=True, block_params=("content",))


async def test_native_calls_are_run_as_sent_in_every_profile(tmp_path: Path) -> None:
    """A native call's content is the model's own JSON: `page.svelte` kept its `<script>`
    tags only by luck of its suffix, and a fenced `.txt` lost its fence, silently."""
    from tether.core.profile import SMALL

    svelte = "<script>\n  let count = 0;\n</script>\n"
    fenced = "```\nkeep this fence\n```\n"
    code = "```python\nprint(1)\n```\n"
    for nudges in (False, True):
        written: dict[str, str] = {}
        provider = ScriptedProvider([
            call(("write_file", {"filepath": "src/page.svelte", "content": svelte}),
                 ("write_file", {"filepath": "notes.txt", "content": fenced}),
                 ("write_file", {"filepath": "VERSION", "content": fenced}),
                 ("write_file", {"filepath": "app.py", "content": code})),
            say("Written."),
        ])
        loop, _ = build(provider, [_recording_write(written)], tmp_path, nudges=nudges and SMALL.nudges)
        conv = Conversation()
        await loop.run_turn(conv, "write the files")
        assert written == {"src/page.svelte": svelte, "notes.txt": fenced, "VERSION": fenced, "app.py": code}
        assert all(r.content == "wrote it" for r in tool_results(conv))


async def test_a_text_call_repaired_before_it_ran_says_so_in_its_result(tmp_path: Path) -> None:
    from tether.protocol.shapes import UNFENCED_NOTE

    written: dict[str, str] = {}
    reply = ('<tool_call>\n{"name": "write_file", "arguments": {"filepath": "g.py"}}\n'
             "<content>\n```python\nprint(1)\n```\n</content>\n</tool_call>")
    provider = ScriptedProvider([say(reply), say("All done.")], native=False)
    loop, _ = build(provider, [_recording_write(written)], tmp_path)
    conv = Conversation()
    await loop.run_turn(conv, "write g.py")
    assert written == {"g.py": "print(1)\n"}
    assert tool_results(conv)[0].content == "wrote it\n\n" + UNFENCED_NOTE.format(label="python", path="g.py")


async def test_cut_off_call_is_refused_and_the_model_is_told(tmp_path: Path) -> None:
    ran = []
    tool = make_tool("write_file", lambda a, c: ran.append(a) or "ok", TextArgs, reads=False,
                     writes_files=True, block_params=("content",))
    cut = '<tool_call>\n{"name": "write_file", "arguments": {"filepath": "g.py", "content": "print(1'
    provider = ScriptedProvider([say(cut), say("sorry")], native=False)
    loop, _ = build(provider, [tool], tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "go")
    assert not ran
    feedback = provider.requests[1].messages[-1].text
    assert "again" in feedback.lower()
    assert result.text == "sorry"


async def test_provider_failure_keeps_partial_text_and_valid_history(tmp_path: Path) -> None:
    broken = [TextDelta("Partial ans"), TextDelta("wer"), ProviderError("stream dropped", "stream")]
    provider = ScriptedProvider([call(("read", {"filepath": "a"})), broken])
    loop, ui = build(provider, [make_tool("read", lambda a, c: "d")], tmp_path)
    conv = Conversation()
    result = await loop.run_turn(conv, "go")
    assert result.stop_reason == "error" and result.error == "stream dropped"
    assert result.text == "Partial answer"
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert ("error", "stream dropped") in ui.notices


async def test_cancellation_leaves_a_result_for_every_call(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def hang(args, ctx):  # noqa: ANN001
        started.set()
        await asyncio.sleep(30)

    tool = make_tool("hang", hang, reads=False, writes_files=True)
    provider = ScriptedProvider([call(("hang", {"filepath": "a"}), ("hang", {"filepath": "b"}))])
    loop, _ = build(provider, [tool], tmp_path)
    conv = Conversation()
    task = asyncio.create_task(loop.run_turn(conv, "go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    calls = conv.messages[1].tool_calls
    results = conv.messages[2].tool_results
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert all(r.is_error and "Cancelled" in r.content for r in results)


async def test_cancellation_mid_stream_keeps_the_partial_text(tmp_path: Path) -> None:
    async def slow_stream(request):  # noqa: ANN001
        yield TextDelta("Half of it")
        await asyncio.sleep(30)
        yield Done(Usage(), "end_turn")

    class SlowProvider(ScriptedProvider):
        async def stream(self, messages, tools, options):  # noqa: ANN001
            async for event in slow_stream(None):
                yield event

    loop, ui = build(SlowProvider(), [], tmp_path)
    conv = Conversation()
    task = asyncio.create_task(loop.run_turn(conv, "go"))
    while not ui.shown:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert conv.messages[-1] == Message("assistant", conv.messages[-1].parts)
    assert conv.messages[-1].text == "Half of it"


async def test_approval_gate_asks_and_refusal_reaches_the_model(tmp_path: Path) -> None:
    class AskWrites:
        def check(self, call, tool):  # noqa: ANN001
            return GateVerdict("ask", "it writes") if tool.writes_files else GateVerdict("allow")

    ran = []
    writer = make_tool("write", lambda a, c: ran.append(1) or "ok", TextArgs, reads=False, writes_files=True)
    provider = ScriptedProvider([call(("write", {"filepath": "a", "content": "x"})), say("fine")])
    ui = RecordingUI(allow=False)
    loop, _ = build(provider, [writer], tmp_path, ui=ui, policy=AskWrites())
    conv = Conversation()
    await loop.run_turn(conv, "go")
    assert not ran
    assert ("approve", "write") in ui.events
    assert "refused" in tool_results(conv)[0].content and "not now" in tool_results(conv)[0].content


async def test_nobody_to_ask_means_blocked_not_run(tmp_path: Path) -> None:
    class AskAll:
        def check(self, call, tool):  # noqa: ANN001
            return GateVerdict("ask", "it writes")

    ran = []
    writer = make_tool("write", lambda a, c: ran.append(1) or "ok", TextArgs, reads=False, writes_files=True)
    provider = ScriptedProvider([call(("write", {"filepath": "a", "content": "x"})), say("ok")])
    loop, _ = build(provider, [writer], tmp_path, ui=SilentUI(), policy=AskAll())
    conv = Conversation()
    await loop.run_turn(conv, "go")
    assert not ran
    content = tool_results(conv)[0].content
    assert "Blocked" in content and "Do not retry" in content


async def test_after_hooks_see_changed_paths_and_failures_become_notices(tmp_path: Path) -> None:
    seen = []
    writer = make_tool(
        "write", lambda a, c: ToolOutput("ok", changed_paths=(tmp_path / a.filepath,)), TextArgs,
        reads=False, writes_files=True,
    )
    provider = ScriptedProvider([call(("write", {"filepath": "a", "content": "x"})), say("ok")])
    loop, ui = build(provider, [writer], tmp_path)
    loop.dispatcher.after_success.append(lambda c, t, o: seen.append(o.changed_paths) or None)
    loop.dispatcher.after_success.append(lambda c, t, o: 1 / 0)
    await loop.run_turn(Conversation(), "go")
    assert seen == [(tmp_path / "a",)]
    assert any("ZeroDivisionError" in message for _, message in ui.notices)


async def test_a_before_hook_that_raises_is_reported_and_the_call_still_runs(tmp_path: Path) -> None:
    ran = []
    writer = make_tool(
        "write", lambda a, c: ran.append(a.filepath) or "written", TextArgs,
        reads=False, writes_files=True,
    )
    provider = ScriptedProvider([call(("write", {"filepath": "a", "content": "x"})), say("done")])
    loop, ui = build(provider, [writer], tmp_path)

    def broken_snapshot(call: ToolCall, tool: object) -> None:
        raise OSError("snapshot store is read-only")

    loop.dispatcher.before_run.append(broken_snapshot)
    result = await loop.run_turn(Conversation(), "go")
    assert result.stop_reason == "end_turn" and result.text == "done"
    assert ran == ["a"] and not result.evidence[0].error
    warnings = [message for level, message in ui.notices if level == "warning"]
    assert warnings == ["a hook before write ran failed: OSError: snapshot store is read-only"]


async def test_repeated_call_ids_from_a_server_get_fresh_ones(tmp_path: Path) -> None:
    from tether.core.messages import ToolCallEvent

    reply = [ToolCallEvent(ToolCall("call_0", "read", {"filepath": "a"})),
             ToolCallEvent(ToolCall("call_0", "read", {"filepath": "b"})), Done(Usage(), "tool_use")]
    provider = ScriptedProvider([reply, say("ok")])
    loop, _ = build(provider, [make_tool("read", lambda a, c: f"content of {a.filepath}")], tmp_path)
    conv = Conversation()
    await loop.run_turn(conv, "go")
    calls = conv.messages[1].tool_calls
    assert len({c.id for c in calls}) == 2
    assert [r.content for r in tool_results(conv)] == ["content of a", "content of b"]


async def test_cancellation_keeps_usage_and_evidence_of_the_cancelled_call(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def hang(args, ctx):  # noqa: ANN001
        started.set()
        await asyncio.sleep(30)

    tools = [make_tool("read", lambda a, c: "d"), make_tool("hang", hang, reads=False, writes_files=True)]
    provider = ScriptedProvider([call(("read", {"filepath": "a"})), call(("hang", {"filepath": "b"}))])
    loop, _ = build(provider, tools, tmp_path)
    conv = Conversation()
    task = asyncio.create_task(loop.run_turn(conv, "go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert conv.usage.input_tokens == 20
    assert [(e.call.name, e.summary) for e in conv.evidence][-1] == ("hang", "cancelled")


async def test_an_unexpected_transport_error_ends_the_turn_cleanly(tmp_path: Path) -> None:
    def explode(request):  # noqa: ANN001
        raise OverflowError("port must be 0-65535")

    provider = ScriptedProvider([explode])
    loop, _ = build(provider, [], tmp_path)
    result = await loop.run_turn(Conversation(), "go")
    assert result.stop_reason == "error" and "OverflowError" in result.error


async def test_a_text_call_cut_off_by_the_token_limit_is_not_run(tmp_path: Path) -> None:
    ran = []
    tool = make_tool("run_cmd", lambda a, c: ran.append(a) or "ok")
    text = '<tool_call>\n{"name": "run_cmd", "arguments": {"filepath": "x"}}\n</tool_call>'
    cut = [TextDelta(text), Done(Usage(10, 4096), "max_tokens")]
    provider = ScriptedProvider([cut, say("ok")], native=False)
    loop, _ = build(provider, [tool], tmp_path)
    await loop.run_turn(Conversation(), "go")
    assert not ran
    assert "output token limit" in provider.requests[1].messages[-1].text


@pytest.mark.parametrize("native", [True, False])
async def test_the_context_opens_the_first_request_after_an_unchanging_system_message(
        tmp_path: Path, native: bool) -> None:
    provider = ScriptedProvider([call(("read", {"filepath": "a"})), say("done")])
    provider.native = native
    loop, _ = build(provider, [make_tool("read", lambda args, ctx: "A")], tmp_path)
    loop.context = lambda: "Project root: /p."
    await loop.run_turn(Conversation(), "read a")
    first, second = (r.messages for r in provider.requests)
    assert first[0] is second[0] and "/p" not in first[0].text
    assert first[1].text == "Project root: /p.\n\n# Request\nread a"
    # the same objects again: the providers' caches see an unchanged prefix
    assert second[1] is first[1] and len(second) > len(first)
    assert sum("Project root" in m.text for m in second) == 1
