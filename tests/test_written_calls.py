"""A text-protocol reply that was one call and nothing else stays in the history as the model
wrote it (`ToolCall.written`, engine/loop.as_written): the next request starts with what a
local server cached of the reply, instead of the call rendered again with the tags the
model leaves out. Anything else is rendered in the canonical form, as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted import ScriptedProvider, say
from test_resume import NoticedUI, text_loop

from tether.core.messages import Message, ToolCall
from tether.core.toolspec import ToolContext, ToolTable
from tether.engine.dispatch import Dispatcher
from tether.engine.loop import Conversation, TurnLoop, TurnSettings
from tether.protocol import render_history_as_text
from tether.tools.file_table import FILE_TOOLS

READ = '{"name": "read_file", "arguments": {"filepath": "change.py"}}'
TAGGED = f"<tool_call>\n{READ}\n</tool_call>"


async def second_request_reply(tmp_path: Path, reply: str) -> str:
    """What the second request holds of the first reply (the first one calls read_file), in
    a terse history (a reply's calls without the prose around them)."""
    (tmp_path / "change.py").write_text("x = 1\n")
    provider = ScriptedProvider([say(reply), say("x is 1.")], native=False)
    result = await text_loop(provider, tmp_path, terse_history=True).run_turn(Conversation(), "what is x in change.py?")
    assert [e.call.name for e in result.evidence] == ["read_file"]
    first, second = (r.messages for r in provider.requests)
    assert second[: len(first)] == first
    assert second[len(first)].role == "assistant"
    return second[len(first)].text


@pytest.mark.parametrize("reply", [READ, READ + "\n", TAGGED])
async def test_a_reply_that_was_one_call_is_read_back_as_written(tmp_path: Path, reply: str) -> None:
    assert await second_request_reply(tmp_path, reply) == reply.strip()


@pytest.mark.parametrize("reply", [
    "I will read it.\n" + READ,  # prose beside the call: the history keeps the call alone
    '{"name": "read_file", "arguments": {"filepath": "change.py"}',  # a brace repaired
    '{"name":"read_file","arguments":{"filepath":"change.py"}}',  # JSON of another shape
])
async def test_any_other_reply_with_a_call_is_rendered_in_the_canonical_form(tmp_path: Path, reply: str) -> None:
    assert await second_request_reply(tmp_path, reply) == TAGGED


def test_a_written_call_renders_as_written_and_compares_as_the_call() -> None:
    call = ToolCall("c1", "read_file", {"filepath": "change.py"})
    written = ToolCall("c1", "read_file", {"filepath": "change.py"}, written=READ)
    assert written == call  # the same call: repeats and evidence compare name and arguments
    table = ToolTable(list(FILE_TOOLS))
    assert render_history_as_text([Message("assistant", [written])], table)[0].text == READ
    assert render_history_as_text([Message("assistant", [call])], table)[0].text == TAGGED


def test_a_session_keeps_the_written_form_and_a_plain_call_reads_as_before() -> None:
    plain = Message("assistant", [ToolCall("c1", "read_file", {"filepath": "a"})]).to_dict()
    assert "written" not in plain["parts"][0]
    kept = Message("assistant", [ToolCall("c1", "read_file", {"filepath": "a"}, written=READ)])
    again = Message.from_dict(kept.to_dict())
    assert again.tool_calls[0].written == READ and again == kept


async def test_a_write_with_its_block_is_read_back_as_written(tmp_path: Path) -> None:
    """The form a small model writes a whole file in: the call's JSON, then the raw block."""
    write = '{"name": "write_file", "arguments": {"filepath": "new.py"}}\n<content>\nx = 1\n</content>'
    provider = ScriptedProvider([say(write), say("Written.")], native=False)
    table = ToolTable(list(FILE_TOOLS))
    ui = NoticedUI()
    loop = TurnLoop(provider, table, Dispatcher(table, ToolContext(root=tmp_path), ui, default_timeout=5.0), ui,
                    TurnSettings(model="m", terse_history=True), system_prompt=lambda mode: "SYSTEM", mode="text")
    await loop.run_turn(Conversation(), "write new.py")
    assert (tmp_path / "new.py").read_text() == "x = 1\n"
    assert provider.requests[1].messages[-2].text == write
