"""The range a guessing program has narrowed to, noted after each too-low or too-high answer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say
from test_profile import menu_loop

from tether.core.guessing import guess_range_note
from tether.core.loop import Conversation
from tether.core.messages import CommandStatus, Evidence, ToolCall
from tether.safety import stdin_probe
from tether.safety.shell_session import ShellSessions
from tether.tools.shell import shell_tools


def started(output: str, session: str = "s1") -> Evidence:
    return Evidence(ToolCall("c0", "run_cmd", {"command": "python guess.py"}), 0.0, 0.0, "waiting", output,
                    command=CommandStatus("waiting_for_input", session=session))


def answered(text: str, output: str, session: str = "s1") -> Evidence:
    return Evidence(ToolCall("c", "send_input", {"session": session, "text": text}), 0.0, 0.0, "waiting", output,
                    command=CommandStatus("waiting_for_input", session=session))


def test_the_bounds_narrow_with_each_answer_and_the_middle_is_given() -> None:
    history = [started("I am thinking of a number between 1 and 50.\nYour guess: ")]
    history.append(answered("25", "Too low.\nYour guess: "))
    assert guess_range_note(history[:-1], history[-1]) == (
        "\n[So far the number is from 26 to 50. The middle of that range is 38.]")
    history.append(answered("40", "Too high.\nYour guess: "))
    assert "from 26 to 39. The middle of that range is 32." in guess_range_note(history[:-1], history[-1])
    history.append(answered("38", "Too high.\nYour guess: "))
    history.append(answered("36", "Too low!\nYour guess: "))
    assert "the number is 37. The middle of that range is 37." in guess_range_note(history[:-1], history[-1])


@pytest.mark.parametrize(("history", "why"), [
    ([answered("25", "Too low.")], "no announced range and only one bound"),
    ([started("between 1 and 50"), answered("25", "Please type a whole number.")], "no direction"),
    ([started("between 1 and 50"), answered("ten", "Too low.")], "the guess was no number"),
    ([started("between 1 and 50", "s2"), answered("50", "Too high."), answered("10", "Too high.")],
     "another session's range, and answers that leave no range"),
])
def test_no_note_without_a_range_to_halve(history: list[Evidence], why: str) -> None:
    assert guess_range_note(history[:-1], history[-1]) == "", why


GAME = (
    "print('I am thinking of a number between 1 and 50.')\n"
    "while True:\n"
    "    guess = int(input('Your guess: '))\n"
    "    if guess == 37:\n        print('Correct! Your prize code is AB-12'); break\n"
    "    print('Too low.' if guess < 37 else 'Too high.')\n"
)


async def play(root: Path, replies: list) -> tuple[ScriptedProvider, object]:
    """The turn "play guess.py until you win" with real shell sessions and the scripted replies."""
    sessions = ShellSessions(root)
    try:
        provider = ScriptedProvider(replies)
        loop, _ = menu_loop(provider, root, tools=list(shell_tools(sessions)), nudges=True,
                            menu_names=("run_cmd", "send_input"))
        result = await loop.run_turn(Conversation(), "play guess.py until you win and tell me the prize code")
    finally:
        await sessions.close_all()
    return provider, result



@pytest.mark.skipif(not stdin_probe.proc_usable(), reason="telling a waiting program needs /proc")
async def test_a_real_game_gets_the_range_in_each_answer(tmp_path: Path) -> None:
    (tmp_path / "guess.py").write_text(GAME)
    replies = [
        call(("run_cmd", {"command": f"{sys.executable} guess.py"})),
        call(("send_input", {"session": "s1", "text": "25"})),
        call(("send_input", {"session": "s1", "text": "40"})),
        call(("send_input", {"session": "s1", "text": "32"})),
        call(("send_input", {"session": "s1", "text": "37"})),
        say("The prize code is AB-12."),
    ]
    provider, result = await play(tmp_path, replies)
    results = [r.content for req in provider.requests[2:6] for r in req.messages[-1].tool_results]
    assert "from 26 to 50. The middle of that range is 38." in results[0]
    assert "from 26 to 39. The middle of that range is 32." in results[1]
    assert "from 33 to 39. The middle of that range is 36." in results[2]
    assert "Correct!" in results[3] and "So far" not in results[3]


@pytest.mark.skipif(not stdin_probe.proc_usable(), reason="telling a waiting program needs /proc")
async def test_an_empty_reply_or_an_answer_mid_game_gets_the_middle_offered_as_the_call(tmp_path: Path) -> None:
    """interactive_guess: after two guesses the model replied with nothing, then answered with
    a made-up prize code; each time it is offered the send_input call of the range's middle."""
    (tmp_path / "guess.py").write_text(GAME)
    replies = [
        call(("run_cmd", {"command": f"{sys.executable} guess.py"})),
        call(("send_input", {"session": "s1", "text": "25"})),
        say(""),
        call(("send_input", {"session": "s1", "text": "38"})),
        say("The prize code is 99-001."),
        call(("send_input", {"session": "s1", "text": "37"})),
        say("The prize code is AB-12."),
    ]
    provider, result = await play(tmp_path, replies)
    nudges = [m.text for req in provider.requests for m in req.messages[-1:] if m.role == "user" and m.text]
    offered = [n for n in nudges if "to send its middle, reply with only" in n]
    assert len(offered) == 2
    assert offered[0].startswith("Your reply was empty. The program in session s1 still waits for input.")
    assert '{"name": "send_input", "arguments": {"session": "s1", "text": "38"}}' in offered[0]
    assert '{"name": "send_input", "arguments": {"session": "s1", "text": "31"}}' in offered[1]
    assert result.text == "The prize code is AB-12."
    assert [e.call.arguments.get("text") for e in result.evidence][1:] == ["25", "38", "37"]


@pytest.mark.skipif(not stdin_probe.proc_usable(), reason="telling a waiting program needs /proc")
async def test_an_empty_reply_before_the_first_guess_gets_the_announced_range_middle(tmp_path: Path) -> None:
    """interactive_guess (s9-g): the game started, the model replied with nothing and the turn
    ended; the middle of "between 1 and 50" is offered as the first guess."""
    (tmp_path / "guess.py").write_text(GAME)
    replies = [call(("run_cmd", {"command": f"{sys.executable} guess.py"})), say(""),
               call(("send_input", {"session": "s1", "text": "25"})), say("Still playing.")]
    provider, result = await play(tmp_path, replies)
    nudge = provider.requests[2].messages[-1].text
    assert nudge.startswith("Your reply was empty. The program in session s1 still waits for input.")
    assert '{"name": "send_input", "arguments": {"session": "s1", "text": "25"}}' in nudge


@pytest.mark.skipif(not stdin_probe.proc_usable(), reason="telling a waiting program needs /proc")
async def test_a_number_given_for_the_session_reaches_that_session(tmp_path: Path) -> None:
    """interactive_guess (s9-g): `"session": 1` was refused four times as no valid string."""
    (tmp_path / "guess.py").write_text(GAME)
    replies = [call(("run_cmd", {"command": f"{sys.executable} guess.py"})),
               call(("send_input", {"session": 1, "text": "37"})), say("The prize code is AB-12.")]
    provider, result = await play(tmp_path, replies)
    assert not result.evidence[1].error and "Correct! Your prize code is AB-12" in result.evidence[1].result
