"""get_user_input: asking through the front end's asker, with options, and with nobody there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.core.messages import ToolCall, ToolResult
from tether.core.toolspec import ToolContext, ToolTable
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import Dispatcher
from tether.tools.ask import Asker, ask_tools
from tether.tools.params import Question


class RecordingAsker:
    """Answers from a script and remembers what it was asked."""

    def __init__(self, answers: list[str] | None) -> None:
        self.answers = answers
        self.asked: list[list[Question]] = []

    async def __call__(self, questions: list[Question]) -> list[str] | None:
        self.asked.append(questions)
        return self.answers


def dispatcher_for(asker: Asker | None, tmp_path: Path) -> Dispatcher:
    table = ToolTable(ask_tools(asker))
    return Dispatcher(table=table, ctx=ToolContext(root=tmp_path), ui=SilentUI())


async def ask(dispatcher: Dispatcher, questions: object) -> ToolResult:
    call = ToolCall("c1", "get_user_input", {"questions": questions})
    result, _evidence = await dispatcher.dispatch(call)
    return result


async def test_answers_come_back_in_question_order(tmp_path: Path) -> None:
    asker = RecordingAsker(["Postgres", "  yes  "])
    dispatcher = dispatcher_for(asker, tmp_path)
    result = await ask(
        dispatcher,
        [{"question": "Which database?"}, {"question": "Add migrations?"}],
    )
    assert not result.is_error
    assert result.content == "Q: Which database?\nA: Postgres\nQ: Add migrations?\nA: yes"
    assert [q.question for q in asker.asked[0]] == ["Which database?", "Add migrations?"]


async def test_options_reach_the_asker_and_free_text_is_accepted(tmp_path: Path) -> None:
    asker = RecordingAsker(["something else entirely"])
    dispatcher = dispatcher_for(asker, tmp_path)
    result = await ask(dispatcher, [{"question": "Which style?", "options": ["tabs", "spaces"]}])
    assert asker.asked[0][0].options == ["tabs", "spaces"]
    assert result.content == "Q: Which style?\nA: something else entirely"


async def test_missing_or_blank_answers_are_marked(tmp_path: Path) -> None:
    dispatcher = dispatcher_for(RecordingAsker(["  "]), tmp_path)
    result = await ask(dispatcher, [{"question": "One?"}, {"question": "Two?"}])
    assert result.content == "Q: One?\nA: (no answer)\nQ: Two?\nA: (no answer)"


@pytest.mark.parametrize("asker", [None, RecordingAsker(None)], ids=["no asker", "asker gave up"])
async def test_nobody_to_answer_is_a_failed_call_that_says_proceed(
    asker: Asker | None, tmp_path: Path
) -> None:
    dispatcher = dispatcher_for(asker, tmp_path)
    result = await ask(dispatcher, [{"question": "Which branch?"}])
    assert result.is_error
    assert "Nobody can answer" in result.content
    assert "assumption" in result.content


@pytest.mark.parametrize(
    "questions",
    [[], [{"question": f"q{i}"} for i in range(6)], [{"question": ""}], "just a string"],
    ids=["none", "six", "blank", "not a list"],
)
async def test_invalid_questions_are_refused_without_asking(
    questions: object, tmp_path: Path
) -> None:
    asker = RecordingAsker(["x"])
    result = await ask(dispatcher_for(asker, tmp_path), questions)
    assert result.is_error and "Invalid arguments for get_user_input" in result.content
    assert asker.asked == []


def test_tool_flags() -> None:
    (tool,) = ask_tools(None)
    assert tool.name == "get_user_input"
    assert not tool.read_only, "a question is never answered from the read cache"
    assert tool.main_arg is None and not tool.writes_files and not tool.runs_commands
    assert tool.timeout is not None and tool.timeout >= 3600, "people take their time"
    schema = tool.json_schema()
    assert schema["properties"]["questions"]["maxItems"] == 5
