"""A text-protocol call a reply left open between its raw blocks, carried on (protocol/resume.py,
TurnLoop.resumed, and the providers that continue a reply)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from scripted import ScriptedProvider, say
from test_loop import RecordingUI

from tether.assist.leftovers import AtTheAnswer
from tether.core.messages import Message, TextDelta
from tether.core.toolspec import ToolContext, ToolTable
from tether.engine.dispatch import Dispatcher
from tether.engine.loop import CALL_OPENING, Conversation, TurnLoop, TurnSettings
from tether.engine.turn_assist import AssistedTurn, GateVerdict
from tether.protocol import resumption
from tether.protocol.refusals import _cut_off_error
from tether.providers.base import RequestOptions
from tether.providers.openai import OpenAIProvider
from tether.tools.file_table import FILE_TOOLS

TABLE = ToolTable(list(FILE_TOOLS))
HEAD = '{"name": "edit_file", "arguments": {"filepath": "change.py"}}\n'
OPEN = HEAD + "<old_content>\ndef fewest(coins, target):\n    pass\n\n"
"""Seen on three exercises, a JavaScript fix and a Python fix: the old text written, then a
tool result begun ("[Tool Result for 'edit_file']"), which the stop strings cut."""
NEW = "def fewest(coins, target):\n    return [target]\n"


CARRIED = "\n</old_content>\n<new_content>\n"


@pytest.mark.parametrize("reply", [
    OPEN, "<tool_call>\n" + OPEN.rstrip("\n"), "I will fix it.\n" + OPEN, HEAD + "<old_content>\nif a < b:\n",
])
def test_an_old_block_left_open_is_closed_and_the_new_block_opened(reply: str) -> None:
    assert resumption(reply, TABLE) == reply.rstrip() + CARRIED


@pytest.mark.parametrize("reply", [
    HEAD + "<old_content>\n",  # nothing written in the block: nothing of the model's to go on from
    HEAD + "<old_content>\nx\n</old_con",  # cut inside the closing tag
    OPEN + "</old_content>\n<new_content>\nx\n",  # the last block: its end is the model's to write
    '{"name": "write_file", "arguments": {"filepath": "a.py"}}\n<content>\nx\n',  # one block only
    HEAD + "<new_content>\nx\n",  # no block after it
    "The fix is to return [target].",
    HEAD,  # no block opened
])
def test_nothing_is_carried_on_without_an_open_block_and_a_block_after_it(reply: str) -> None:
    assert resumption(reply, TABLE) is None


class NoticedUI(RecordingUI):
    def __init__(self) -> None:
        super().__init__()
        self.notices: list[str] = []

    def notice(self, message: str, level: str = "info") -> None:
        self.notices.append(message)


def text_loop(provider: ScriptedProvider, root: Path, **settings: object) -> TurnLoop:
    table = ToolTable([t for t in FILE_TOOLS if t.name in ("read_file", "edit_file")])
    ui = NoticedUI()
    return TurnLoop(provider, table, Dispatcher(table, ToolContext(root=root), ui, default_timeout=5.0), ui,
                    TurnSettings(model="m", **settings),  # type: ignore[arg-type]
                    system_prompt=lambda mode: "SYSTEM", mode="text")


@pytest.mark.parametrize("stop_at_call", [False, True])
async def test_the_loop_carries_the_open_call_on_and_runs_it(tmp_path: Path, stop_at_call: bool) -> None:
    """The old text's blank line at its end is dropped: the file has none there."""
    (tmp_path / "change.py").write_text("def fewest(coins, target):\n    pass\n")
    after = "\n\nNow it works." if stop_at_call else ""  # without the stop, prose after a call makes it prose
    provider = ScriptedProvider([say(OPEN), say(NEW + "</new_content>" + after), say("Done.")],
                                native=False, continues=True)
    loop = text_loop(provider, tmp_path, resume_calls=True, stop_at_call=stop_at_call)
    conv = Conversation()
    result = await loop.run_turn(conv, "make fewest return [target]")
    assert provider.requests[1].options.prefill == OPEN.rstrip() + CARRIED
    assert provider.requests[1].messages == provider.requests[0].messages  # the same request
    assert [e.call.name for e in result.evidence] == ["edit_file"] and not result.evidence[0].error
    assert (tmp_path / "change.py").read_text() == NEW
    assert result.text == "Done." and result.requests == 3
    assert any("carried on from <new_content>" in n for n in loop.ui.notices)  # type: ignore[attr-defined]


async def test_without_a_provider_that_continues_the_open_call_is_told_it_was_cut_off(tmp_path: Path) -> None:
    (tmp_path / "change.py").write_text("def fewest(coins, target):\n    pass\n")
    provider = ScriptedProvider([say(OPEN), say("Done.")], native=False, continues=False)
    loop = text_loop(provider, tmp_path, resume_calls=True)
    result = await loop.run_turn(Conversation(), "make fewest return [target]")
    assert all(not r.options.prefill for r in provider.requests)
    told = provider.requests[1].messages[-1].text
    assert _cut_off_error("edit_file") in told
    assert result.evidence == [] and (tmp_path / "change.py").read_text().endswith("pass\n")


async def test_with_the_lever_off_nothing_is_carried_on(tmp_path: Path) -> None:
    provider = ScriptedProvider([say(OPEN), say("Done.")], native=False, continues=True)
    await text_loop(provider, tmp_path).run_turn(Conversation(), "make fewest return [target]")
    assert all(not r.options.prefill for r in provider.requests)


async def test_a_carried_on_reply_is_carried_on_once(tmp_path: Path) -> None:
    (tmp_path / "change.py").write_text("def fewest(coins, target):\n    pass\n")
    provider = ScriptedProvider([say(OPEN), say(""), say("Done.")], native=False, continues=True)
    loop = text_loop(provider, tmp_path, resume_calls=True)
    await loop.run_turn(Conversation(), "make fewest return [target]")
    assert [bool(r.options.prefill) for r in provider.requests] == [False, True, False]


# ---------------------------------------------------------------- on the wire


async def _stream(server: FakeServer, options: RequestOptions) -> tuple[bool, str, dict]:
    provider = OpenAIProvider(server.url + "/v1")
    try:
        continues = await provider.continues_replies("m")
        text = "".join([e.text async for e in provider.stream([Message.user("fix it")], None, options)
                        if isinstance(e, TextDelta)])
    finally:
        await provider.aclose()
    return continues, text, server.bodies("/v1/chat/completions")[0]


async def test_llama_cpp_gets_the_start_as_the_last_assistant_message_and_its_echo_is_dropped() -> None:
    with FakeServer([Reply(text=NEW + "</new_content>")], models=["m"]) as server:
        server.owned_by = "llamacpp"
        start = OPEN.rstrip() + CARRIED
        continues, text, body = await _stream(server, RequestOptions("m", prefill=start))
    assert continues
    assert body["messages"][-1] == {"role": "assistant", "content": start}
    assert "continue_final_message" not in body
    assert text == NEW + "</new_content>"  # only what followed the start


async def test_vllm_is_asked_to_continue_the_final_message() -> None:
    with FakeServer([Reply(text=NEW)], models=["m"]) as server:
        server.owned_by = "vllm"
        continues, text, body = await _stream(server, RequestOptions("m", prefill="<new_content>\n"))
    assert continues and text == NEW
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["messages"][-1] == {"role": "assistant", "content": "<new_content>\n"}


async def test_a_server_not_known_to_continue_a_reply_says_so() -> None:
    with FakeServer([Reply(text="ok")], models=["m"]) as server:
        server.owned_by = "openai"
        provider = OpenAIProvider(server.url + "/v1")
        try:
            assert not await provider.continues_replies("m")
        finally:
            await provider.aclose()


# ---------------------------------------------------------------- an empty reply, started as a call

READ_REST = 'read_file", "arguments": {"filepath": "change.py"}}'
"""What a model writes after CALL_OPENING: the rest of its call."""


class PassedGate(AtTheAnswer):
    """A gate whose check after the last change passed: what is due is the answer."""

    async def before_answer(self, evidence: object) -> GateVerdict:
        return GateVerdict()

    def passed(self) -> bool:
        return True


class GatedAssist:
    def start(self, request: str, checks: object, setup: object = None, preread: bool = False) -> AssistedTurn:
        return AssistedTurn(reading=None, gate=PassedGate())


async def test_an_empty_reply_is_drawn_again_started_as_a_call_and_the_call_runs(tmp_path: Path) -> None:
    (tmp_path / "change.py").write_text("x = 1\n")
    provider = ScriptedProvider([say(""), say(READ_REST), say("x is 1.")], native=False, continues=True)
    loop = text_loop(provider, tmp_path, open_empty=True)
    result = await loop.run_turn(Conversation(), "what is x in change.py?")
    assert provider.requests[1].options.prefill == CALL_OPENING
    assert provider.requests[1].messages == provider.requests[0].messages  # the same request
    assert [e.call.name for e in result.evidence] == ["read_file"] and not result.evidence[0].error
    assert result.text == "x is 1." and result.requests == 3
    assert any("drawn again as the start of a tool call" in n for n in loop.ui.notices)  # type: ignore[attr-defined]


async def test_an_empty_reply_is_started_as_a_call_once(tmp_path: Path) -> None:
    """Drawn again, it ended right after the opening: the reply is the empty one (here, with
    no coach, it ends the turn with no answer), never the answer `{"name": "`."""
    provider = ScriptedProvider([say(""), say(""), say("Done.")], native=False, continues=True)
    result = await text_loop(provider, tmp_path, open_empty=True).run_turn(Conversation(), "what is x?")
    assert [r.options.prefill for r in provider.requests] == ["", CALL_OPENING]
    assert result.text == ""


@pytest.mark.parametrize("continues, lever", [(False, True), (True, False)])
async def test_without_the_lever_or_a_provider_that_continues_an_empty_reply_stays_as_it_came(
        tmp_path: Path, continues: bool, lever: bool) -> None:
    provider = ScriptedProvider([say(""), say("Done.")], native=False, continues=continues)
    await text_loop(provider, tmp_path, open_empty=lever).run_turn(Conversation(), "what is x?")
    assert [r.options.prefill for r in provider.requests] == [""]  # the empty reply ends the turn


async def test_once_the_check_passed_an_empty_reply_is_not_started_as_a_call(tmp_path: Path) -> None:
    provider = ScriptedProvider([say(""), say("Done.")], native=False, continues=True)
    loop = text_loop(provider, tmp_path, open_empty=True)
    loop.assist = GatedAssist()
    await loop.run_turn(Conversation(), "make the tests pass")
    assert [r.options.prefill for r in provider.requests] == [""]  # the empty reply ends the turn


async def test_a_native_reply_is_never_started_as_a_text_call(tmp_path: Path) -> None:
    provider = ScriptedProvider([say(""), say("Done.")], native=True, continues=True)
    loop = text_loop(provider, tmp_path, open_empty=True)
    loop.mode = "native"
    await loop.run_turn(Conversation(), "what is x?")
    assert all(not r.options.prefill for r in provider.requests)
