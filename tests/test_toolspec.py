"""The tool table, the prompt and the handlers must never disagree."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest

from tether.core.messages import Message
from tether.core.toolspec import Tool, ToolContext, ToolTable
from tether.engine.prompts import system_prompt
from tether.protocol import render_tool_prompt
from tether.providers.base import RequestOptions
from tether.providers.openai import build_chat_body
from tether.tools import builtin_tools
from tether.tools import params as tool_params
from tether.tools.plan import PlanGate, plan_tools

PROMPT_BUDGET = 8000


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> ToolTable:
    tools, _ = builtin_tools(ToolContext(root=tmp_path_factory.mktemp("root")),
                             home=tmp_path_factory.mktemp("home"))
    for tool in plan_tools(PlanGate(inner=None), None):  # type: ignore[arg-type]
        tools.add(tool)
    return tools


def each_tool(table: ToolTable) -> list[Tool]:
    return list(table)


def test_schemas_come_from_the_parameter_models(table: ToolTable) -> None:
    for tool in table:
        schema = tool.json_schema()
        assert schema["type"] == "object"
        assert set(schema["properties"]) == set(tool.params.model_fields), tool.name
        required = {n for n, f in tool.params.model_fields.items() if f.is_required()}
        assert set(schema.get("required", [])) == required, tool.name


def test_flags_name_real_parameters(table: ToolTable) -> None:
    for tool in table:
        fields = set(tool.params.model_fields)
        assert set(tool.block_params) <= fields, tool.name
        assert tool.main_arg is None or tool.main_arg in fields, tool.name
        assert tool.description.strip(), tool.name
        assert set(tool.path_params) <= fields, tool.name
        assert set(tool.written_params) <= set(tool.path_params), tool.name


PATH_LIKE_NAMES = ("filepath", "path", "source", "destination")


def test_every_path_parameter_is_declared(table: ToolTable) -> None:
    """An undeclared path would escape the approval policy's path checks."""
    for tool in table:
        named = [n for n in tool.params.model_fields if n in PATH_LIKE_NAMES]
        assert set(named) == set(tool.path_params), tool.name


def test_file_changing_tools_name_what_they_change(table: ToolTable) -> None:
    for tool in table:
        assert bool(tool.written_params) == tool.writes_files, tool.name
    copy = table.get("copy_file")
    assert copy is not None and copy.written_params == ("destination",)


def test_path_values_keep_only_non_empty_strings(table: ToolTable) -> None:
    copy = table.get("copy_file")
    assert copy is not None
    arguments = {"source": "a", "destination": "b", "path": "ignored"}
    assert copy.path_values(arguments) == {"source": "a", "destination": "b"}
    assert copy.path_values(arguments, written_only=True) == {"destination": "b"}
    assert copy.path_values({"source": "", "destination": 3}) == {}


def test_handlers_take_the_tools_own_parameter_model(table: ToolTable) -> None:
    for tool in table:
        params = list(inspect.signature(tool.handler).parameters)
        assert len(params) == 2, tool.name
        # the handler modules name the models only for the type checker (they load late)
        hints = typing.get_type_hints(tool.handler, localns=vars(tool_params))
        assert hints[params[0]] is tool.params, f"{tool.name}: handler takes {hints[params[0]]}"


def test_the_text_prompt_lists_every_tool_and_parameter(table: ToolTable) -> None:
    menu = render_tool_prompt(table)
    for tool in table:
        line = next((ln for ln in menu.splitlines() if ln.startswith(f"- {tool.name}(")), None)
        assert line is not None, f"{tool.name} missing from the prompt"
        for name in tool.params.model_fields:
            assert name in line, f"{tool.name}.{name} missing from its prompt line"


def test_the_text_protocol_prompt_stays_within_budget(table: ToolTable, tmp_path: Path) -> None:
    prompt = system_prompt(table, "text")
    assert len(prompt) < PROMPT_BUDGET, len(prompt)


def test_native_schemas_offer_exactly_the_table(table: ToolTable) -> None:
    body = build_chat_body([Message.user("hi")], list(table), RequestOptions("m"))
    offered = [t["function"]["name"] for t in body["tools"]]
    assert offered == table.names()
