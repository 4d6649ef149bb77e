"""The Gemini provider against a local server speaking the real streamGenerateContent SSE
format, its schema converter, and `tether -p --provider gemini` end to end.
What every provider does alike is tested once, in test_provider_openai.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import pytest
from fakeserver import FakeServer, Reply, closed_port
from provider_helpers import (
    ANSWER,
    ANSWERED_AND_THANKED,
    HELLO,
    READ_TOOL,
    ask_in_json,
    collector,
    project_with_answer,
    text_of,
    two_reads,
)
from pydantic import BaseModel, Field

from tether.core.messages import (
    Done,
    Event,
    Message,
    Text,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    Usage,
)
from tether.core.toolspec import Tool
from tether.providers import create_provider
from tether.providers._http import answered_history
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.gemini import (
    FOREIGN_SIGNATURE,
    GeminiProvider,
    GeminiStreamDecoder,
    build_chat_body,
    encode_contents,
    gemini_schema,
)
from tether.providers.retry import RetryPolicy
from tether.store.config import Settings

MODEL = "gemini-2.5-flash"
KEY = "AIzaSyTEST-abcdefghijklmnopqrstuv"
OPTIONS = RequestOptions(MODEL)
STREAM_PATH = f"/v1beta/models/{MODEL}:streamGenerateContent"
collect = collector(OPTIONS)


@pytest.fixture
async def gemini(fake_server: FakeServer) -> AsyncIterator[GeminiProvider]:
    provider = GeminiProvider(fake_server.url, api_key=KEY, read_timeout=5)
    yield provider
    await provider.aclose()


def data(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\r\n\r\n".encode()


def candidate(parts: list[dict], finish: str | None = None) -> dict:
    first: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        first["finishReason"] = finish
    return {"candidates": [first]}


# ---------------------------------------------------------------- streaming


async def test_text_arrives_in_deltas_then_one_done_with_usage(gemini, fake_server):
    fake_server.add(Reply(text="Hello, world!", chunk_size=5, usage=(30, 4), cached_tokens=12))
    events = await collect(gemini)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", ", wor", "ld!"]
    assert events[-1] == Done(Usage(30, 4, 12), "end_turn")
    assert sum(isinstance(e, Done) for e in events) == 1


async def test_key_travels_in_a_header_never_in_the_url(gemini, fake_server):
    fake_server.add(Reply(text="ok"))
    await collect(gemini)
    assert fake_server.requests[0][0] == STREAM_PATH
    assert fake_server.queries[0] == "alt=sse"
    assert fake_server.headers[0]["x-goog-api-key"] == KEY
    assert "authorization" not in fake_server.headers[0]
    assert KEY not in fake_server.queries[0] and KEY not in repr(gemini)


async def test_thoughts_are_thinking_and_count_as_output(gemini, fake_server):
    fake_server.add(
        Reply(
            thinking="Consider it.", text="Yes.", chunk_size=6, usage=(10, 3), reasoning_tokens=20
        )
    )
    events = await collect(gemini)
    assert events[:2] == [ThinkingDelta("Consid"), ThinkingDelta("er it.")]
    assert text_of(events) == "Yes."
    assert events[-1].usage == Usage(10, 23, 0)


async def test_parallel_function_calls_get_fresh_ids(gemini, fake_server):
    calls = [("read_file", {"path": 'a "q".txt'}), ("list_dir", {"path": "."})]
    fake_server.add(Reply(text="Two calls.", tool_calls=calls))
    events = await collect(gemini, tools=[READ_TOOL])
    got = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in got] == calls
    assert len({c.id for c in got}) == 2 and all(c.id.startswith("call_") for c in got)
    assert events[-1].stop_reason == "tool_use"


def test_a_call_with_an_id_keeps_it_and_odd_args_are_reported():
    decoder = GeminiStreamDecoder()
    line = (
        data(
            candidate(
                [
                    {"functionCall": {"id": "fc-1", "name": "read_file", "args": {"path": "a"}}},
                    {"functionCall": {"name": "list_dir", "args": "not an object"}},
                    {"functionCall": {"args": {}}},  # no name: dropped
                ]
            )
        )
        .decode()
        .strip()
    )
    events = decoder.feed(line)
    assert events[0] == ToolCallEvent(ToolCall("fc-1", "read_file", {"path": "a"}))
    assert events[1].call.arguments == {"__invalid_json__": "not an object"}
    assert len(events) == 2


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("STOP", "end_turn"),
        ("MAX_TOKENS", "max_tokens"),
        ("SAFETY", "refusal"),
        ("RECITATION", "refusal"),
        ("MALFORMED_FUNCTION_CALL", "malformed_tool_call"),
    ],
)
async def test_finish_reasons_are_mapped(gemini, fake_server, reason, expected):
    fake_server.add(Reply(text="cut", finish_reason=reason))
    events = await collect(gemini)
    assert events[-1].stop_reason == expected


async def test_a_blocked_answer_says_why(fake_server):
    notices: list[str] = []
    provider = GeminiProvider(fake_server.url, api_key=KEY, notice=notices.append)
    fake_server.add(Reply(finish_reason="SAFETY"))
    frames = [
        data(
            {
                "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                "usageMetadata": {"promptTokenCount": 4},
            }
        )
    ]
    fake_server.add(Reply(raw_frames=frames))
    assert (await collect(provider))[-1].stop_reason == "refusal"
    assert (await collect(provider)) == [Done(Usage(4, 0, 0), "refusal")]
    await provider.aclose()
    assert notices == [
        "Gemini stopped the answer (SAFETY).",
        "Gemini refused the request (PROHIBITED_CONTENT).",
    ]


async def test_error_event_mid_stream_keeps_the_text_before(gemini, fake_server):
    frames = [
        data(candidate([{"text": "par"}])),
        data(
            {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
        ),
    ]
    fake_server.add(Reply(raw_frames=frames))
    events: list[Event] = []
    with pytest.raises(ProviderError, match="The model is overloaded") as info:
        await collect(gemini, into=events)
    assert events == [TextDelta("par")] and info.value.kind == "overloaded"


async def test_stream_that_ends_without_a_finish_reason_is_incomplete(gemini, fake_server):
    fake_server.add(Reply(raw_frames=[data(candidate([{"text": "half"}]))]))
    events: list[Event] = []
    with pytest.raises(ProviderError, match="ended the answer before it was complete"):
        await collect(gemini, into=events)
    assert events == [TextDelta("half")]


# ---------------------------------------------------------------- request encoding


HISTORY = [
    # results stored out of call order: Gemini pairs by position, so they are reordered
    *two_reads("Reading.", results_in_call_order=False),
    Message.user("(Note: finish soon.)"),
    *ANSWERED_AND_THANKED,
]


async def test_history_is_encoded_with_function_parts(gemini, fake_server):
    fake_server.add(Reply(text="Done."))
    await collect(
        gemini, HISTORY, [READ_TOOL], RequestOptions(MODEL, temperature=0.2, max_tokens=99)
    )
    (body,) = fake_server.bodies(STREAM_PATH)
    assert body == {
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Read a.txt and b.txt"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Reading."},
                    {
                        "functionCall": {"name": "read_file", "args": {"path": "a.txt"}},
                        "thoughtSignature": FOREIGN_SIGNATURE,
                    },
                    {"functionCall": {"name": "read_file", "args": {"path": "b.txt"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"output": "alpha"}}},
                    {
                        "functionResponse": {
                            "name": "read_file",
                            "response": {"error": "no such file"},
                        }
                    },
                    {"text": "(Note: finish soon.)"},
                ],
            },
            {"role": "model", "parts": [{"text": "a.txt says alpha."}]},
            {"role": "user", "parts": [{"text": "thanks"}]},
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "read_file",
                        "description": "Read a text file.",
                        "parameters": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                            "required": ["path"],
                        },
                    }
                ]
            }
        ],
        "generationConfig": {
            "temperature": 0.2,
            "maxOutputTokens": 99,
            "thinkingConfig": {"includeThoughts": True},
        },
    }


async def test_a_thought_signature_goes_back_with_its_call(gemini, fake_server):
    fake_server.add(
        Reply(
            tool_calls=[("read_file", {"path": "a"}), ("read_file", {"path": "b"})],
            thought_signature="c2lnbmF0dXJl",
        ),
        Reply(text="ok"),
    )
    events = await collect(gemini, tools=[READ_TOOL])
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    history = [
        Message.user("hi"),
        Message("assistant", list(calls)),
        Message("tool", [ToolResult(c.id, c.name, "x") for c in calls]),
    ]
    await collect(gemini, history, [READ_TOOL])
    model_turn = fake_server.bodies(STREAM_PATH)[1]["contents"][1]
    assert model_turn["parts"][0]["thoughtSignature"] == "c2lnbmF0dXJl"
    assert "thoughtSignature" not in model_turn["parts"][1]


def test_thinking_is_asked_for_only_from_models_that_think():
    assert "generationConfig" not in build_chat_body(
        HELLO, None, RequestOptions("gemini-2.0-flash")
    )
    for model in ("gemini-2.5-pro", "gemini-3-pro-preview", "models/gemini-2.5-flash-lite"):
        config = build_chat_body(HELLO, None, RequestOptions(model))["generationConfig"]
        assert config == {"thinkingConfig": {"includeThoughts": True}}


def test_history_with_calls_but_no_tools_offered_declares_them_and_forbids_calls():
    body = build_chat_body(HISTORY, None, OPTIONS)
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "read_file", "description": "Not available in this request."}
            ]
        }
    ]
    assert "tools" not in build_chat_body(HELLO, None, OPTIONS)


def test_roles_alternate_and_empty_text_is_never_sent():
    contents = encode_contents(
        [
            Message("assistant", [Text("Earlier.")]),
            Message.user(" "),
            Message.user("go"),
            Message("assistant", [Text("")]),
            Message("assistant", [Text("ok")]),
        ]
    )
    assert contents == [
        {"role": "user", "parts": [{"text": "(continuing the conversation)"}]},
        {"role": "model", "parts": [{"text": "Earlier."}]},
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"text": "ok"}]},
    ]


def test_a_call_left_without_result_is_answered():
    contents = encode_contents(
        answered_history([
            Message.user("go"),
            Message("assistant", [ToolCall("c1", "read_file", {}), ToolCall("c2", "list_dir", {})]),
            Message("tool", [ToolResult("c2", "list_dir", "a")]),
        ])
    )
    responses = [p["functionResponse"] for p in contents[-1]["parts"]]
    assert [r["name"] for r in responses] == ["read_file", "list_dir"]
    assert responses[0]["response"] == {"error": "No result was recorded for this call."}


# ---------------------------------------------------------------- schemas


class Inner(BaseModel):
    depth: int = Field(1, ge=0, title="Depth")


class Everything(BaseModel):
    name: str = Field(description="A name.")
    count: int | None = Field(None, ge=1, description="How many.")
    mode: Literal["fast", "slow"] = "fast"
    fixed: Literal["only"] = "only"
    tags: list[str] = Field(default_factory=list, max_length=5)
    inner: Inner | None = None
    either: int | str = 0


def test_schemas_are_reduced_to_what_gemini_accepts():
    schema = gemini_schema(Everything.model_json_schema())
    text = json.dumps(schema)
    for key in ("additionalProperties", '"default"', '"title"', "$defs", "$ref", '"const"'):
        assert key not in text
    props = schema["properties"]
    assert props["count"] == {
        "type": "integer",
        "minimum": 1,
        "description": "How many.",
        "nullable": True,
    }
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["fixed"]["enum"] == ["only"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "maxItems": 5}
    assert props["inner"]["nullable"] is True
    assert props["inner"]["properties"]["depth"] == {"type": "integer", "minimum": 0}
    assert props["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert schema["required"] == ["name"]


def test_type_lists_and_unknown_formats():
    schema = gemini_schema(
        {
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"], "format": "uri"},
                "b": {"type": "string", "format": "date-time"},
                "title": {"type": "string"},  # a property called "title" is kept
            },
        }
    )
    assert schema["properties"] == {
        "a": {"type": "string", "nullable": True},
        "b": {"type": "string", "format": "date-time"},
        "title": {"type": "string"},
    }


def test_a_tool_without_parameters_has_no_parameters_field():
    class NoArgs(BaseModel):
        pass

    tool = Tool("git_status", "Show status.", NoArgs, lambda a, c: "")
    body = build_chat_body(HELLO, [tool], OPTIONS)
    assert body["tools"] == [
        {"functionDeclarations": [{"name": "git_status", "description": "Show status."}]}
    ]


# ---------------------------------------------------------------- failures


async def test_connection_refused_names_the_url_and_the_setting():
    url = f"http://127.0.0.1:{closed_port()}"
    provider = GeminiProvider(url, api_key=KEY)
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    await provider.aclose()
    assert info.value.kind == "connection"
    assert f"Gemini at {url} (connection refused)" in str(info.value)
    assert "GEMINI_BASE_URL" in str(info.value) and KEY not in str(info.value)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "API key not valid. Please pass a valid API key."),
        (403, "Permission denied"),
        (401, "Request had invalid authentication credentials."),
    ],
)
async def test_auth_failure_names_the_variable_and_connect(gemini, fake_server, status, message):
    fake_server.add(Reply(status=status, error_message=f"{message} ({KEY})"))
    with pytest.raises(ProviderError) as info:
        await collect(gemini)
    text = str(info.value)
    assert info.value.kind == "auth" and "\n" not in text
    assert "GEMINI_API_KEY" in text and "/connect gemini" in text
    assert KEY not in text and "AIza" not in text


async def test_unknown_model_is_named(gemini, fake_server):
    fake_server.add(
        Reply(status=404, error_message="models/gemini-9 is not found for API version v1beta")
    )
    with pytest.raises(ProviderError, match="model 'gemini-9' not found") as info:
        await collect(gemini, options=RequestOptions("gemini-9"))
    assert info.value.status == 404


async def test_rate_limit_is_retried_honouring_google_retry_delay(fake_server):
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    notices: list[str] = []
    provider = GeminiProvider(
        fake_server.url, api_key=KEY, retry=RetryPolicy(sleep=sleep), notice=notices.append
    )
    fake_server.add(Reply(status=429, retry_after=3), Reply(status=503), Reply(text="ok"))
    events = await collect(provider)
    await provider.aclose()
    assert text_of(events) == "ok" and waits[0] == 3.0 and len(waits) == 2
    assert notices[0] == "Gemini is rate limiting requests (429); retrying in 3 s (1/4)."
    assert len(fake_server.bodies(STREAM_PATH)) == 3


# ---------------------------------------------------------------- models, registry


async def test_list_models_without_prefix_and_without_embedding_models(gemini, fake_server):
    fake_server.models = ["gemini-2.5-flash", "gemini-2.5-pro"]
    assert await gemini.list_models() == ["gemini-2.5-flash", "gemini-2.5-pro"]
    assert fake_server.requests[0][0] == "/v1beta/models"
    assert fake_server.headers[0]["x-goog-api-key"] == KEY
    assert KEY not in fake_server.queries[0]
    assert await gemini.supports_native_tools(MODEL) is True


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"GEMINI_API_KEY": "AIza-gemini-0000000000000000000", "GOOGLE_API_KEY": "AIza-google"},
            "AIza-gemini-0000000000000000000",
        ),
        ({"GOOGLE_API_KEY": "AIza-google-0000000000000000000"}, "AIza-google-0000000000000000000"),
    ],
)
async def test_created_provider_reads_gemini_or_google_key(fake_server, tmp_path, env, expected):
    settings = Settings(provider="gemini", gemini_base_url=fake_server.url)
    fake_server.add(Reply(text="ok"))
    provider = create_provider(settings, env, home=tmp_path)
    assert provider.default_model == "gemini-2.5-flash"
    await collect(provider)
    await provider.aclose()
    assert fake_server.headers[0]["x-goog-api-key"] == expected


# ---------------------------------------------------------------- the CLI, end to end


def test_cli_answers_a_two_tool_question_in_json(tmp_path: Path):
    root = project_with_answer(tmp_path)
    script = [
        Reply(thinking="Where is it?", tool_calls=[("list_dir", {"path": "."})]),
        Reply(tool_calls=[("read_file", {"filepath": "answer.txt"})]),
        Reply(text=ANSWER),
    ]
    with FakeServer(script) as server:
        proc = ask_in_json(
            "gemini", server.url, MODEL, root, tmp_path / "home", {"GEMINI_API_KEY": KEY}
        )
        bodies = server.bodies(STREAM_PATH)
        queries = list(server.queries)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "The file says the answer is 42." and result["is_error"] is False
    assert [c["name"] for c in result["tool_calls"]] == ["list_dir", "read_file"]
    contents = bodies[-1]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    response = contents[-1]["parts"][0]["functionResponse"]
    assert response["name"] == "read_file" and "42" in response["response"]["output"]
    assert all(q == "alt=sse" for q in queries)
    assert KEY not in proc.stdout + proc.stderr
