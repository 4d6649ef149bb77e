"""A GBNF grammar for constrained decoding of a text-protocol reply (llama.cpp's `grammar`,
vLLM's structured outputs, llama-cpp-python's LlamaGrammar).

A reply that follows it is either one well-formed call, written as `render_call_as_text`
writes one (`<tool_call>`, a JSON object naming a tool on the menu whose `arguments` hold
only that tool's parameters, in the schema's order, the required ones present, then the raw
blocks of its block parameters, `</tool_call>`), or a plain answer: any text without
`<tool_call>` in it. Generated from the tools' own schemas, so it says what the menu in the
system prompt says.

Who gets it (`RequestOptions.grammar`, with the profile's `grammar` lever on and the text
protocol in use): llama.cpp's server (`grammar` on /v1/chat/completions), vLLM (structured
outputs' `grammar`), each known by the `owned_by` of its model list, and the in-process
model (llama-cpp-python's LlamaGrammar). Not Ollama: its `format` takes a JSON schema only,
which cannot say "or a plain answer", so it would forbid every answer; Ollama is sent none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..core.toolspec import Tool
from .shapes import _schema_types
from .tags import CALL_CLOSE, CALL_OPEN

_COMMON = r'''ws ::= [ \t\n]{0,20}
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex ) )* "\""
hex ::= [0-9a-fA-F]
integer ::= "-"? ( "0" | [1-9] [0-9]* )
number ::= integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
boolean ::= "true" | "false"
null ::= "null"
value ::= string | number | boolean | null | array | object
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"'''

_TYPE_RULES = {"string": "string", "integer": "integer", "number": "number",
               "boolean": "boolean", "null": "null", "object": "object"}


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _rule_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower() or "x"


def value_rule(prop: dict[str, Any]) -> str:
    """The GBNF expression for one argument's value, from its JSON schema (anything this
    does not know is any JSON value)."""
    if "enum" in prop:
        return " | ".join(literal(json.dumps(v, ensure_ascii=False)) for v in prop["enum"])
    branches = [b for b in prop.get("anyOf", []) or [] if isinstance(b, dict)]
    if branches:
        return " | ".join(f"( {value_rule(b)} )" for b in branches)
    types = sorted(_schema_types(prop))
    if not types or not all(t in _TYPE_RULES or t == "array" for t in types):
        return "value"
    return " | ".join(_array_rule(prop) if t == "array" else _TYPE_RULES[t] for t in types)


def _array_rule(prop: dict[str, Any]) -> str:
    item = value_rule(prop.get("items", {})) if isinstance(prop.get("items"), dict) else "value"
    return f'"[" ws ( ( {item} ) ws ( "," ws ( {item} ) ws )* )? "]"'


class _Rules:
    """The rules of one grammar, by name, in the order written."""

    def __init__(self) -> None:
        self.rules: dict[str, str] = {}

    def add(self, name: str, body: str) -> str:
        self.rules[name] = body
        return name

    def text(self) -> str:
        return "\n".join(f"{name} ::= {body}" for name, body in self.rules.items())


def _members(rules: _Rules, prefix: str, pairs: list[tuple[str, bool]]) -> str:
    """The members of an object whose keys come in this order, each required or not, with a
    comma between two (rules `<prefix>-<i>-first` and `<prefix>-<i>-next`)."""

    def ref(index: int, first: bool) -> str:
        if index == len(pairs):
            return ""
        return f"{prefix}-{index}-{'first' if first else 'next'}"

    for index in reversed(range(len(pairs))):
        member, required = pairs[index]
        then = ref(index + 1, False)
        written = f"{member} {then}".strip()
        for first in (True, False) if index else (True,):  # the first member has no comma
            this = written if first else f'"," ws {written}'
            skipped = ref(index + 1, first)
            alternatives = [this] if required else [this, skipped or '""']
            rules.add(ref(index, first), " | ".join(f"( {a} )" for a in alternatives))
    return ref(0, True)


def _tool_rule(rules: _Rules, tool: Tool, index: int) -> str:
    """`"name", "arguments": {...}}` and the raw blocks for one tool (the call's opening
    `{"name":` is the caller's)."""
    schema = tool.json_schema()
    required = set(schema.get("required", []))
    properties: dict[str, Any] = schema.get("properties", {})
    prefix = f"tool{index}-{_rule_name(tool.name)}"
    pairs = []
    for name, prop in properties.items():
        if name in tool.block_params:
            continue
        value = rules.add(f"{prefix}-{_rule_name(name)}", value_rule(prop))
        pairs.append((f'{literal(json.dumps(name))} ws ":" ws {value} ws', name in required))
    members = _members(rules, f"{prefix}-arg", pairs) if pairs else ""
    arguments = f'"{{" ws {members} "}}"' if members else '"{" ws "}"'
    blocks = []
    for name in tool.block_params:
        if name in properties:
            block = f'{literal(f"<{name}>")} {_block_text(rules, name)} {literal(f"</{name}>")} ws'
            blocks.append(block if name in required else f"( {block} )?")
    head = literal(f'"{tool.name}"')
    body = f'{head} ws "," ws "\\"arguments\\"" ws ":" ws {arguments} ws "}}" ws {" ".join(blocks)}'
    return rules.add(prefix, body.strip())


def _block_text(rules: _Rules, name: str) -> str:
    """Raw block text: anything that does not close the block (one set of rules per name)."""
    rule = f"block-{_rule_name(name)}"
    if f"{rule}-0" not in rules.rules:
        _without(rules, rule, f"</{name}>")
    return f"{rule}-0"


def _without(rules: _Rules, name: str, forbidden: str) -> str:
    """Rules for any text that never contains `forbidden` (a matcher for the string, one rule
    per state: the characters of `forbidden` seen so far)."""

    def state(k: int) -> str:
        return f"{name}-{k}"

    def step(k: int, ch: str) -> int:
        """The matcher's state after `ch` in state `k` (the longest prefix of `forbidden`
        that ends the text seen)."""
        seen = forbidden[:k] + ch
        while seen and not forbidden.startswith(seen):
            seen = seen[1:]
        return len(seen)

    for k in range(len(forbidden)):
        moves = {ch: step(k, ch) for ch in sorted(set(forbidden))}
        special = [ch for ch, nxt in moves.items() if nxt != 0]
        others = "[^" + "".join(_class_char(c) for c in special) + "]"
        alternatives = ['""', f"{others} {state(0)}"]
        alternatives += [f"{literal(ch)} {state(moves[ch])}" for ch in special
                         if moves[ch] < len(forbidden)]
        rules.add(state(k), " | ".join(alternatives))
    return state(0)


def _class_char(ch: str) -> str:
    return "\\" + ch if ch in "]\\^-[" else ch


def call_grammar(tools: Sequence[Tool]) -> str:
    """The GBNF grammar of a reply that is one call to one of `tools` or a plain answer."""
    rules = _Rules()
    rules.add("root", "call | answer" if tools else "answer")
    if tools:
        rules.add("call", "")  # first in the text: filled in once the tools' rules are written
        names = " | ".join(f"( {_tool_rule(rules, tool, i)} )" for i, tool in enumerate(tools))
        rules.add("call", f'{literal(CALL_OPEN)} ws "{{" ws "\\"name\\"" ws ":" ws ( {names} ) ws '
                          f"{literal(CALL_CLOSE)}")
    rules.add("answer", _without(rules, "answer-text", CALL_OPEN))
    return rules.text() + "\n" + _COMMON + "\n"
