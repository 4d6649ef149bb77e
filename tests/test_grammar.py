"""Constrained decoding: the GBNF grammar of a text-protocol reply (one call on the menu or
an answer), sent only where the server takes it and the `grammar` lever is on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from gbnf import accepts, parse
from protocol_tables import make_table

from tether.core.messages import ToolCall
from tether.core.profile import FULL, SMALL, profile_named
from tether.protocol.grammar import call_grammar
from tether.protocol.parse import parse_reply
from tether.protocol.render import render_call_as_text
from tether.providers.base import RequestOptions
from tether.providers.openai import OpenAIProvider
from tether.runtime import RunOptions, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI

TABLE = make_table()
TOOLS = list(TABLE)
GRAMMAR = call_grammar(TOOLS)


def _rendered(name: str, arguments: dict) -> str:
    return render_call_as_text(ToolCall("c1", name, arguments), TABLE)


def test_the_grammar_parses_and_defines_every_rule_it_uses() -> None:
    rules = parse(GRAMMAR)  # raises for a line that does not parse or an undefined rule
    assert {"root", "call", "answer"} <= set(rules)
    assert all(name.replace("-", "").isalnum() for name in rules)
    assert all("::=" in line for line in GRAMMAR.splitlines())  # no control character splits a rule
    assert not set(GRAMMAR) & {"\r", "\t"}


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", {"filepath": "a.py"}),
        ("read_file", {"filepath": "dir/b c.py", "offset": 10, "limit": 20}),
        ("read_file", {"filepath": "a.py", "limit": 5}),  # an optional one left out
        ("write_file", {"filepath": "page.html", "content": "<p>a</p>\n<script>x < 1</script>\n"}),
        ("run_cmd", {"command": "python -c \"print('\\u00e9')\"", "background": True}),
        ("edit_file", {"filepath": "a.py", "old_content": "x = 1\n", "new_content": "x = 2\n"}),
        ("run_cmd", {"command": "cat", "stdin": "line\n"}),
    ],
)
def test_a_call_as_the_text_protocol_writes_it_is_in_the_grammar(name: str, arguments: dict) -> None:
    assert accepts(GRAMMAR, _rendered(name, arguments))


@pytest.mark.parametrize(
    "reply",
    [
        "It prints 42.",
        "",
        "Use `a < b` in <code>x</code>; the file has <tool> tags.",
        "<think>short</think>The answer is 3.",
        'The dict is {"a": 1} and {name: 2}.',
        # a call in prose stays possible: the reply parser reads it (forbidding it made a small
        # model write near misses such as `"name "` that nothing reads)
        'I will read it:\n```json\n{"name": "read_file", "arguments": {"filepath": "a"}}\n```',
    ],
)
def test_a_plain_answer_is_in_the_grammar(reply: str) -> None:
    assert accepts(GRAMMAR, reply)


@pytest.mark.parametrize(
    "reply",
    [
        '<tool_call>\n{"name": "delete_all", "arguments": {}}\n</tool_call>',  # not on the menu
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>',  # no such argument
        '<tool_call>\n{"name": "read_file", "arguments": {}}\n</tool_call>',  # required one missing
        '<tool_call>\n{"name": "read_file", "arguments": {"filepath": 3}}\n</tool_call>',  # wrong type
        '<tool_call>\n{"name": "write_file", "arguments": {"filepath": "a"}}\n</tool_call>',  # no block
        '<tool_call>\n{"name": "read_file", "arguments": {"filepath": "a"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "read_file", "arguments": {"filepath": "b"}}\n</tool_call>',  # two calls
        'I will read it. <tool_call>\n{"name": "read_file", "arguments": {"filepath": "a"}}\n</tool_call>',
        '<tool_call>\n{"name": "read_file", "arguments": {"filepath": "a"}}',  # not closed
        # a reply that opens as a call takes the call's one form
        '{"name": "read_file", "arguments": {"filepath": "a"}}',
        '<function=read_file>\n<parameter=filepath>a</parameter>\n</function>',
        '{"answer": 42}',  # an answer does not open with a JSON object
        " The answer is 42.",  # nor with blank space
    ],
)
def test_anything_else_is_not(reply: str) -> None:
    assert not accepts(GRAMMAR, reply)


def test_a_block_may_hold_its_own_tag_name_but_not_its_closing_tag() -> None:
    inside = _rendered("write_file", {"filepath": "a.xml", "content": "<content>nested</content"})
    assert accepts(GRAMMAR, inside)


def test_a_menu_without_tools_allows_only_answers() -> None:
    grammar = call_grammar([])
    assert accepts(grammar, "Done.")
    assert not accepts(grammar, '<tool_call>\n{"name": "read_file", "arguments": {}}\n</tool_call>')


def test_the_reply_parser_reads_a_constrained_call_however_tight() -> None:
    tight = '<tool_call>{"name":"write_file","arguments":{"filepath":"a.py"}}<content>x = 1\n</content></tool_call>'
    assert accepts(GRAMMAR, tight)
    parsed = parse_reply(tight, TABLE)
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        ("write_file", {"filepath": "a.py", "content": "x = 1\n"})]
    loose = _rendered("read_file", {"filepath": "a.py", "offset": 2})
    assert [c.arguments for c in parse_reply(loose, TABLE).calls] == [{"filepath": "a.py", "offset": 2}]


def test_the_lever_is_off_by_default_and_switched_on_by_name() -> None:
    assert not SMALL.grammar and not FULL.grammar
    assert "grammar" not in SMALL.levers()
    on = profile_named("small", "", "grammar")
    assert on.grammar and "grammar" in on.levers()
    assert not profile_named("small", "grammar", "").grammar
    with pytest.raises(ValueError, match="unknown profile lever 'menu'"):
        profile_named("small", "", "menu")  # a lever on by default cannot be "switched on"


# ---------------------------------------------------------------- on the wire


async def _first_body(tmp_path: Path, home: Path, owned_by: str, env: dict[str, str]) -> dict:
    """The first chat request of a `tether -p`-like turn with the small profile against a
    local OpenAI-compatible server whose model list says who it is."""
    with FakeServer([Reply(text="It says 42.")], models=["qwen2.5-coder-1.5b"]) as server:
        server.owned_by = owned_by
        loaded, _ = load_settings({"provider": "openai", "model": "qwen2.5-coder-1.5b", "profile": "small",
                                   "openai_base_url": server.url + "/v1"}, {}, home)
        runtime = build_runtime(loaded, RunOptions(root=tmp_path, home=home, auto=True), HeadlessUI(), env)
        try:
            await runtime.start()
            from tether.engine.loop import Conversation

            await runtime.loop.run_turn(Conversation(), "What does a.txt say?")
        finally:
            await runtime.aclose()
        return server.bodies("/v1/chat/completions")[0]


async def test_llama_cpp_gets_the_grammar_only_with_the_lever_on(tmp_path: Path, home: Path) -> None:
    body = await _first_body(tmp_path, home, "llamacpp", {"TETHER_PROFILE_ON": "grammar"})
    assert accepts(body["grammar"], '<tool_call>\n{"name": "read_file", "arguments": {"filepath": "a.txt"}}\n</tool_call>')
    assert '"\\"tool_search\\""' in body["grammar"]  # the menu offered, not the whole table
    assert '"\\"git_diff\\""' not in body["grammar"]
    off = await _first_body(tmp_path, home, "llamacpp", {})
    assert "grammar" not in off


async def test_a_server_not_known_to_take_a_grammar_is_not_sent_one(tmp_path: Path, home: Path) -> None:
    body = await _first_body(tmp_path, home, "openai", {"TETHER_PROFILE_ON": "grammar"})
    assert "grammar" not in body and "structured_outputs" not in body


async def test_vllm_gets_it_as_structured_outputs(tmp_path: Path, home: Path) -> None:
    body = await _first_body(tmp_path, home, "vllm", {"TETHER_PROFILE_ON": "grammar"})
    assert body["structured_outputs"]["grammar"].startswith("root ::= call | answer")
    assert "grammar" not in body


async def test_the_provider_asks_who_the_server_is_before_its_first_constrained_request() -> None:
    with FakeServer([Reply(text="ok")], models=["m"]) as server:
        server.owned_by = "llamacpp"
        provider = OpenAIProvider(server.url + "/v1")
        try:
            options = RequestOptions("m", grammar='root ::= "ok"')
            async for _ in provider.stream([], None, options):
                pass
        finally:
            await provider.aclose()
        paths = [path for path, _ in server.requests]
        body = server.bodies("/v1/chat/completions")[0]
    assert paths == ["/v1/models", "/v1/chat/completions"]
    assert body["grammar"] == 'root ::= "ok"'
    assert json.dumps(body)  # a plain JSON body
