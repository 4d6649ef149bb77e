"""Context compression: estimates, window sizes, trimming, condensing, dropping, /compact."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from scripted import Request, ScriptedProvider, call, make_tool, say
from test_loop import build

from tether.core.messages import Done, Message, Text, ToolCall, ToolResult, Usage
from tether.core.model_table import known_context_window
from tether.engine.context import (
    DEFAULT_WINDOW,
    SUMMARY_HEADER,
    SUMMARY_PROMPT,
    Compressor,
    TokenEstimator,
    context_window,
    latest_request_index,
    transcript,
)
from tether.engine.loop import Conversation
from tether.providers.base import ProviderError
from tether.providers.ollama import SERVER_DEFAULT_NUM_CTX, ollama_context_window

SYSTEM = "You are a helpful assistant."


# ---------------------------------------------------------------- helpers


def turn(i: int, result_chars: int = 2000, steps: int = 1, answer_chars: int = 0) -> list[Message]:
    """One finished turn: a request, `steps` tool round trips and an answer."""
    out = [Message.user(f"request {i}")]
    for s in range(steps):
        call_id = f"c{i}_{s}"
        out.append(Message("assistant", [Text(f"reading f{i}_{s}"),
                                         ToolCall(call_id, "read", {"filepath": f"f{i}_{s}"})]))
        out.append(Message("tool", [ToolResult(call_id, "read", f"<{i}.{s}>" + "x" * result_chars)]))
    out.append(Message("assistant", [Text(f"answer {i} " + "a" * answer_chars)]))
    return out


def history(turns: int, result_chars: int = 2000, answer_chars: int = 0) -> list[Message]:
    """Finished turns; long answers are what trimming tool results cannot shrink."""
    return [m for i in range(turns) for m in turn(i, result_chars, answer_chars=answer_chars)]


def current_turn(text: str, steps: int, result_chars: int) -> list[Message]:
    """A turn in progress: the request and `steps` round trips, no answer yet."""
    return turn(999, result_chars, steps)[:-1] if steps else [Message.user(text)]


def problems(messages: Sequence[Message]) -> list[str]:
    """What would make a provider reject this history (empty when it is valid)."""
    found: list[str] = []
    if messages and messages[0].role == "tool":
        found.append("starts with a tool message")
    for i, message in enumerate(messages):
        calls = {c.id for c in message.tool_calls}
        following = messages[i + 1] if i + 1 < len(messages) else None
        if calls:
            answered = {r.call_id for r in following.tool_results} if following else set()
            if following is None or following.role != "tool" or answered != calls:
                found.append(f"calls at {i} lack their results")
        if message.role == "tool":
            previous = messages[i - 1] if i else None
            asked = {c.id for c in previous.tool_calls} if previous else set()
            if {r.call_id for r in message.tool_results} != asked:
                found.append(f"results at {i} answer no call")
    return found


def summarizer(text: str = "They read files f0..f49 and decided to refactor.") -> ScriptedProvider:
    return ScriptedProvider([say(text)])


def failing() -> ScriptedProvider:
    return ScriptedProvider([[ProviderError("connection refused", "connection")]])


class Notices(list):
    def __call__(self, message: str) -> None:
        self.append(message)


def raw(messages: Sequence[Message], tools=None) -> float:  # noqa: ANN001
    return TokenEstimator().raw(messages, SYSTEM, tools)


class WindowProbe:
    def __init__(self, answer, name: str = "probe") -> None:  # noqa: ANN001
        self.name = name
        self.answer = answer
        self.asked: list[str] = []

    async def context_window(self, model: str) -> int | None:
        self.asked.append(model)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


# ---------------------------------------------------------------- the estimate


def test_estimate_counts_text_calls_results_system_and_tools() -> None:
    est = TokenEstimator()
    assert est.estimate([Message.user("a" * 400)]) == 4 + 100
    call_msg = Message("assistant", [ToolCall("c1", "read", {"filepath": "a" * 80})])
    result_msg = Message("tool", [ToolResult("c1", "read", "b" * 800)])
    assert est.raw([call_msg]) > 80 / 4
    assert est.raw([result_msg]) > 800 / 4
    with_system = est.raw([call_msg], system="s" * 400)
    assert with_system - est.raw([call_msg]) >= 100
    tool = make_tool("read", lambda a, c: "")
    assert est.raw([call_msg], tools=[tool]) > est.raw([call_msg]) + 10


def test_calibration_moves_toward_reported_counts_and_is_clamped() -> None:
    est = TokenEstimator()
    est.observe(1000, 1300)
    assert est.ratio == 1.3  # the first real count replaces the prior guess
    est.observe(1000, 2000)
    assert 1.3 < est.ratio < 2.0  # later counts move it part of the way
    for _ in range(20):
        est.observe(1000, 2000)
    assert abs(est.ratio - 2.0) < 0.01
    assert est.estimate([Message.user("a" * 400)]) == 208
    for _ in range(20):
        est.observe(100, 10_000)
    assert abs(est.ratio - 3.0) < 1e-3
    for _ in range(20):
        est.observe(1000, 300)
    assert abs(est.ratio - 0.5) < 1e-3


def test_implausibly_small_counts_are_ignored() -> None:
    est = TokenEstimator()
    est.observe(5000, 10)  # a cached prompt reported as almost nothing
    est.observe(5000, 0)
    assert est.ratio == 1.0 and est.samples == 0


def test_compressor_observe_uses_the_whole_request() -> None:
    est = TokenEstimator()
    guard = Compressor(summarizer(), "m", 10_000, estimator=est)
    request = [Message.system("s" * 400), Message.user("u" * 400)]
    guard.observe(request, None, Usage(input_tokens=416))
    assert est.ratio == 2.0


# ---------------------------------------------------------------- window sizes


def test_known_windows_by_name_prefix() -> None:
    assert known_context_window("claude-sonnet-4-5") == 200_000
    assert known_context_window("gpt-4o-mini") == 128_000
    assert known_context_window("gpt-4.1-nano") == 1_047_576
    assert known_context_window("gpt-5-mini") == 400_000
    assert known_context_window("o3-mini") == 200_000
    assert known_context_window("o4-mini") == 200_000
    assert known_context_window("gemini-2.5-pro") == 1_048_576
    assert known_context_window("gemini-1.5-flash") == 1_048_576
    assert known_context_window("openrouter/anthropic/claude-3-haiku") == 200_000
    assert known_context_window("qwen2.5-coder:7b") is None


async def test_context_window_setting_then_provider_then_default() -> None:
    probe = WindowProbe(16_384)
    assert await context_window(probe, "llama3", 4000) == 4000
    assert probe.asked == []  # the setting needs no question
    assert await context_window(probe, "llama3", None) == 16_384
    assert probe.asked == ["llama3"]


async def test_context_window_falls_back_when_the_provider_cannot_tell() -> None:
    assert await context_window(WindowProbe(None), "claude-3-opus", None) == DEFAULT_WINDOW
    failing_probe = WindowProbe(ProviderError("server down", "connection"))
    assert await context_window(failing_probe, "gpt-5", None) == DEFAULT_WINDOW
    assert await context_window(WindowProbe(True), "m", None) == DEFAULT_WINDOW
    assert await context_window(WindowProbe(-5), "m", None) == DEFAULT_WINDOW


async def test_each_provider_answers_for_its_own_models(fake_server) -> None:
    """Hosted providers read the table without a request; Ollama never uses the table (a local
    model may be called anything) and, unable to ask, says what its server would use."""
    from fakeserver import closed_port

    from tether.providers.anthropic import AnthropicProvider
    from tether.providers.gemini import GeminiProvider
    from tether.providers.ollama import OllamaProvider
    from tether.providers.openai import OpenAIProvider

    hosted = [
        (AnthropicProvider(fake_server.url, api_key="k"), "claude-sonnet-4-5", 200_000),
        (GeminiProvider(fake_server.url, api_key="k"), "gemini-2.5-pro", 1_048_576),
        (OpenAIProvider(fake_server.url + "/v1"), "gpt-4o", 128_000),
    ]
    for provider, model, window in hosted:
        assert await context_window(provider, model) == window
        await provider.aclose()
    assert fake_server.requests == []
    unknown = AnthropicProvider(fake_server.url, api_key="k")
    assert await context_window(unknown, "mystery-model") == DEFAULT_WINDOW
    await unknown.aclose()
    offline = OllamaProvider(f"http://127.0.0.1:{closed_port()}")
    assert await context_window(offline, "gpt-4o") == SERVER_DEFAULT_NUM_CTX
    await offline.aclose()


def test_ollama_window_from_api_show() -> None:
    info = {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}
    assert ollama_context_window(info) == SERVER_DEFAULT_NUM_CTX
    with_num_ctx = {**info, "parameters": 'stop "<|im_end|>"\nnum_ctx 16384\ntemperature 0.7'}
    assert ollama_context_window(with_num_ctx) == 16_384
    too_big = {**info, "parameters": "num_ctx 65536"}
    assert ollama_context_window(too_big) == 32_768
    tiny_model = {"model_info": {"llama.context_length": 2048}}
    assert ollama_context_window(tiny_model) == 2048
    assert ollama_context_window({}, default_num_ctx=8192) == 8192


# ---------------------------------------------------------------- trimming


async def test_trimming_goes_oldest_first_and_stops_once_under() -> None:
    messages = [*history(6, result_chars=4000), Message.user("now this")]
    turn_start = len(messages) - 1
    full = raw(messages)
    # room for everything but about two and a half results
    window = int((full - 2500) / 0.75)
    notices = Notices()
    provider = summarizer()
    guard = Compressor(provider, "m", window, reserve=window, notice=notices)
    assert await guard.fit(messages, turn_start, SYSTEM, None) == turn_start
    contents = [r.content for m in messages for r in m.tool_results]
    trimmed = [c.startswith("[result trimmed to save context: 4005 characters") for c in contents]
    assert trimmed == [True, True, True, False, False, False]
    assert raw(messages) * 1.0 <= guard.limit
    assert len(notices) == 1
    assert notices[0].startswith("Context: trimmed 3 old tool results (≈2,9")
    assert provider.requests == []  # trimming sufficed: no summary
    assert not problems(messages)


async def test_trimming_never_touches_the_last_step_of_the_turn_in_progress() -> None:
    messages = current_turn("go", steps=3, result_chars=4000)
    notices = Notices()
    guard = Compressor(summarizer(), "m", 1000, notice=notices)
    assert await guard.fit(messages, 0, SYSTEM, None) == 0
    results = [r.content for m in messages for r in m.tool_results]
    assert results[0].startswith("[result trimmed") and results[1].startswith("[result trimmed")
    assert results[2].startswith("<999.2>") and len(results[2]) == 4007
    assert messages[0].text == "request 999"
    assert notices[0].startswith("Context: trimmed 2 old tool results")
    assert notices[-1].startswith("Context: the request may exceed the model's context (")
    assert len(notices) == 2


async def test_results_before_the_turn_go_before_older_steps_of_the_turn() -> None:
    old = history(1, result_chars=4000)
    messages = [*old, *current_turn("go", steps=2, result_chars=4000)]
    window = int((raw(messages) - 800) / 0.75)
    guard = Compressor(summarizer(), "m", window, reserve=window)
    await guard.fit(messages, len(old), SYSTEM, None)
    results = [r.content for m in messages for r in m.tool_results]
    assert results[0].startswith("[result trimmed")
    assert results[1].startswith("<999.0>") and results[2].startswith("<999.1>")


async def test_trimming_replaces_messages_instead_of_mutating_them() -> None:
    messages = [*history(3, result_chars=4000), Message.user("go")]
    before = list(messages)
    guard = Compressor(summarizer(), "m", int((raw(messages) - 500) / 0.75), reserve=10**9)
    await guard.fit(messages, len(messages) - 1, SYSTEM, None)
    assert messages[2] is not before[2]
    assert before[2].tool_results[0].content.startswith("<0.0>")  # an earlier request's copy


# ---------------------------------------------------------------- condensing


async def test_long_history_is_condensed_and_the_request_kept_verbatim() -> None:
    messages = [*history(50, result_chars=1500, answer_chars=600)]
    assert len(messages) == 200
    request = Message.user("Now please rename the config loader, keeping every test green.")
    messages.append(request)
    notices = Notices()
    provider = summarizer()
    guard = Compressor(provider, "m", 8000, reserve=2000, notice=notices)
    start = await guard.fit(messages, 200, SYSTEM, None)
    assert start == 1
    assert messages[start] is request
    assert messages[0].role == "user" and messages[0].text.startswith(SUMMARY_HEADER + "\n")
    assert "decided to refactor" in messages[0].text
    assert len(messages) == 2
    assert guard.estimator.estimate(messages, SYSTEM) <= guard.limit
    assert not problems(messages)
    assert notices[-1] == "Context: condensed 200 earlier messages into a summary"
    assert len(provider.requests) == 1


async def test_the_summary_request_is_tool_free_and_fits_half_the_window() -> None:
    messages = [*history(50, result_chars=1500, answer_chars=600), Message.user("go on")]
    provider = summarizer()
    guard = Compressor(provider, "m", 8000, reserve=2000)
    await guard.fit(messages, 200, SYSTEM, [make_tool("read", lambda a, c: "")])
    sent = provider.requests[0]
    assert sent.tools is None and sent.options.model == "m"
    assert [m.role for m in sent.messages] == ["system", "user"]
    assert sent.messages[0].text == SUMMARY_PROMPT
    assert TokenEstimator().estimate(sent.messages) <= 8000 / 2 + 20
    body = sent.messages[1].text
    assert "characters omitted" in body
    assert "request 49" in body and "answer 49" in body  # the latest history survives the cap


async def test_condensing_sees_results_from_before_trimming() -> None:
    messages = [*history(2, result_chars=300, answer_chars=3000), Message.user("go")]
    messages[2] = Message("tool", [ToolResult("c0_0", "read", "the secret is 42 " * 40)])
    provider = summarizer()
    guard = Compressor(provider, "m", 1500)
    await guard.fit(messages, len(messages) - 1, SYSTEM, None)
    assert "the secret is 42" in provider.requests[0].messages[1].text


async def test_turn_in_progress_is_kept_and_history_stays_valid() -> None:
    old = history(30, result_chars=1000)
    live = current_turn("go", steps=3, result_chars=300)
    messages = [*old, *live]
    guard = Compressor(summarizer(), "m", 3000, reserve=500)
    start = await guard.fit(messages, len(old), SYSTEM, None)
    assert messages[start:] == live
    assert not problems(messages)


async def test_summary_failure_falls_back_to_dropping_with_a_notice() -> None:
    old = history(40, result_chars=1000, answer_chars=1000)
    live = current_turn("go", steps=1, result_chars=200)
    messages = [*old, *live]
    notices = Notices()
    guard = Compressor(failing(), "m", 6000, reserve=1000, notice=notices)
    start = await guard.fit(messages, len(old), SYSTEM, None)
    assert messages[start:] == live
    assert messages[0].role == "user" and "dropped to fit" in messages[0].text
    assert messages[1].role == "user" and messages[1].text.startswith("request ")
    assert 1 < start < len(old)  # only as much as needed was dropped
    assert not problems(messages)
    assert guard.estimator.estimate(messages, SYSTEM) <= guard.limit
    assert any(n.startswith("Context: the summary request failed (connection refused); dropped the ")
               for n in notices)


async def test_an_empty_summary_counts_as_a_failure() -> None:
    messages = [*history(20, answer_chars=1000), Message.user("go")]
    notices = Notices()
    guard = Compressor(ScriptedProvider([say("")]), "m", 2000, reserve=500, notice=notices)
    start = await guard.fit(messages, len(messages) - 1, SYSTEM, None)
    assert messages[start].text == "go"
    assert any("empty summary" in n for n in notices)
    assert not problems(messages)


async def test_disabled_does_nothing() -> None:
    messages = [*history(50), Message.user("go")]
    snapshot = [m.to_dict() for m in messages]
    provider = summarizer()
    notices = Notices()
    guard = Compressor(provider, "m", 500, enabled=False, notice=notices)
    assert await guard.fit(messages, 200, SYSTEM, None) == 200
    assert [m.to_dict() for m in messages] == snapshot
    assert provider.requests == [] and notices == []


async def test_a_request_that_fits_is_left_alone() -> None:
    messages = [*history(3), Message.user("go")]
    snapshot = [m.to_dict() for m in messages]
    guard = Compressor(summarizer(), "m", 100_000)
    assert await guard.fit(messages, 12, SYSTEM, None) == 12
    assert [m.to_dict() for m in messages] == snapshot


async def test_cannot_loop_a_huge_summary_and_a_huge_turn_send_anyway() -> None:
    old = history(20)
    live = [Message.user("please review this: " + "y" * 20_000)]
    messages = [*old, *live]
    notices = Notices()
    provider = ScriptedProvider([say("blah " * 50_000, chunk=5000)])
    guard = Compressor(provider, "m", 4000, reserve=1000, notice=notices)
    start = await guard.fit(messages, len(old), SYSTEM, None)
    assert start == 1 and messages[1] is live[0]
    assert len(provider.requests) == 1  # one condensation, no retry
    assert len(messages[0].text) < 4 * 4000  # the rambling summary was cut to size
    assert notices[-2] == "Context: condensed 80 earlier messages into a summary"
    assert notices[-1].startswith("Context: the request may exceed the model's context (")
    assert notices[-1].endswith(" of 4,000 tokens)")
    # the next step finds only a summary before the turn: nothing more to condense
    notices.clear()
    assert await guard.fit(messages, start, SYSTEM, None) == start
    assert len(provider.requests) == 1
    assert len(notices) == 1 and "may exceed" in notices[0]


# ---------------------------------------------------------------- /compact


async def test_compact_on_demand_between_turns() -> None:
    messages = history(4)
    last_request, last_answer = messages[-4], messages[-1]
    notices = Notices()
    provider = summarizer("short summary")
    guard = Compressor(provider, "m", 1_000_000, notice=notices)
    start = await guard.compact(messages)
    assert start == 1
    assert messages[0].text == f"{SUMMARY_HEADER}\nshort summary"
    assert messages[1] is last_request and messages[-1] is last_answer
    assert not problems(messages)
    assert notices == ["Context: condensed 12 earlier messages into a summary"]
    assert latest_request_index(messages) == 1


async def test_compact_with_nothing_older_or_a_failing_model_changes_nothing() -> None:
    notices = Notices()
    one = history(1)
    provider = summarizer()
    guard = Compressor(provider, "m", 1000, notice=notices)
    assert await guard.compact(one) == 0
    assert provider.requests == [] and notices == ["Context: nothing to condense yet"]
    messages = history(3)
    snapshot = [m.to_dict() for m in messages]
    notices.clear()
    guard = Compressor(failing(), "m", 1000, notice=notices)
    assert await guard.compact(messages) == 8
    assert [m.to_dict() for m in messages] == snapshot
    assert notices == ["Context: could not condense the conversation (connection refused)"]


def test_transcript_is_plain_text_with_calls_and_clipped_results() -> None:
    text = transcript(turn(7, result_chars=5000))
    assert text.startswith("User: request 7")
    assert 'Assistant called read({"filepath": "f7_0"})' in text
    assert "Tool result of read: <7.0>" in text and "characters omitted" in text
    assert len(text) < 2500


# ---------------------------------------------------------------- properties


@st.composite
def histories(draw):  # noqa: ANN001, ANN201
    turns = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3000)), max_size=12))
    messages: list[Message] = []
    for i, (steps, size) in enumerate(turns):
        if steps:
            messages.extend(turn(i, size, steps))
        else:
            messages.extend([Message.user(f"r{i}"), Message("assistant", [Text(f"a{i}")])])
    live_steps = draw(st.integers(0, 3))
    live = current_turn("now", live_steps, draw(st.integers(0, 3000)))
    return messages, live


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(200, 6000), st.booleans())
async def test_any_history_stays_valid_and_keeps_the_turn(case, window, summary_fails) -> None:  # noqa: ANN001
    old, live = case
    messages = [*old, *live]
    provider = failing() if summary_fails else summarizer()
    guard = Compressor(provider, "m", window, reserve=window // 8)
    start = await guard.fit(messages, len(old), SYSTEM, None)
    assert not problems(messages)
    assert messages[start].text == live[0].text
    assert len(messages) - start == len(live)
    assert len(provider.requests) <= 1


# ---------------------------------------------------------------- in the loop


async def test_a_multi_step_turn_in_the_loop_stays_under_the_window(tmp_path: Path) -> None:
    """The provider counts 1.5 tokens per estimated token; the guard learns that."""
    window = 2400
    reported: list[int] = []

    def counted(events: list) -> object:
        def reply(request: Request) -> list:
            tokens = int(1.5 * TokenEstimator().raw(request.messages, "", request.tools))
            if request.tools is not None or request.messages[0].text != SUMMARY_PROMPT:
                reported.append(tokens)
            done = events[-1]
            return [*events[:-1], Done(Usage(tokens, 5), done.stop_reason)]
        return reply

    steps = [counted(call(("read", {"filepath": f"f{i}"}))) for i in range(6)]
    provider = ScriptedProvider([*steps, counted(say("all read"))])
    read = make_tool("read", lambda args, ctx: f"<{args.filepath}>" + "z" * 2400)
    loop, _ = build(provider, [read], tmp_path)
    notices = Notices()
    guard = Compressor(provider, "m", window, reserve=400, notice=notices)
    loop.guard = guard
    conv = Conversation(messages=history(2, result_chars=200))
    result = await loop.run_turn(conv, "read the six files")
    assert result.text == "all read" and result.requests == 7
    assert abs(guard.estimator.ratio - 1.5) < 0.05
    assert reported and all(t <= window for t in reported[1:])  # the first sets the ratio
    untrimmed = 1.5 * sum(len(e.result) for e in result.evidence) / 4
    assert untrimmed > window  # without the guard the last request would not have fit
    assert not problems(conv.messages)
    assert any(n.startswith("Context: trimmed") for n in notices)
    last_results = [m for m in provider.requests[-1].messages if m.role == "tool"][-1]
    assert last_results.tool_results[0].content.startswith("<f5>z")  # the last step is whole
    user_texts = [m.text for m in conv.messages if m.role == "user"]
    assert "read the six files" in user_texts


async def test_the_loop_follows_the_turn_start_after_condensing(tmp_path: Path) -> None:
    steps = [call(("read", {"filepath": f"f{i}"})) for i in range(3)]
    provider = ScriptedProvider([*steps, say("done")])
    read = make_tool("read", lambda args, ctx: f"<{args.filepath}>" + "z" * 1200)
    loop, _ = build(provider, [read], tmp_path)
    notices = Notices()
    summaries = summarizer("earlier: ten answers were given")
    loop.guard = Compressor(summaries, "m", 3000, reserve=500, notice=notices)
    conv = Conversation(messages=history(10, result_chars=500, answer_chars=1500))
    result = await loop.run_turn(conv, "read three files")
    assert result.text == "done"
    assert len(summaries.requests) == 1
    assert "Context: condensed 40 earlier messages into a summary" in notices
    assert conv.messages[0].text.startswith(SUMMARY_HEADER)
    assert conv.messages[1].text == "read three files"
    assert [m.role for m in conv.messages[1:]] == ["user", *["assistant", "tool"] * 3, "assistant"]
    assert not problems(conv.messages)
    for sent in provider.requests:
        assert TokenEstimator().estimate(sent.messages, "", sent.tools) <= 3000 - 500
