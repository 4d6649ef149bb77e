"""The shapes a call comes in: names, argument envelopes, raw blocks, XML parameters."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..core.messages import ToolCall
from ..core.read_lines import READ_PREFIX
from ..core.toolspec import Tool, ToolTable
from .jsonrepair import _decode, _Invalid, _Truncated
from .tags import FUNCTION_CLOSE, PARAM_CLOSE, PARAM_OPEN, _block_names

_NAME_KEYS = ("name", "tool_name", "function_name", "tool", "function")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "params")
_ENVELOPE_KEYS = ("tool_call", "function", "function_call", "tool_use", "call")
_NAME_PREFIXES = ("functions.", "default_api.", "tools.")
_SNIFF_NAME = re.compile(
    r"""["']?(?:name|tool_name|function_name|tool|function)["']?\s*:\s*["']([\w.\-]+)"""
    r"""|<function=([\w.\-]+)"""
)
_BLOCK_TAG = re.compile(r"<([A-Za-z_][\w\-]*)>")
_FUNCTION_TAG = re.compile(r"<function=([^<>\n]*)>")
_PARAM_TAG = re.compile(r"<parameter=([^<>\n]*)>")


def _clean_name(name: str) -> str:
    name = name.strip().strip("\"'`").strip()
    for prefix in _NAME_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _sniff_name(src: str) -> str | None:
    """The tool name a broken call seems to give, for a useful refusal."""
    m = _SNIFF_NAME.search(src)
    if m is None:
        return None
    return _clean_name(m.group(1) or m.group(2))


def _strip_raw_block(value: str) -> str:
    """A raw block's text: the newline right after the opening tag is the tag's own; the
    newline before the closing tag is the content's (a file written as
    `<content>\nX\n</content>` ends with a newline, as text files should)."""
    if value.startswith("\r\n"):
        return value[2:]
    return value[1:] if value.startswith("\n") else value


def _strip_block(value: str) -> str:
    """A parameter value's text: one leading and one trailing newline are the tags' own."""
    crlf = value.startswith("\r\n")
    if crlf:
        value = value[2:]
    elif value.startswith("\n"):
        value = value[1:]
    if crlf and value.endswith("\r\n"):
        return value[:-2]
    return value[:-1] if value.endswith("\n") else value


def _ends_in_partial_tag(text: str) -> bool:
    k = text.rfind("<")
    return k >= 0 and ">" not in text[k:]


def _read_blocks(rest: str, closed: bool) -> tuple[dict[str, str], bool]:
    """The raw blocks after a call's JSON, and whether they were cut off.

    A block left open inside a closed call runs to the end of the call; one left
    open at the end of the reply may be missing its end, so it counts as cut off.
    """
    blocks: dict[str, str] = {}
    pos = 0
    while True:
        m = _BLOCK_TAG.search(rest, pos)
        if m is None:
            return blocks, not closed and _ends_in_partial_tag(rest[pos:])
        end = rest.find(f"</{m.group(1)}>", m.end())
        if end < 0:
            if not closed:
                return blocks, True
            blocks[m.group(1)] = _strip_raw_block(rest[m.end() :])
            return blocks, False
        blocks[m.group(1)] = _strip_raw_block(rest[m.end() : end])
        pos = end + len(m.group(1)) + 3


def _unclosed_block_value_start(body: str, pos: int) -> int | None:
    while True:
        m = _BLOCK_TAG.search(body, pos)
        if m is None:
            return None
        end = body.find(f"</{m.group(1)}>", m.end())
        if end < 0:
            return m.end()
        pos = end + len(m.group(1)) + 3


def _unclosed_param_value_start(body: str) -> int | None:
    pos = 0
    while True:
        m = _PARAM_TAG.search(body, pos)
        if m is None:
            return None
        end = body.find(PARAM_CLOSE, m.end())
        if end < 0:
            return m.end()
        pos = end + len(PARAM_CLOSE)


def _schema_types(prop: dict[str, Any]) -> set[str]:
    declared = prop.get("type")
    types = set(declared) if isinstance(declared, list) else {declared} if declared else set()
    for key in ("anyOf", "oneOf"):
        for branch in prop.get(key, []) or []:
            if isinstance(branch, dict):
                types |= _schema_types(branch)
    return types


def _properties(tool: Tool) -> dict[str, dict[str, Any]]:
    return tool.json_schema().get("properties", {})


def _coerce(value: str, prop: dict[str, Any]) -> Any:
    """An XML parameter's text as the type the schema asks for (text stays text)."""
    types = _schema_types(prop) - {"null"}
    if not types or "string" in types:
        return value
    s = value.strip()
    if "integer" in types and re.fullmatch(r"[-+]?\d{1,30}", s):
        return int(s)
    if "boolean" in types and s.lower() in ("true", "false"):
        return s.lower() == "true"
    if "number" in types and re.fullmatch(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?", s):
        return float(s)
    if types & {"array", "object"}:
        try:
            return json.loads(s)
        except (ValueError, RecursionError):
            return value
    return value


def _unwrap(obj: dict[str, Any]) -> dict[str, Any]:
    """The call inside `{"tool_call": {...}}` or OpenAI's `{"function": {...}}`."""
    for _ in range(3):
        if any(isinstance(obj.get(k), str) for k in _NAME_KEYS):
            return obj
        inner = next((obj[k] for k in _ENVELOPE_KEYS if isinstance(obj.get(k), dict)), None)
        if inner is None:
            return obj
        obj = inner
    return obj


def _name_and_rest(obj: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    obj = _unwrap(obj)
    for key in _NAME_KEYS:
        value = obj.get(key)
        if isinstance(value, str):
            return _clean_name(value), {k: v for k, v in obj.items() if k != key}
    return None, obj


def _argument_dict(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return dict(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        try:
            decoded = _decode(value, at_eof=False)
        except (_Invalid, _Truncated):
            return None
        return dict(decoded) if isinstance(decoded, dict) else None
    return None


def _arguments(tool: Tool, rest: dict[str, Any]) -> tuple[dict[str, Any], bool] | None:
    """The call's arguments, and whether they sat beside the name; None if unusable.

    A key like `input` that is also one of the tool's own parameters is taken as
    that parameter unless it holds an object.
    """
    props = _properties(tool)
    for key in _ARGUMENT_KEYS:
        if key not in rest or (key in props and not isinstance(rest[key], dict)):
            continue
        args = _argument_dict(rest[key])
        return None if args is None else (args, False)
    beside = {k: v for k, v in rest.items() if k in props or k not in ("id", "type")}
    return beside, True


def _without_block_tags(name: str, value: str) -> str:
    """`"content": "<content>print(1)</content>"`: a raw block's tags written inside the
    JSON string would be written to disk with the text; the tags go, the text stays."""
    opening, closing = f"<{name}>", f"</{name}>"
    body = value.strip()
    if not body.startswith(opening):
        return value
    inner = body[len(opening) :]
    if not inner.endswith(closing) or closing in inner[: -len(closing)]:
        return value  # the tags do not wrap the whole value exactly once: leave it as written
    return _strip_raw_block(inner[: -len(closing)])


_FENCED = re.compile(r"\A\s*```(?P<label>[\w+#.-]+)[ \t]*\n(?P<body>.*?)\n?```\s*\Z", re.S)
_FENCE_SUFFIXES: dict[str, frozenset[str]] = {
    label: frozenset(suffixes)
    for labels, suffixes in (
        (("python", "py", "python3"), (".py", ".pyi", ".pyw")),
        (("javascript", "js"), (".js", ".mjs", ".cjs")),
        (("typescript", "ts"), (".ts", ".mts", ".cts")),
        (("sh", "bash", "shell", "zsh"), (".sh", ".bash", ".zsh")),
        (("ruby", "rb"), (".rb",)),
        (("go", "golang"), (".go",)),
        (("rust", "rs"), (".rs",)),
        (("java",), (".java",)),
        (("kotlin", "kt"), (".kt", ".kts")),
        (("c",), (".c", ".h")),
        (("cpp", "c++", "cxx"), (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h")),
        (("csharp", "cs", "c#"), (".cs",)),
        (("php",), (".php",)),
        (("lua",), (".lua",)),
        (("swift",), (".swift",)),
        (("json",), (".json",)),
        (("yaml", "yml"), (".yaml", ".yml")),
        (("toml",), (".toml",)),
        (("css",), (".css",)),
        (("sql",), (".sql",)),
    )
    for label in labels
}
"""Fence labels and the code files they name: a fence is taken off a whole file's text only
when its label names that file's kind (text, markup and extension-less files keep theirs)."""
UNFENCED_NOTE = (
    "(Repaired before it ran: the ```{label} fence around the whole content of {path} was taken "
    "off; the file holds the code inside it. If the fence was meant to be in the file, write it "
    "again with the fence inside other text.)"
)
NUMBERS_NOTE = (
    "(Repaired before it ran: the 'N| ' line numbers copied from read_file were taken off "
    "{count} lines of the content of {path}; they are not part of the file.)"
)
UNCLOSED_BLOCK = (
    "(Repaired before it ran: <{name}> was not closed, so it was read as ending where <{next}> "
    "begins.)"
)
EMPTY_BLOCK_NOTE = (
    "(Repaired before it ran: the <{name}> block after the call was empty, so the {name} "
    "written in the call's JSON was used.)"
)
TAGS_TAKEN_OUT = (
    "(Repaired before it ran: the <{name}>...</{name}> block tags written inside the {name} "
    "value were taken out; the value is the text between them.)"
)


def _unfenced(value: str, filepath: object) -> tuple[str, str] | None:
    """(the text inside, the label) when a markdown fence whose label names the file's kind
    wraps all of `value` (a small model writes `write_file game.py` with ```python around
    the code); None otherwise. Tags are never taken off: `<script>` or `<code>` around a
    file's text may be what the file is."""
    fenced = _FENCED.match(value)
    if fenced is None or not isinstance(filepath, str) or "```" in fenced.group("body"):
        return None
    label = fenced.group("label").lower()
    if Path(filepath).suffix.lower() not in _FENCE_SUFFIXES.get(label, frozenset()):
        return None
    return fenced.group("body") + "\n", label


def repair_block_values(call: ToolCall, table: ToolTable) -> tuple[ToolCall, list[str]]:
    """A text-protocol call with raw-block tags taken out of its block parameters' JSON
    values, a fence naming the file's kind taken off a whole file's text (`_unfenced`) and
    read_file's line numbers taken off its lines (`_without_line_numbers`),
    and one note per repair, to go with its result: no repair is silent. Native calls are
    never repaired (their arguments are the model's own JSON)."""
    tool = table.get(call.name)
    if tool is None:
        return call, []
    fixed: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in call.arguments.items():
        if key in tool.block_params and isinstance(value, str):
            untagged = _without_block_tags(key, value)
            if untagged != value:
                notes.append(TAGS_TAKEN_OUT.format(name=key))
            value = untagged
        fixed[key] = value
    content = fixed.get("content")
    if isinstance(content, str) and "content" in tool.block_params:
        unfenced = _unfenced(content, fixed.get("filepath"))
        if unfenced is not None:
            fixed["content"] = content = unfenced[0]
            notes.append(UNFENCED_NOTE.format(label=unfenced[1], path=fixed.get("filepath")))
        unnumbered = _without_line_numbers(content)
        if unnumbered is not None:
            fixed["content"] = unnumbered[0]
            notes.append(NUMBERS_NOTE.format(count=unnumbered[1], path=fixed.get("filepath")))
    return (call, []) if fixed == call.arguments else (ToolCall(call.id, call.name, fixed), notes)


STRAY_BLOCK_TAGS = (
    "Your {tool} call's {param} {problem}; nothing was run. Send the call again with the "
    "text itself between <{param}> and </{param}> after the call."
)


def stray_block_tags(tool: Tool, json_values: dict[str, Any], table: ToolTable) -> str | None:
    """Why a text-protocol call must not run: the JSON value of one of its raw-block
    parameters is only block tags (`"content": "<content></content>"`, a placeholder for text
    that never came), or still begins with one once `_without_block_tags` has taken off tags
    that wrap it whole (`"content": "<old_content>..."`, edit_file's form inside write_file's
    value). Run, it would empty the file or write the tag into it."""
    names = "|".join(re.escape(n) for n in sorted(_block_names(table)))
    for key in tool.block_params:
        value = json_values.get(key)
        if not isinstance(value, str):
            continue
        if re.fullmatch(rf"(?:\s*</?(?:{names})>)+\s*", value):
            problem = "is only block tags, with no text between them"
        elif tag := re.match(rf"\s*(</?(?:{names})>)", _without_block_tags(key, value)):
            problem = f"begins with the tag {tag.group(1)}, which would become part of the text"
        else:
            continue
        return STRAY_BLOCK_TAGS.format(tool=tool.name, param=key, problem=problem)
    return None


def _without_line_numbers(text: str) -> tuple[str, int] | None:
    """A whole file's text copied from read_file with its `N| ` prefixes, and how many lines
    had one: when at least three lines, and three in four of the lines with text, begin with
    the number of the line they are, the numbers are read_file's, not the file's (written,
    every line would begin with its number). None when they are not."""
    lines = text.split("\n")
    numbered = {i for i, line in enumerate(lines)
                if (m := READ_PREFIX.match(line)) is not None and int(m.group(1)) == i + 1}
    if len(numbered) < 3 or len(numbered) < 0.75 * sum(1 for line in lines if line.strip()):
        return None
    kept = [READ_PREFIX.sub("", line, count=1) if i in numbered else line for i, line in enumerate(lines)]
    return "\n".join(kept), len(numbered)


def _accepts_block(tool: Tool, name: str) -> bool:
    return name in tool.block_params or name in _properties(tool)


def _call_objects(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list) and len(value) == 1:
        return value["tool_calls"]
    return [value]


def _prefix_name(prefix: str) -> str | None:
    """`read_file {"filepath": ...}`: a bare tool name written before the JSON."""
    words = prefix.replace("`", " ").split()
    return _clean_name(words[-1]).rstrip(":") if words else None


def _python_arguments(node: ast.Call, tool: Tool) -> dict[str, Any] | None:
    names = list(_properties(tool))
    if len(node.args) > len(names) or any(k.arg is None for k in node.keywords):
        return None
    try:
        args = {names[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
        args.update({str(k.arg): ast.literal_eval(k.value) for k in node.keywords})
    except Exception:  # a non-literal argument: not a call we can run
        return None
    return args


def _xml_params(rest: str, closed: bool) -> tuple[dict[str, str], bool]:
    """`<parameter=x>value</parameter>` pairs, and whether the last one was cut off.

    In a closed call, a value left unclosed ends at the next parameter or at
    `</function>`. Each search resumes where the last one failed or stopped, so
    many unclosed values still cost one pass.
    """
    params: dict[str, str] = {}
    pos = 0
    closes_left = True
    function_end = -1
    while True:
        m = _PARAM_TAG.search(rest, pos)
        if m is None:
            tail = rest[pos:]
            return params, not closed and _ends_in_partial_tag(tail) and FUNCTION_CLOSE not in tail
        name = _clean_name(m.group(1))
        end = rest.find(PARAM_CLOSE, m.end()) if closes_left else -1
        if end >= 0:
            params[name] = _strip_block(rest[m.end() : end])
            pos = end + len(PARAM_CLOSE)
            continue
        closes_left = False
        if not closed:
            return params, True
        if function_end < m.end():
            found = rest.find(FUNCTION_CLOSE, m.end())
            function_end = found if found >= 0 else len(rest)
        next_param = rest.find(PARAM_OPEN, m.end(), function_end)
        end = next_param if next_param >= 0 else function_end
        params[name] = _strip_block(rest[m.end() : end])
        pos = end


def close_open_blocks(rest: str, names: Collection[str]) -> tuple[str, list[tuple[str, str]]]:
    """The text after a call's JSON with each raw block that has no end, and that another
    block's opening tag follows, closed there (`<old_content>` ... `<new_content>`: the model
    forgot `</old_content>`), trailing blank lines left out of it; and the (block, next block)
    pairs so closed, for the note that says so. A block with an end anywhere after it is left
    as written (what looks like a tag inside it is its text), as is one opened again under
    its own name."""
    if not names:
        return rest, []
    opener = re.compile("<(" + "|".join(re.escape(name) for name in sorted(names)) + ")>")
    closed: list[tuple[str, str]] = []
    pos = 0
    while (m := opener.search(rest, pos)) is not None:
        name = m.group(1)
        end = rest.find(f"</{name}>", m.end())
        following = opener.search(rest, m.end())
        if end >= 0 or following is None or following.group(1) == name:
            pos = end + len(name) + 3 if end >= 0 else m.end()
            continue
        body = rest[m.end():following.start()].rstrip("\r\n")
        closer = f"\n</{name}>\n"
        rest = rest[:m.end()] + body + closer + rest[following.start():]
        closed.append((name, following.group(1)))
        pos = m.end() + len(body) + len(closer)
    return rest, closed
