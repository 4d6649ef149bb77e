"""The text tool-call protocol: parsing with repair and refusal, rendering, stream filtering."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from protocol_tables import ReadArgs, RunArgs, _echo, make_table
from pydantic import BaseModel

from tether.core.messages import Message, Text, Thinking, ToolCall, ToolResult
from tether.core.toolspec import Tool, ToolTable
from tether.protocol import (
    ParseResult,
    StreamFilter,
    parse_reply,
    render_call_as_text,
    render_history_as_text,
    render_tool_prompt,
)

TABLE = make_table()


def calls_of(result: ParseResult) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in result.calls]


# ---------------------------------------------------------------- replies that are calls

W = '{"name": "write_file", "arguments": {"filepath": "game.py"}}'
R = '{"name": "read_file", "arguments": {"filepath": "a.py"}}'
READ_A = ("read_file", {"filepath": "a.py"})

REPAIRED: list[tuple[str, str, list[tuple[str, dict[str, Any]]], str]] = [
    (
        "canonical write with a content block",
        f'<tool_call>\n{W}\n<content>\nprint("hi")\n</content>\n</tool_call>',
        [("write_file", {"filepath": "game.py", "content": 'print("hi")\n'})],
        "",
    ),
    (
        "missing final brace",
        '<tool_call>\n{"name": "read_file", "arguments": {"filepath": "a.py"}\n</tool_call>',
        [READ_A],
        "",
    ),
    (
        "missing final brace at end of reply",
        '<tool_call>{"name": "read_file", "arguments": {"filepath": "a.py"}',
        [READ_A],
        "",
    ),
    (
        "two missing braces",
        '<tool_call>{"name": "read_file", "arguments": {"filepath": "a.py", "limit": 5</tool_call>',
        [("read_file", {"filepath": "a.py", "limit": 5})],
        "",
    ),
    (
        "arguments beside the name",
        '<tool_call>{"name": "read_file", "filepath": "a.py"}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "arguments as a JSON string",
        '<tool_call>{"name": "read_file", "arguments": "{\\"filepath\\": \\"a.py\\"}"}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "parameters key",
        '<tool_call>{"name": "read_file", "parameters": {"filepath": "a.py"}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "args key",
        '<tool_call>{"name": "read_file", "args": {"filepath": "a.py"}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "input key",
        '<tool_call>{"name": "read_file", "input": {"filepath": "a.py"}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "trailing commas",
        '<tool_call>{"name": "read_file", "arguments": {"filepath": "a.py", "limit": 3,},}</tool_call>',
        [("read_file", {"filepath": "a.py", "limit": 3})],
        "",
    ),
    (
        "python literals",
        '<tool_call>{"name": "run_cmd", "arguments": {"command": "ls", "stdin": None, "background": True}}</tool_call>',
        [("run_cmd", {"command": "ls", "stdin": None, "background": True})],
        "",
    ),
    (
        "single-quoted python dict",
        "<tool_call>{'name': 'read_file', 'arguments': {'filepath': 'a.py'}}</tool_call>",
        [READ_A],
        "",
    ),
    (
        "invalid escape kept as a backslash",
        '<tool_call>{"name": "read_file", "arguments": {"filepath": "C:\\Users\\me"}}</tool_call>',
        [("read_file", {"filepath": "C:\\Users\\me"})],
        "",
    ),
    (
        "literal newlines inside a JSON string",
        '<tool_call>{"name": "write_file", "arguments": {"filepath": "a", "content": "x\ny"}}</tool_call>',
        [("write_file", {"filepath": "a", "content": "x\ny"})],
        "",
    ),
    ("missing closing tag", f"Reading it.\n<tool_call>\n{R}\n", [READ_A], "Reading it."),
    (
        "missing closing tag after a complete block",
        f"<tool_call>\n{W}\n<content>\nx = 1\n</content>\n",
        [("write_file", {"filepath": "game.py", "content": "x = 1\n"})],
        "",
    ),
    (
        "raw block unclosed inside a closed call",
        f"<tool_call>\n{W}\n<content>\nx = 1\n</tool_call>\nWritten.",
        [("write_file", {"filepath": "game.py", "content": "x = 1\n"})],
        "Written.",
    ),
    (
        "unclosed block then a second call",
        f"<tool_call>\n{W}\n<content>\nx = 1\n</tool_call>\n<tool_call>\n{R}\n</tool_call>",
        [("write_file", {"filepath": "game.py", "content": "x = 1\n"}), READ_A],
        "",
    ),
    (
        "several calls in order",
        f"First.\n<tool_call>\n{R}\n</tool_call>\nThen.\n<tool_call>"
        '{"name": "run_cmd", "arguments": {"command": "ls"}}</tool_call>',
        [READ_A, ("run_cmd", {"command": "ls"})],
        "First.\n\nThen.",
    ),
    (
        "several objects in one call block",
        f"<tool_call>\n{R}\n{R}\n</tool_call>",
        [READ_A, READ_A],
        "",
    ),
    ("a list of calls", f"<tool_call>[{R}, {R}]</tool_call>", [READ_A, READ_A], ""),
    ("json fenced inside the call", f"<tool_call>\n```json\n{R}\n```\n</tool_call>", [READ_A], ""),
    ("tool_call fence", f"Let me look.\n```tool_call\n{R}\n```", [READ_A], "Let me look."),
    ("tool_code fence with JSON", f"```tool_code\n{R}\n```", [READ_A], ""),
    (
        "tool_code fence with a python call",
        '```tool_code\nprint(default_api.read_file(filepath="a.py"))\n```',
        [READ_A],
        "",
    ),
    ("json fence naming a tool", f"```json\n{R}\n```", [READ_A], ""),
    (
        "unlabelled fence naming a tool",
        f"I will read it.\n```\n{R}\n```\n",
        [READ_A],
        "I will read it.",
    ),
    (
        "tool_call envelope",
        '<tool_call>{"tool_call": {"name": "read_file", "arguments": {"filepath": "a.py"}}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "openai function envelope with string arguments",
        '<tool_call>{"id": "x", "type": "function", "function": {"name": "read_file", "arguments": "{\\"filepath\\": \\"a.py\\"}"}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "tool_name key",
        '<tool_call>{"tool_name": "read_file", "arguments": {"filepath": "a.py"}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "function_name key",
        '<tool_call>{"function_name": "read_file", "arguments": {"filepath": "a.py"}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "tool key",
        '<tool_call>{"tool": "read_file", "args": {"filepath": "a.py"}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "functions. prefix on the name",
        '<tool_call>{"name": "functions.read_file", "arguments": {"filepath": "a.py"}}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "tool name written before the JSON",
        '<tool_call>read_file\n{"filepath": "a.py"}</tool_call>',
        [READ_A],
        "",
    ),
    (
        "xml shape inside tool_call",
        "<tool_call>\n<function=read_file>\n<parameter=filepath>\n42\n</parameter>\n<parameter=limit>\n7\n</parameter>\n"
        "</function>\n</tool_call>",
        [("read_file", {"filepath": "42", "limit": 7})],
        "",
    ),
    (
        "bare xml shape",
        'Running.\n<function=run_cmd>\n<parameter=command>\necho "a < b" && ls\n</parameter>\n'
        "<parameter=background>\ntrue\n</parameter>\n</function>\nDone.",
        [("run_cmd", {"command": 'echo "a < b" && ls', "background": True})],
        "Running.\n\nDone.",
    ),
    (
        "xml parameter left unclosed inside a closed function",
        "<function=read_file>\n<parameter=filepath>\na.py\n</function>",
        [READ_A],
        "",
    ),
    ("bare object is the whole reply", f"  \n{R}\n ", [READ_A], ""),
    ("bare object after a leaked special token", f"<|python_tag|>{R}", [READ_A], ""),
    ("bare list after a leaked special token", f"[TOOL_CALLS][{R}]", [READ_A], ""),
    ("bare object after thinking", f"<think>I should read a.py</think>\n{R}", [READ_A], ""),
    (
        "block wins over the JSON value",
        '<tool_call>\n{"name": "write_file", "arguments": {"filepath": "a", "content": "old \\"escaped\\""}}\n'
        "<content>\nnew\n</content>\n</tool_call>",
        [("write_file", {"filepath": "a", "content": "new\n"})],
        "",
    ),
    (
        "edit with two blocks",
        '<tool_call>\n{"name": "edit_file", "arguments": {"filepath": "a.py"}}\n<old_content>\nx = 1\n</old_content>\n'
        "<new_content>\nx = 2\n\n</new_content>\n</tool_call>",
        [("edit_file", {"filepath": "a.py", "old_content": "x = 1\n", "new_content": "x = 2\n\n"})],
        "",
    ),
    (
        "stdin block for run_cmd",
        '<tool_call>\n{"name": "run_cmd", "arguments": {"command": "python x.py"}}\n<stdin>\n3\n4\n</stdin>\n</tool_call>',
        [("run_cmd", {"command": "python x.py", "stdin": "3\n4\n"})],
        "",
    ),
    (
        "block whose body mentions the closing tag",
        f"<tool_call>\n{W}\n<content>\ns = '</tool_call>'\nt = \"}}\\\\\"\n</content>\n</tool_call>\nok",
        [("write_file", {"filepath": "game.py", "content": "s = '</tool_call>'\nt = \"}\\\\\"\n"})],
        "ok",
    ),
    (
        "json string mentioning a block tag",
        '<tool_call>{"name": "run_cmd", "arguments": {"command": "grep \'<content>\' f"}}</tool_call>\nafter',
        [("run_cmd", {"command": "grep '<content>' f"})],
        "after",
    ),
    (
        "empty block",
        f"<tool_call>\n{W}\n<content>\n</content>\n</tool_call>",
        [("write_file", {"filepath": "game.py", "content": ""})],
        "",
    ),
    # what small models write (see tests/test_profile.py for the loop side)
    (
        "raw-block tags inside the JSON string value",
        '{"name": "write_file", "arguments": {"filepath": "a.py", '
        '"content": "<content>print(1)\\n</content>"}}',
        [("write_file", {"filepath": "a.py", "content": "print(1)\n"})],
        "",
    ),
    (
        "a tag around a whole file's raw block is kept: it may be what the file is",
        f"<tool_call>\n{W}\n<content>\n<code>import sys\nprint(1)\n</code></content>\n</tool_call>",
        [("write_file", {"filepath": "game.py", "content": "<code>import sys\nprint(1)\n</code>"})],
        "",
    ),
    (
        "a markdown fence around a whole file's raw block",
        f"<tool_call>\n{W}\n<content>\n```python\nprint(1)\n```\n</content>\n</tool_call>",
        [("write_file", {"filepath": "game.py", "content": "print(1)\n"})],
        "",
    ),
    (
        "a fence in a markdown file, and text that only starts with a tag, are kept",
        '<tool_call>{"name": "write_file", "arguments": {"filepath": "README.md"}}\n'
        "<content>\n```sh\nrun\n```\n</content>\n</tool_call>"
        '<tool_call>{"name": "write_file", "arguments": {"filepath": "t.py"}}\n'
        "<content>\n<code> is a tag\nx = 1\n</content>\n</tool_call>",
        [("write_file", {"filepath": "README.md", "content": "```sh\nrun\n```\n"}),
         ("write_file", {"filepath": "t.py", "content": "<code> is a tag\nx = 1\n"})],
        "",
    ),
    (
        "raw-block tags inside a tagged call's JSON string",
        '<tool_call>{"name": "edit_file", "arguments": {"filepath": "a.py", '
        '"old_content": "<old_content>x = 1</old_content>", "new_content": "x = 2"}}</tool_call>',
        [("edit_file", {"filepath": "a.py", "old_content": "x = 1", "new_content": "x = 2"})],
        "",
    ),
    (
        "bare call followed by its raw blocks, no tool_call tags",
        '{"name": "edit_file", "arguments": {"filepath": "c.json"}}\n'
        "<old_content>\n  \"port\": 8000\n</old_content>\n<new_content>\n  \"port\": 9090\n</new_content>\n",
        [("edit_file", {"filepath": "c.json", "old_content": '  "port": 8000\n',
                        "new_content": '  "port": 9090\n'})],
        "",
    ),
    (
        "bare call and raw blocks in a json fence with prose",
        'Here is how:\n```json\n{"name": "write_file", "arguments": {"filepath": "a.py"}}\n'
        "<content>\nprint(2)\n</content>\n```\nDone.",
        [("write_file", {"filepath": "a.py", "content": "print(2)\n"})],
        "Here is how:\n\nDone.",
    ),
    (
        "read-only call followed by an invented content block",
        f"{R}\n<content>\nimagined text\n</content>",
        [READ_A],
        "",
    ),
    (
        "python raw string and single quotes beside JSON literals",
        """{"name": "run_cmd", "arguments": {"command": r"grep -c 'TODO' a.py", 'background': false}}""",
        [("run_cmd", {"command": "grep -c 'TODO' a.py", "background": False})],
        "",
    ),
    (
        "write_file sent with edit_file's blocks, without tags (seen on a 1.5B model)",
        f"{W}\n<old_content>\nx = 30</old_content>\n<new_content>\nx = 45</new_content>\n",
        [("edit_file", {"filepath": "game.py", "old_content": "x = 30", "new_content": "x = 45"})],
        "",
    ),
    (
        "write_file sent with edit_file's blocks, in tags",
        f"<tool_call>{W}\n<old_content>\nx = 30</old_content>\n<new_content>\nx = 45</new_content></tool_call>",
        [("edit_file", {"filepath": "game.py", "old_content": "x = 30", "new_content": "x = 45"})],
        "",
    ),
    (
        "a call sent alone, then a fence closed that was never opened (seen on a 1.5B model)",
        f"{R}\n```\n",
        [READ_A],
        "",
    ),
    (
        "a write call in the form it was offered, then a stray closing fence",
        f'{W}\n<content>\nx = 45\n</content>\n```',
        [("write_file", {"filepath": "game.py", "content": "x = 45\n"})],
        "",
    ),
    (
        "a call then the start of an output it made up, cut by the stop (seen on a 1.5B model)",
        f"{R}\n<outp",
        [READ_A],
        "",
    ),
    (
        "a read call then a fence opened with the file it expects, cut by the stop (seen on a 1.5B model)",
        f"{R}\n```\nimport argparse\n\n",
        [READ_A],
        "",
    ),
    (
        "a run call then the output it expects in a closed fence",
        '{"name": "run_cmd", "arguments": {"command": "pytest"}}\n```text\n3 passed\n```',
        [("run_cmd", {"command": "pytest"})],
        "",
    ),
    (
        "a run call then an unclosed output block it made up",
        '{"name": "run_cmd", "arguments": {"command": "pytest"}}\n<output>\n3 passed',
        [("run_cmd", {"command": "pytest"})],
        "",
    ),
    (
        "a whole call on a line of its own among prose (seen on a 1.5B model)",
        'To fix the call, the command should be:\n'
        '{"name": "run_cmd", "arguments": {"command": "python t.py --min 5 a.txt"}}\nThen use its output.',
        [("run_cmd", {"command": "python t.py --min 5 a.txt"})],
        "To fix the call, the command should be:",
    ),
    (
        "a whole call among prose followed by its own closed blocks and nothing else",
        "To add a line at the end, use edit_file:\n\n"
        '{"name": "edit_file", "arguments": {"filepath": "c.py"}}\n'
        "<old_content>\nimport sys\n</old_content>\n<new_content>\nimport sys\nprint(1)\n</new_content>\n",
        [("edit_file", {"filepath": "c.py", "old_content": "import sys\n", "new_content": "import sys\nprint(1)\n"})],
        "To add a line at the end, use edit_file:",
    ),
    (
        "python None and single-quoted keys",
        "{'name': 'read_file', 'arguments': {'filepath': 'a.py', 'offset': None}}",
        [("read_file", {"filepath": "a.py", "offset": None})],
        "",
    ),
]


@pytest.mark.parametrize(
    ("reply", "expected", "text"), [c[1:] for c in REPAIRED], ids=[c[0] for c in REPAIRED]
)
def test_repaired_shapes_become_calls(
    reply: str, expected: list[tuple[str, dict[str, Any]]], text: str
) -> None:
    result = parse_reply(reply, TABLE)
    assert result.errors == []
    assert calls_of(result) == expected
    assert result.text == text


def test_call_ids_are_fresh_and_distinct() -> None:
    result = parse_reply(f"<tool_call>{R}</tool_call><tool_call>{R}</tool_call>", TABLE)
    ids = [c.id for c in result.calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)


# ---------------------------------------------------------------- refusals

CUT_OFF = (
    "was cut off before its arguments were complete; nothing was run. Send the complete call again."
)

REFUSED: list[tuple[str, str, list[str]]] = [
    (
        "open string",
        '<tool_call>{"name": "write_file", "arguments": {"filepath": "a.py", "content": "hel',
        ["write_file", CUT_OFF],
    ),
    (
        "open string in a fence",
        '```tool_call\n{"name": "write_file", "arguments": {"filepath": "a.py", "content": "hel',
        ["write_file", CUT_OFF],
    ),
    (
        "open string in a bare object",
        '{"name": "write_file", "arguments": {"filepath": "a.py", "content": "hel',
        ["write_file", CUT_OFF],
    ),
    (
        "ends after a colon",
        '<tool_call>{"name": "write_file", "arguments": {"filepath": "a.py", "content":',
        [CUT_OFF],
    ),
    (
        "ends after a comma",
        '<tool_call>{"name": "write_file", "arguments": {"filepath": "a.py",',
        [CUT_OFF],
    ),
    ("ends after a key", '<tool_call>{"name": "write_file", "arguments": {"filepath"', [CUT_OFF]),
    (
        "ends on a number that may go on",
        '<tool_call>{"name": "read_file", "arguments": {"filepath": "a.py", "limit": 12',
        [CUT_OFF],
    ),
    (
        "ends inside a literal",
        '<tool_call>{"name": "run_cmd", "arguments": {"command": "ls", "background": tr',
        [CUT_OFF],
    ),
    ("ends after an opening brace", '<tool_call>{"name": "read_file", "arguments": {', [CUT_OFF]),
    (
        "ends inside an escape",
        '<tool_call>{"name": "write_file", "arguments": {"filepath": "a", "content": "a\\',
        [CUT_OFF],
    ),
    (
        "unclosed block at end of reply",
        f"<tool_call>\n{W}\n<content>\nprint(1)\nprint(",
        ["write_file", CUT_OFF],
    ),
    (
        "half a closing block tag",
        f"<tool_call>\n{W}\n<content>\nprint(1)\n</cont",
        ["write_file", CUT_OFF],
    ),
    ("half an opening block tag", f"<tool_call>\n{W}\n<cont", ["write_file", CUT_OFF]),
    ("empty call at end of reply", "Let me check.\n<tool_call>\n", [CUT_OFF]),
    (
        "xml parameter cut off",
        "<function=write_file>\n<parameter=filepath>\na.py\n</parameter>\n<parameter=content>\nabc",
        [CUT_OFF],
    ),
    ("xml name cut off", "<tool_call>\n<function=write_fi", [CUT_OFF]),
    (
        "unknown tool",
        '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',
        ["'delete_everything'", "Available tools: read_file, write_file, edit_file, run_cmd"],
    ),
    (
        "malformed xml shape",
        "<tool_call><function=read_file\n<parameter=filepath>a</parameter></tool_call>",
        ["malformed", "<function=read_file"],
    ),
    ("unknown xml tool", "<function=nope>\n</function>", ["'nope'", "Available tools"]),
    (
        "invalid json",
        '<tool_call>{"name": "read_file", "arguments": {"filepath": a.py}}</tool_call>',
        ["not valid JSON (Expecting value at:", '"arguments": {"filepath": a.py}}'],
    ),
    (
        "no json at all",
        "<tool_call>read the file please</tool_call>",
        ["not valid JSON", "read the file please"],
    ),
    (
        "no name",
        '<tool_call>{"arguments": {"filepath": "a.py"}}</tool_call>',
        ['no "name"', "read_file"],
    ),
    (
        "arguments not an object",
        '<tool_call>{"name": "read_file", "arguments": "a.py"}</tool_call>',
        ["read_file", "must be a JSON object"],
    ),
    (
        "invalid json in a tool_call fence",
        '```tool_call\n{"name": "read_file", "arguments": {filepath: 1}}\n```',
        ["not valid JSON"],
    ),
]


@pytest.mark.parametrize(
    ("reply", "fragments"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_unsafe_or_broken_calls_are_refused(reply: str, fragments: list[str]) -> None:
    result = parse_reply(reply, TABLE)
    assert result.calls == []
    assert len(result.errors) == 1
    for fragment in fragments:
        assert fragment in result.errors[0]


def test_one_refusal_does_not_stop_the_other_calls() -> None:
    reply = (
        f"<tool_call>{R}</tool_call>\n<tool_call>" + '{"name": "nope"}</tool_call>\n<tool_call>' + R
    )
    result = parse_reply(reply, TABLE)
    assert calls_of(result) == [READ_A, READ_A]
    assert len(result.errors) == 1 and "'nope'" in result.errors[0]


def test_refusal_message_is_short_with_many_tools() -> None:
    table = ToolTable(Tool(f"tool_{i}", "A tool.", ReadArgs, _echo) for i in range(50))
    error = parse_reply('<tool_call>{"name": "x"}</tool_call>', table).errors[0]
    assert "tool_0" in error and "tool_49" not in error and len(error) < 600


# ---------------------------------------------------------------- answers that are not calls

NOT_CALLS: list[tuple[str, str]] = [
    (
        "example config in a json fence",
        'Use this config:\n```json\n{"name": "myapp", "version": "1.0"}\n```\nDone.',
    ),
    (
        "json fence naming a tool with foreign keys",
        'package.json:\n```json\n{"name": "read_file", "version": "1.0"}\n```',
    ),
    (
        "tool tag in inline code",
        "Calls are written in a `<tool_call>` block, and thinking in `<think>`.",
    ),
    ("tool tag in double-backtick inline code", "Write ``<tool_call>`` then JSON."),
    ("json object in prose", f"The call would look like {R} but I will not make it."),
    ("python fence", '```python\nread_file(filepath="a.py")\n```'),
    ("tool_call fence naming no tool", '```tool_call\n{"name": "launch_rockets"}\n```'),
    ("plain answer", "The answer is 42."),
    ("bare object naming no tool", '{"name": "Ada", "age": 36}'),
    ("bare list of numbers", "[1, 2, 3]"),
    ("function tag in inline code", "The `<function=NAME>` shape is also accepted."),
    ("unclosed json fence of data", '```json\n{"a": [1, 2'),
    # a whole file shown in a fence is a fix described, never a call to invent
    ("a whole file in a python fence", "Here is the fixed file:\n```python\ndef add(a, b):\n    return a + b\n```"),
    (
        "a bare write call whose content comes in a fence, not its block",
        '{"name": "write_file", "arguments": {"filepath": "a.py"}}\n```\nprint(1)\n```',
    ),
    (
        "a bare write call followed by prose, not only blocks",
        '{"name": "write_file", "arguments": {"filepath": "a.py"}}\nThen put print(1) in it.',
    ),
    (
        "two call lines among prose: which one is meant is a guess",
        f"First:\n{R}\nor else:\n" + '{"name": "run_cmd", "arguments": {"command": "ls"}}\n',
    ),
    ("a call line that goes on in words", f"Send this:\n{R} and then stop."),
    ("a call line among prose without its required block", f"Write it:\n{W}\nwith print(1) in it."),
    ("a call line inside a fence among prose", f"Like this:\n```text\n{R}\nmore\n```\nDone."),
    (
        "a write call followed by a block the tool does not take",
        '{"name": "write_file", "arguments": {"filepath": "a.py"}}\n<code>\nprint(1)\n</code>',
    ),
]


@pytest.mark.parametrize("reply", [c[1] for c in NOT_CALLS], ids=[c[0] for c in NOT_CALLS])
def test_answers_are_not_calls(reply: str) -> None:
    result = parse_reply(reply, TABLE)
    assert result.calls == [] and result.errors == []
    assert result.text == reply.strip()


@pytest.mark.parametrize("label", ["python", "bash", "text"])
def test_a_call_object_in_a_fence_labelled_as_code_is_the_call(label: str) -> None:
    # Small models label the fence by the task's language ("fix the tests" -> ```python).
    reply = f'Run the tests:\n```{label}\n{{"name": "run_cmd", "arguments": {{"command": "pytest"}}}}\n```'
    assert calls_of(parse_reply(reply, TABLE)) == [("run_cmd", {"command": "pytest"})]
    # a dict in code that names no tool is code
    assert parse_reply(f'```{label}\n{{"name": "myapp", "version": 1}}\n```', TABLE).calls == []


def test_json_fence_does_not_count_beside_a_tool_call_tag() -> None:
    reply = (
        f"<tool_call>\n{R}\n</tool_call>\nExample of the format:\n```json\n"
        + '{"name": "run_cmd", "arguments": {"command": "rm -rf /"}}\n```'
    )
    result = parse_reply(reply, TABLE)
    assert calls_of(result) == [READ_A]
    assert "rm -rf" in result.text


def test_tool_call_fence_still_counts_beside_a_tag() -> None:
    reply = (
        f"<tool_call>{R}</tool_call>\n```tool_call\n"
        + '{"name": "run_cmd", "arguments": {"command": "ls"}}\n```'
    )
    assert calls_of(parse_reply(reply, TABLE)) == [READ_A, ("run_cmd", {"command": "ls"})]


# ---------------------------------------------------------------- native mode


def test_native_reads_shapes_that_name_a_real_tool() -> None:
    for reply in (
        f"<tool_call>{R}</tool_call>",
        f"```json\n{R}\n```",
        R,
        "<function=read_file><parameter=filepath>a.py</parameter></function>",
    ):
        assert calls_of(parse_reply(reply, TABLE, native=True)) == [READ_A], reply


def test_native_leaves_unknown_shapes_as_text() -> None:
    reply = 'Here is the format: <tool_call>{"name": "some_tool", "arguments": {}}</tool_call> as you asked.'
    result = parse_reply(reply, TABLE, native=True)
    assert result.calls == [] and result.errors == []
    assert result.text == reply
    broken = "<tool_call>this is not json</tool_call>"
    assert parse_reply(broken, TABLE, native=True).text == broken


def test_native_still_refuses_a_cut_off_call_to_a_real_tool() -> None:
    result = parse_reply(
        '<tool_call>{"name": "write_file", "arguments": {"filepath": "a", "content": "x',
        TABLE,
        native=True,
    )
    assert result.calls == [] and CUT_OFF in result.errors[0]


# ---------------------------------------------------------------- thinking


def test_think_blocks_go_to_thinking() -> None:
    reply = f"<think>\nLet me read a.py.\n<tool_call>{R}</tool_call> is what I'll do\n</think>\nSure.\n<think>again</think>"
    result = parse_reply(reply, TABLE)
    assert result.calls == []  # a call inside thinking is only thought about
    assert (
        result.thinking
        == "Let me read a.py.\n<tool_call>" + R + "</tool_call> is what I'll do\n\nagain"
    )
    assert result.text == "Sure."


def test_stray_think_close_marks_what_came_before_as_thinking() -> None:
    result = parse_reply(
        f"I need the file.\n</think>\n\nReading.\n<tool_call>{R}</tool_call>", TABLE
    )
    assert result.thinking == "I need the file."
    assert result.text == "Reading."
    assert calls_of(result) == [READ_A]


def test_unclosed_think_runs_to_the_end() -> None:
    result = parse_reply("Hi <think>still thinking", TABLE)
    assert result.text == "Hi" and result.thinking == "still thinking"


# ---------------------------------------------------------------- rendering


def test_tool_prompt_lines_come_from_the_schema() -> None:
    prompt = render_tool_prompt(TABLE)
    assert (
        "- read_file(filepath, offset?: int, limit?: int): Read a file with line numbers.\n"
        in prompt
    )
    assert "- write_file(filepath, content=<content> block): Write a whole file.\n" in prompt
    assert (
        "- edit_file(filepath, old_content=<old_content> block, new_content=<new_content> block):"
        in prompt
    )
    assert (
        "- run_cmd(command, stdin?=<stdin> block, background?: bool): Run a shell command."
        in prompt
    )
    assert "Long files are windowed" not in prompt and "Creates parent folders" not in prompt
    assert prompt.count("<tool_call>") >= 2  # the example and the rules
    assert (
        '{"name": "write_file", "arguments": {"filepath": "hello.py"}}\n<content>\nprint("hello")\n</content>'
        in prompt
    )


def test_tool_prompt_example_parses_as_a_call() -> None:
    prompt = render_tool_prompt(TABLE)
    example = prompt[
        prompt.index("<tool_call>\n{") : prompt.index("</tool_call>") + len("</tool_call>")
    ]
    assert calls_of(parse_reply(example, TABLE)) == [
        ("write_file", {"filepath": "hello.py", "content": 'print("hello")\n'})
    ]


def test_tool_prompt_stays_lean_with_twenty_tools() -> None:
    tools = [
        Tool(
            f"tool_number_{i}",
            "Does a fairly ordinary thing to the project files, described at some length. " * 3,
            RunArgs if i % 2 else ReadArgs,
            _echo,
            block_params=("stdin",) if i % 2 else (),
        )
        for i in range(20)
    ]
    prompt = render_tool_prompt(ToolTable([*TABLE, *tools]))
    assert len(prompt) < 5000


def test_enums_and_lists_are_typed() -> None:
    from typing import Literal

    class Args(BaseModel):
        mode: Literal["fast", "slow"] = "fast"
        paths: list[str]

    prompt = render_tool_prompt(ToolTable([Tool("pick", "Pick.", Args, _echo)]))
    assert '- pick(mode?: "fast"|"slow", paths: list[str]): Pick.' in prompt


TRICKY = 'def f():\n    return "a \\"quoted\\" }\\\\ value"  # } ] {\n\n\tx = {"k": [1, 2]}\n'


@pytest.mark.parametrize(
    "arguments",
    [
        {"filepath": "src/a.py", "content": TRICKY},
        {"filepath": "a", "content": "\n\nleading and trailing newlines\n\n"},
        {"filepath": "a", "content": "mentions </content> and </tool_call> inside"},
        {"filepath": "a", "content": ""},
        {"filepath": "a", "content": "windows\r\nlines\r"},
    ],
    ids=["tricky", "newlines", "closing-tags", "empty", "crlf"],
)
def test_rendered_call_parses_back_to_identical_arguments(arguments: dict[str, Any]) -> None:
    text = render_call_as_text(ToolCall("call_1", "write_file", arguments), TABLE)
    result = parse_reply(text, TABLE)
    assert result.errors == [] and result.text == ""
    assert calls_of(result) == [("write_file", arguments)]


def test_render_uses_raw_blocks_for_block_params() -> None:
    text = render_call_as_text(
        ToolCall("c", "edit_file", {"filepath": "a", "old_content": "x\\y", "new_content": '"q"'}),
        TABLE,
    )
    assert text == (
        '<tool_call>\n{"name": "edit_file", "arguments": {"filepath": "a"}}\n'
        '<old_content>\nx\\y</old_content>\n<new_content>\n"q"</new_content>\n</tool_call>'
    )


def test_history_renders_as_text_messages() -> None:
    write = ToolCall("c1", "write_file", {"filepath": "a.py", "content": TRICKY})
    read = ToolCall("c2", "read_file", {"filepath": "b.py"})
    history = [
        Message.system("You are helpful."),
        Message.user("Make a.py"),
        Message("assistant", [Thinking("plan"), Text("Writing it."), write, read]),
        Message(
            "tool",
            [
                ToolResult("c1", "write_file", "wrote 3 lines"),
                ToolResult("c2", "read_file", "no such file", is_error=True),
            ],
        ),
        Message.user("Thanks, now stop."),
        Message("assistant", [Thinking("only thinking")]),
        Message("assistant", [Text("Done.")]),
    ]
    rendered = render_history_as_text(history, TABLE)
    assert [m.role for m in rendered] == ["system", "user", "assistant", "user", "assistant"]
    assert all(isinstance(p, Text) for m in rendered for p in m.parts)
    assert rendered[2].text == "Writing it.\n" + render_call_as_text(
        write, TABLE
    ) + "\n" + render_call_as_text(read, TABLE)
    assert rendered[3].text == (
        "[Tool Result for 'write_file']\nwrote 3 lines\n\n[Tool Error for 'read_file']\nno such file\n\nThanks, now stop."
    )
    assert "plan" not in "".join(m.text for m in rendered)
    # One history, many renderings: the text rendering parses back to the same calls.
    reparsed = parse_reply(rendered[2].text, TABLE)
    assert calls_of(reparsed) == [(write.name, write.arguments), (read.name, read.arguments)]
    assert reparsed.text == "Writing it."
    assert history[2].parts[2] is write  # the input history is untouched


# ---------------------------------------------------------------- StreamFilter


def run_filter(chunks: list[str]) -> tuple[str, str]:
    stream = StreamFilter(TABLE)
    out = []
    for chunk in chunks:
        out += stream.feed(chunk)
    out += stream.flush()
    text = "".join(c for k, c in out if k == "text")
    thinking = "".join(c for k, c in out if k == "thinking")
    return text, thinking


STREAMED = (
    "Let me look.\n<think>which file? maybe `<tool_call>` no</think>Reading `<tool_call>` docs.\n"
    "<tool_call>\n" + W + "\n<content>\nsecret = '</tool_call>'\n</content>\n</tool_call>\n"
    "Then <function=read_file>\n<parameter=filepath>\nSECRET2\n</parameter>\n</function>more <to <th < done."
)
STREAMED_TEXT = "Let me look.\nReading `<tool_call>` docs.\n\nThen more <to <th < done."
STREAMED_THINKING = "which file? maybe `<tool_call>` no"


def test_stream_filter_whole_and_char_by_char() -> None:
    assert run_filter([STREAMED]) == (STREAMED_TEXT, STREAMED_THINKING)
    assert run_filter(list(STREAMED)) == (STREAMED_TEXT, STREAMED_THINKING)


def test_stream_filter_split_at_every_position() -> None:
    for cut in range(len(STREAMED) + 1):
        assert run_filter([STREAMED[:cut], STREAMED[cut:]]) == (STREAMED_TEXT, STREAMED_THINKING), (
            cut
        )


def test_stream_filter_random_chunkings() -> None:
    rng = random.Random(7)
    for _ in range(200):
        chunks, pos = [], 0
        while pos < len(STREAMED):
            size = rng.randint(1, 15)
            chunks.append(STREAMED[pos : pos + size])
            pos += size
        assert run_filter(chunks) == (STREAMED_TEXT, STREAMED_THINKING)


def test_stream_filter_agrees_with_parse_reply() -> None:
    result = parse_reply(STREAMED, TABLE)
    assert result.text == STREAMED_TEXT.strip()
    assert result.thinking == STREAMED_THINKING
    assert [c.name for c in result.calls] == ["write_file", "read_file"]


def test_stream_filter_never_shows_an_unclosed_call() -> None:
    stream = StreamFilter(TABLE)
    shown = stream.feed('Sure.\n<tool_call>\n{"name": "write_file", ')
    assert stream.inside_call
    shown += stream.feed('"arguments": {"filepath": "a"}}\n<content>\nSECRET')
    shown += stream.flush()
    assert shown == [("text", "Sure.\n")]


def test_stream_filter_holds_back_only_a_possible_tag() -> None:
    stream = StreamFilter(TABLE)
    assert stream.feed("Hello <tool_") == [("text", "Hello ")]
    assert stream.feed("box> and <") == [("text", "<tool_box> and ")]
    assert stream.feed("b>bold") == [("text", "<b>bold")]
    assert stream.feed(" <thi") == [("text", " ")]
    assert stream.feed("nk>deep") == [("thinking", "deep")]
    assert stream.feed("</thi") == []
    assert stream.feed("nk>out <") == [("text", "out ")]
    assert stream.flush() == [("text", "<")]


def test_stream_filter_drops_a_stray_think_close() -> None:
    assert run_filter(["I think.", "</th", "ink>Answer."]) == ("I think.Answer.", "")


def test_stream_filter_handles_a_huge_reply() -> None:
    """What it shows; how long it takes is bench/bench_parse.py's figure."""
    body = ("x = '<content>' \" \\ {}\n" * 50_000)[:1_000_000]
    reply = (
        "Start <tool_call>\n"
        + W
        + "\n<content>\n"
        + body
        + "\n</content>\n</tool_call> end "
        + "word " * 100_000
    )
    stream = StreamFilter(TABLE)
    shown = []
    for pos in range(0, len(reply), 200):
        shown += stream.feed(reply[pos : pos + 200])
    shown += stream.flush()
    assert "".join(c for _, c in shown) == "Start  end " + "word " * 100_000


def test_parse_reply_handles_a_large_file_body() -> None:
    """What it parses; how long it takes is bench/bench_parse.py's figure."""
    body = 'line with "quotes" and } and \\ and <tags>\n' * 40_000
    reply = render_call_as_text(
        ToolCall("c", "write_file", {"filepath": "big.txt", "content": body}), TABLE
    )
    result = parse_reply(reply, TABLE)
    assert result.calls[0].arguments["content"] == body


def test_json_output_of_render_is_plain_json() -> None:
    text = render_call_as_text(ToolCall("c", "run_cmd", {"command": "echo é"}), TABLE)
    assert json.loads(text.splitlines()[1]) == {
        "name": "run_cmd",
        "arguments": {"command": "echo é"},
    }


# ---------------------------------------------------------------- repairs of file content


def _written(reply: str) -> tuple[str, dict[str, str]]:
    result = parse_reply(reply, TABLE)
    assert result.errors == [] and len(result.calls) == 1
    return result.calls[0].arguments["content"], result.repairs


def _write(path: str, content: str) -> str:
    return (f'<tool_call>{{"name": "write_file", "arguments": {{"filepath": "{path}"}}}}\n'
            f"<content>\n{content}</content>\n</tool_call>")


@pytest.mark.parametrize(("path", "content"), [
    ("src/routes/page.svelte", "<script>\nlet n = 0;\n</script>\n"),
    ("page.py", "<script>\nx = 1\n</script>\n"),
    ("notes.txt", "```\nkept as written\n```\n"),
    ("Makefile", "```make\nall:\n\techo hi\n```\n"),
    ("app.py", "```\nprint(1)\n```\n"),  # no language: nothing says it is the file's kind
    ("app.py", "```js\nconsole.log(1)\n```\n"),  # the fence names another kind
])
def test_a_file_whose_wrapper_may_be_meant_is_written_as_sent(path: str, content: str) -> None:
    assert _written(_write(path, content)) == (content, {})


def test_a_fence_naming_the_files_kind_is_taken_off_and_said() -> None:
    from tether.protocol.shapes import UNFENCED_NOTE

    result = parse_reply(_write("game.py", "```python\nprint(1)\n```\n"), TABLE)
    assert calls_of(result) == [("write_file", {"filepath": "game.py", "content": "print(1)\n"})]
    assert result.repairs == {result.calls[0].id: UNFENCED_NOTE.format(label="python", path="game.py")}


def test_block_tags_inside_a_json_value_are_taken_out_and_said() -> None:
    from tether.protocol.shapes import TAGS_TAKEN_OUT

    reply = '{"name": "write_file", "arguments": {"filepath": "a.py", "content": "<content>print(1)\\n</content>"}}'
    result = parse_reply(reply, TABLE)
    assert result.repairs == {result.calls[0].id: TAGS_TAKEN_OUT.format(name="content")}


# ---------------------------------------------------------------- a block left open


EDIT_UNCLOSED = (
    '{"name": "edit_file", "arguments": {"filepath": "a.py"}}\n'
    "<old_content>\ndef f(x):\n    pass\n\n<new_content>\ndef f(x):\n    return x\n</new_content>\n"
)
EDIT_ARGS = {"filepath": "a.py", "old_content": "def f(x):\n    pass\n", "new_content": "def f(x):\n    return x\n"}


@pytest.mark.parametrize("reply", [EDIT_UNCLOSED, f"<tool_call>\n{EDIT_UNCLOSED}</tool_call>"])
def test_a_block_left_open_before_the_next_is_closed_there_and_said(reply: str) -> None:
    """A small model forgot </old_content> and went on with <new_content>: the call used to
    be read as prose (nothing ran, and the model was told it had only described the change)."""
    from tether.protocol.shapes import UNCLOSED_BLOCK

    result = parse_reply(reply, TABLE)
    assert calls_of(result) == [("edit_file", EDIT_ARGS)] and result.errors == []
    note = UNCLOSED_BLOCK.format(name="old_content", next="new_content")
    assert result.repairs == {result.calls[0].id: note}


def test_a_block_with_its_end_keeps_what_looks_like_a_tag_inside_it() -> None:
    content = "Write <old_content> then <new_content> in a call.\n"
    assert _written(_write("notes.md", content)) == (content, {})


def test_a_native_reply_is_never_repaired() -> None:
    result = parse_reply(EDIT_UNCLOSED, TABLE, native=True)
    assert result.calls == [] and result.repairs == {}


def test_another_tools_block_opener_in_an_open_content_block_is_text_of_the_file() -> None:
    """A write_file of a page about edits, its `</content>` forgotten before `</tool_call>`:
    `<new_content>` is no block of write_file, so the content is not cut there (the file
    used to be written up to it, the rest lost)."""
    content = "# Edits\nPut the new text in <new_content> and the old in the other block.\nMore.\n"
    reply = ('<tool_call>{"name": "write_file", "arguments": {"filepath": "doc.md"}}\n'
             f"<content>\n{content}</tool_call>")
    result = parse_reply(reply, TABLE)
    assert calls_of(result) == [("write_file", {"filepath": "doc.md", "content": content})]
    assert result.repairs == {}


def test_the_blocks_closed_are_the_last_calls_of_a_tag_that_holds_two() -> None:
    """The blocks after a sequence of calls belong to its last call (edit_file here), not the first."""
    first = '{"name": "write_file", "arguments": {"filepath": "b.py", "content": "x = 1\\n"}}\n'
    result = parse_reply(f"<tool_call>\n{first}{EDIT_UNCLOSED}</tool_call>", TABLE)
    assert calls_of(result)[-1] == ("edit_file", EDIT_ARGS)


@pytest.mark.parametrize("after", ["\n{", "\n\n{\"na", "\n{\"name\": "])
def test_a_whole_call_then_the_cut_start_of_something_else_is_the_call(after: str) -> None:
    # The reply ended (or was cut) just as the model began its next object: the call it
    # finished runs; the fragment, which names no tool, is dropped.
    result = parse_reply(R + after, TABLE)
    assert calls_of(result) == [READ_A] and result.errors == [] and result.text == ""


def test_a_whole_call_then_a_cut_call_to_a_tool_runs_the_first_and_refuses_the_second() -> None:
    result = parse_reply(R + '\n{"name": "run_cmd", "arguments": {"comm', TABLE)
    assert calls_of(result) == [READ_A]
    assert len(result.errors) == 1 and "run_cmd call was cut off" in result.errors[0]


@pytest.mark.parametrize("value, problem", [
    ("<content></content>", "is only block tags"),
    ("<content>", "is only block tags"),
    ("<old_content>\n\n<new_content>\n", "is only block tags"),
    ("<old_content>\n\ndef f():\n    pass\n", "begins with the tag <old_content>"),
    ("<content>print(1)", "begins with the tag <content>"),
])
def test_a_json_block_value_of_tags_is_refused_before_it_empties_or_tags_the_file(
    value: str, problem: str
) -> None:
    reply = json.dumps({"name": "write_file", "arguments": {"filepath": "a.py", "content": value}})
    for text in (reply, f"<tool_call>{reply}</tool_call>", f"```json\n{reply}\n```"):
        result = parse_reply(text, TABLE)
        assert result.calls == [] and len(result.errors) == 1, text
        assert problem in result.errors[0] and "nothing was run" in result.errors[0]
        assert "between <content> and </content>" in result.errors[0]


@pytest.mark.parametrize("reply, content", [
    ('{"name": "write_file", "arguments": {"filepath": "a.py", "content": "<content>x = 1</content>"}}',
     "x = 1"),  # tags that wrap the whole value are taken off, and the result says so
    ('{"name": "write_file", "arguments": {"filepath": "a.py", "content": ""}}', ""),  # an empty file
    ('{"name": "write_file", "arguments": {"filepath": "a.md"}}\n<content>\n<old_content> is a tag\n</content>',
     "<old_content> is a tag"),  # a raw block's text is the model's own
])
def test_block_values_that_are_text_still_run(reply: str, content: str) -> None:
    result = parse_reply(reply, TABLE)
    assert result.errors == [] and [c.arguments["content"].strip() for c in result.calls] == [content]


@pytest.mark.parametrize("reply", [
    '{"name": "edit_file", "arguments": {"filepath": "s.py"}}\n<old_content>\ndef commands(b):\n    pass\n\n',
    '{"name": "edit_file", "arguments": {"filepath": "s.py"}}\n<old_content>\nx\n</old_content>\n<new_content>\ny\n',
    '{"name": "write_file", "arguments": {"filepath": "s.py"}}\n<content>\ndef commands(b):\n',
])
def test_a_reply_that_ends_inside_the_calls_own_block_is_told_it_was_cut_off(reply: str) -> None:
    # Not an answer that "only describes" the change: the call was there, and is incomplete.
    result = parse_reply(reply, TABLE)
    assert result.calls == [] and len(result.errors) == 1 and "was cut off" in result.errors[0]


def test_a_call_left_open_inside_a_pasted_search_result_is_told_those_are_not_the_files_lines() -> None:
    # A 1.5B model pasted search_in_file's result as old_content and ended its reply there;
    # told only that the call was cut off, it sent the same paste three times.
    search = ("test/d.test.js:5: const { f } = require('../lib/d');\n"
              "test/d.test.js:8:   assert.equal(f(0), '0:00');\n(2 matching lines in 1 files)\n")
    result = parse_reply('{"name": "edit_file", "arguments": {"filepath": "lib/d.js"}}\n<old_content>\n'
                         + search, TABLE)
    [error] = result.errors
    assert "was cut off" in error and error.endswith(
        "Its <old_content> holds lines of a search result (`path:N: text`): those are not the file's "
        "own lines. Read the file with read_file, copy old_content from what it shows, and close the "
        "block with </old_content>.")
    code = parse_reply('{"name": "edit_file", "arguments": {"filepath": "a.py"}}\n<old_content>\n'
                       'url = "http://host:8080/x"\nmore: 1\n', TABLE)
    assert code.errors[0].endswith("Send the complete call again."), "code is not a search result"


@pytest.mark.parametrize("mark", ["{n}| ", "{n}:a3|"])  # the small profile's read_file, the full one's
def test_read_files_line_numbers_copied_onto_a_whole_file_are_taken_off_and_said(mark: str) -> None:
    # A 1.5B model wrote back a file as read_file showed it: its first two lines bare, the
    # rest each with its own number.
    numbered = "".join(mark.format(n=n) + f"value_{n} = {n}\n" for n in range(3, 12))
    reply = ('{"name": "write_file", "arguments": {"filepath": "a.py"}}\n<content>\n'
             f'"""Doc\nmore."""\n{numbered}</content>')
    result = parse_reply(reply, TABLE)
    [call] = result.calls
    assert call.arguments["content"].splitlines()[2:4] == ["value_3 = 3", "value_4 = 4"]
    assert "line numbers copied from read_file were taken off 9 lines" in result.repairs[call.id]


@pytest.mark.parametrize("content", [
    "1| a\n5| b\nc\n",  # numbers that are not the lines' own
    "1| first\n2| second\nthird\nfourth\nfifth\n",  # two numbered lines of five
    "| a | b |\n| 1 | 2 |\n| 3 | 4 |\n",  # a table
])
def test_text_that_only_looks_numbered_is_written_as_it_is(content: str) -> None:
    reply = json.dumps({"name": "write_file", "arguments": {"filepath": "a.md", "content": content}})
    result = parse_reply(reply, TABLE)
    assert [c.arguments["content"] for c in result.calls] == [content] and result.repairs == {}


def test_an_empty_block_under_content_written_in_the_json_keeps_the_json_and_says_so() -> None:
    """A 1.5B model wrote a script as a Python triple-quoted string in the call's JSON and an
    empty <content></content> after it: the block won, and an empty file was created."""
    text = ('<tool_call>\n{"name": "write_file", "arguments": {"path": "count.py", "content": """\n'
            'import sys\nprint(len(sys.argv))\n"""\n}}\n<content>\n</content>\n</tool_call>')
    result = parse_reply(text, TABLE)
    assert [c.arguments["content"] for c in result.calls] == ["\nimport sys\nprint(len(sys.argv))\n"]
    assert "block after the call was empty" in result.repairs[result.calls[0].id]
    # a block with text still wins over the JSON, silently as before
    text = ('<tool_call>\n{"name": "write_file", "arguments": {"path": "count.py", "content": "x"}}\n'
            '<content>\nprint(1)\n</content>\n</tool_call>')
    result = parse_reply(text, TABLE)
    assert [c.arguments["content"] for c in result.calls] == ["print(1)\n"]
    assert result.repairs == {}
