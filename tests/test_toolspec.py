"""The tool table, the prompt and the handlers must never disagree."""

from __future__ import annotations

import inspect
import time
import typing
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tether.core import toolspec
from tether.core.messages import Message
from tether.core.toolspec import LateSlot, Shared, Tool, ToolContext, ToolTable
from tether.engine.prompts import system_prompt
from tether.protocol import render_tool_prompt
from tether.providers.base import RequestOptions
from tether.providers.openai import build_chat_body
from tether.safety.web_guard import WebTaint
from tether.store.config import Settings
from tether.tools import builtin_tools
from tether.tools import params as tool_params
from tether.tools.plan import PlanGate, plan_tools
from tether.tools.web_table import web_parts, web_tools

PROMPT_BUDGET = 8000


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> ToolTable:
    tools, _ = builtin_tools(ToolContext(root=tmp_path_factory.mktemp("root")),
                             home=tmp_path_factory.mktemp("home"))
    for tool in plan_tools(PlanGate(inner=None), None):  # type: ignore[arg-type]
        tools.add(tool)
    settings = Settings()
    for tool in web_tools(settings, web_parts(settings, lambda host, port: False, WebTaint())):
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


def late_tool(name: str, handler: object) -> Tool:
    return Tool(name, "A tool for the test.", "tether.tools.params:ReadFileParams", handler)  # type: ignore[arg-type]


def test_a_handler_named_by_where_it_lives_is_imported_at_its_first_read_and_kept() -> None:
    from tether.tools import files

    tool = late_tool("read_file", "tether.tools.files:read_file")
    assert LateSlot.given(tool, "handler") == "tether.tools.files:read_file"  # building read nothing
    assert tool.handler is files.read_file
    assert LateSlot.given(tool, "handler") is files.read_file
    variant = late_tool("list_dir", "tether.tools.files:list_dir").changed(description="Another.")
    assert LateSlot.given(variant, "handler") == "tether.tools.files:list_dir"  # a variant reads nothing
    assert LateSlot.given(variant, "params") == "tether.tools.params:ReadFileParams"


def test_the_tools_of_a_group_share_one_object_made_at_the_first_call_of_any(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Made once, even when two of its tools are first called from two threads at once."""
    made: list[Counter[str]] = []

    def slow_maker(location: str) -> object:
        assert location == "collections:Counter"

        def make(**arguments: int) -> Counter[str]:
            time.sleep(0.05)  # long enough for the other thread to ask meanwhile
            made.append(Counter(arguments))
            return made[-1]
        return make

    monkeypatch.setattr(toolspec, "object_at", slow_maker)
    shared = Shared("collections:Counter", a=2, b=1)
    tools = [late_tool("first", shared.method("most_common")), late_tool("second", shared.method("total"))]
    assert not shared.made and made == []  # building the entries made nothing
    with ThreadPoolExecutor(2) as pool:
        handlers = list(pool.map(lambda tool: tool.handler, tools))
    assert shared.made and len(made) == 1
    assert handlers[0]() == [("a", 2), ("b", 1)] and handlers[1]() == 3
    assert handlers[0].__self__ is handlers[1].__self__ is shared.get()
