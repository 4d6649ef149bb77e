"""The request prefix is the same in every project, on every day and at every turn, so a
server's prompt cache is reused: the system message and the tool menu never change, what
does (the place, the date, the project's instructions, the project map, the opening note)
comes after them, once, and consecutive requests of a session share all but their newest
messages. Real runtimes in two projects, against the local fake server of each provider's
wire format; and a real `tether -p` run for the command line's own path."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Reply
from test_cli import openai_args, run_cli

from tether.core.messages import Message, Text, ToolCall, ToolResult
from tether.core.toolspec import ToolContext, ToolTable
from tether.engine.loop import Conversation
from tether.protocol import TextHistory, render_history_as_text
from tether.runtime import RunOptions, build_runtime
from tether.store.config import load_settings
from tether.tools import builtin_tools
from tether.ui.headless import HeadlessUI

REQUEST = "Read the main file of this project and tell me what it prints."
PROVIDERS = {
    # provider: (its base url setting, the path of its model requests, the body's fixed
    # fields (system message, tool menu), where the conversation goes)
    "openai": ("openai_base_url", "/chat/completions", ("tools",), "messages"),
    "ollama": ("ollama_host", "/api/chat", ("tools",), "messages"),
    "anthropic": ("anthropic_base_url", "/v1/messages", ("system", "tools"), "messages"),
    "gemini": ("gemini_base_url", ":streamGenerateContent", ("systemInstruction", "tools"), "contents"),
}
KEYS = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test", "GEMINI_API_KEY": "g-test"}


def project(tmp_path: Path, name: str) -> Path:
    """A project of its own: its own instructions and files (so its own project map)."""
    root = tmp_path / name
    (root / "src").mkdir(parents=True)
    (root / "AGENTS.md").write_text(f"Instructions of {name}: use tabs.\n")
    (root / "src" / f"{name}_main.py").write_text("print('hi')\n")
    return root


async def session_bodies(root: Path, home: Path, provider: str, protocol: str, profile: str,
                         today: datetime.date) -> list[dict[str, Any]]:
    """The request bodies of a turn of two requests (a read, then the answer) in `root`."""
    url_field, path, _, _ = PROVIDERS[provider]
    main = f"src/{root.name}_main.py"
    call = f'<tool_call>\n{{"name": "read_file", "arguments": {{"filepath": "{main}"}}}}\n</tool_call>'
    first = Reply(text=call) if protocol == "text" else Reply(tool_calls=[("read_file", {"filepath": main})])
    with FakeServer([first, Reply(text="It prints hi.")]) as server:
        url = server.url + ("/v1" if provider == "openai" else "")
        settings, _ = load_settings({"provider": provider, url_field: url, "model": "fake",
                                     "sandbox": "off", "profile": profile, "protocol": protocol,
                                     "verify_after_change": 0}, {}, home)
        runtime = build_runtime(settings, RunOptions(root=root, home=home, trusted=True, auto=True),
                                HeadlessUI("json"), KEYS)
        runtime.today = today
        try:
            await runtime.start()
            runtime.git.enabled = False
            result = await runtime.loop.run_turn(Conversation([Message.user(REQUEST)]), REQUEST)
        finally:
            await runtime.aclose()
        assert result.error is None, result.error
        return [body for where, body in server.requests if path in where]


def fixed_part(provider: str, body: dict[str, Any]) -> str:
    """What comes before the conversation: the system message and the tool menu."""
    _, _, fields, conversation = PROVIDERS[provider]
    fixed = {name: body.get(name) for name in fields}
    if provider in ("openai", "ollama"):
        fixed["system"] = body[conversation][0]
        assert fixed["system"]["role"] == "system"
    return json.dumps(fixed, sort_keys=True)


def turns(provider: str, body: dict[str, Any]) -> list[Any]:
    """The conversation after the system message, without Anthropic's moving cache marker."""
    _, _, _, conversation = PROVIDERS[provider]
    entries = body[conversation][1:] if provider in ("openai", "ollama") else body[conversation]
    text = json.dumps(entries).replace(', "cache_control": {"type": "ephemeral"}', "")
    return json.loads(text)


CASES = [(provider, protocol, profile) for provider in PROVIDERS
         for protocol in ("native", "text") for profile in ("full", "small")]


@pytest.mark.parametrize(("provider", "protocol", "profile"), CASES)
async def test_the_prefix_is_the_same_in_two_projects_and_across_a_session(
        tmp_path: Path, provider: str, protocol: str, profile: str) -> None:
    home = tmp_path / "home"
    one, two = project(tmp_path, "alpha"), project(tmp_path, "beta")
    days = datetime.date(2031, 3, 4), datetime.date(2031, 3, 5)
    first = await session_bodies(one, home, provider, protocol, profile, days[0])
    second = await session_bodies(two, home, provider, protocol, profile, days[1])
    assert len(first) == len(second) == 2
    # the system message and the menu: byte for byte the same in both projects and requests
    assert {fixed_part(provider, body) for body in first + second} == {fixed_part(provider, first[0])}
    if protocol == "native":
        assert "read_file" in json.dumps(first[0]["tools"])
    else:
        assert "read_file(" in fixed_part(provider, first[0])
    # what differs reaches the model once, in the first user message
    varying = ["Instructions of alpha"]
    varying += [f"Project root: {one}", "2031-03-04"] if profile == "full" else ["alpha_main.py"]
    opening = json.dumps(turns(provider, first[0])[0])
    whole = json.dumps(first[0])
    for text in varying:
        assert text in opening and whole.count(text) == 1, text
        assert text not in fixed_part(provider, first[0])
    assert REQUEST in opening
    # consecutive requests: the second starts with everything the first sent
    earlier, later = turns(provider, first[0]), turns(provider, first[1])
    assert later[: len(earlier)] == earlier and len(later) > len(earlier)


async def test_anthropic_marks_the_conversation_end_for_its_cache(tmp_path: Path) -> None:
    bodies = await session_bodies(project(tmp_path, "alpha"), tmp_path / "home", "anthropic",
                                  "native", "full", datetime.date(2031, 3, 4))
    for body in bodies:
        marked = [block for turn in body["messages"] for block in turn["content"]
                  if "cache_control" in block]
        assert marked == [body["messages"][-1]["content"][-1]]
        assert "cache_control" in body["system"][-1] and "cache_control" in body["tools"][-1]


def test_the_command_line_run_sends_the_same_system_message_in_two_projects(
        tmp_path: Path, home: Path) -> None:
    def system_of(root: Path) -> tuple[str, str]:
        with FakeServer([Reply(text="ok")]) as server:
            proc = run_cli(["-p", "hi", "--protocol", "text", "--trust", *openai_args(server)],
                           root, home)
            body = next(b for path, b in server.requests if path.endswith("/chat/completions"))
        assert proc.returncode == 0, proc.stderr
        return body["messages"][0]["content"], body["messages"][1]["content"]

    (system_one, user_one), (system_two, _) = system_of(project(tmp_path, "alpha")), system_of(
        project(tmp_path, "beta"))
    assert system_one == system_two and system_one.startswith("You are tether")
    assert "Instructions of alpha" in user_one and user_one.endswith("# Request\nhi")


def text_history() -> list[Message]:
    calls = [ToolCall(f"c{n}", "read_file", {"filepath": f"f{n}.py"}) for n in range(3)]
    return [
        Message.user("first request"),
        Message.user("(a note)"),
        Message("assistant", [Text("Looking."), calls[0]]),
        Message("tool", [ToolResult("c0", "read_file", "1| x = 1")]),
        Message.user("a parse error"),
        Message("assistant", [calls[1], calls[2]]),
        Message("tool", [ToolResult("c1", "read_file", "1| y"), ToolResult("c2", "read_file", "no", True)]),
        Message("assistant", [Text("")]),
        Message("assistant", [Text("Done.")]),
        Message.user("second request"),
    ]


def build_table(tmp_path: Path) -> ToolTable:
    tools, _ = builtin_tools(ToolContext(root=tmp_path), home=tmp_path / "home")
    return tools


def test_the_cached_text_rendering_is_the_same_bytes_as_a_fresh_one(tmp_path: Path) -> None:
    table = build_table(tmp_path)
    history = text_history()
    cache = TextHistory()
    previous: list[Message] = []
    for end in range(1, len(history) + 1):
        for note in ("", "(step note)"):  # a note that the next request no longer sends
            shown = history[:end] + ([Message.user(note)] if note else [])
            rendered = cache.render(shown, table)
            assert [(m.role, m.text) for m in rendered] == [
                (m.role, m.text) for m in render_history_as_text(shown, table)]
        unchanged = [a is b for a, b in zip(previous[:-1], rendered, strict=False)]
        assert all(unchanged), "a message sent before was made again"
        previous = cache.render(history[:end], table)


def test_the_cached_text_rendering_follows_a_new_history_and_a_new_table(tmp_path: Path) -> None:
    table, cache = build_table(tmp_path), TextHistory()
    history = text_history()
    cache.render(history, table)
    other = [Message.user("another conversation"), *history[2:5]]
    assert [m.text for m in cache.render(other, table)] == [
        m.text for m in render_history_as_text(other, table)]
    smaller = ToolTable(t for t in table if t.name != "edit_file")
    assert [m.text for m in cache.render(other, smaller)] == [
        m.text for m in render_history_as_text(other, smaller)]
