"""A GBNF grammar for constrained decoding of a text-protocol reply (llama.cpp's `grammar`,
vLLM's structured outputs, llama-cpp-python's LlamaGrammar).

A reply that follows it is either one well-formed call, written as `render_call_as_text`
writes one (`<tool_call>`, a JSON object naming a tool on the menu whose `arguments` hold
only that tool's parameters, in the schema's order, the required ones present, then the raw
blocks of its block parameters, `</tool_call>`), or a plain answer: text without the call
tags that does not open with a JSON object (`ANSWER_NEVER_HOLDS`, `ANSWER_NEVER_STARTS`), so
a reply that opens as a call takes the call's one well-formed shape. Generated from the tools' own schemas, so it says what the menu in the
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
from .tags import CALL_CLOSE, CALL_OPEN, FUNCTION_OPEN

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


ANSWER_NEVER_HOLDS = (CALL_OPEN, FUNCTION_OPEN)
"""The call tags: an answer holds none, so a tagged call is always a whole, well-formed one.
A JSON call object inside an answer's prose stays possible (the reply parser still reads
it): forbidding that too sent a small model into near misses (`"name "`) that nothing reads,
instead of into the call's form."""
ANSWER_NEVER_STARTS = "{ \t\n"
"""An answer does not open with a JSON object (a call's habit) or with blank space."""


_CLASS_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
"""Control characters as a literal or a character class writes them (one rule, one line)."""


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    for raw, written in _CLASS_ESCAPES.items():
        escaped = escaped.replace(raw, written)
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
        _without(rules, rule, (f"</{name}>",))
    return f"{rule}-0"


def _without(rules: _Rules, name: str, forbidden: tuple[str, ...], first_not: str = "") -> str:
    """Rules for any text that contains none of `forbidden` and does not start with one of
    the characters `first_not`: a matcher with one rule per state, the longest end of the text
    seen that begins a forbidden string ("" is `<name>-0`; `<name>-start` when `first_not`)."""
    prefixes = sorted({word[:k] for word in forbidden for k in range(len(word))}, key=len)
    number = {prefix: index for index, prefix in enumerate(prefixes)}
    alphabet = sorted({ch for word in forbidden for ch in word})

    def step(seen: str, ch: str) -> str | None:
        """The state after `ch`; None when the text now ends with a forbidden string."""
        text = seen + ch
        if any(text.endswith(word) for word in forbidden):
            return None
        return next(text[i:] for i in range(len(text) + 1) if text[i:] in number)

    def rule(seen: str, excluded: str = "") -> str:
        moves = {ch: step(seen, ch) for ch in alphabet if ch not in excluded}
        special = [ch for ch, nxt in moves.items() if nxt != ""]
        others = "[^" + "".join(_class_char(c) for c in sorted({*special, *excluded})) + "]"
        alternatives = ['""', f"{others} {name}-0"]
        alternatives += [f"{literal(ch)} {name}-{number[nxt]}" for ch, nxt in moves.items()
                         if ch in special and nxt is not None]
        return " | ".join(alternatives)

    for prefix in prefixes:
        rules.add(f"{name}-{number[prefix]}", rule(prefix))
    if not first_not:
        return f"{name}-0"
    return rules.add(f"{name}-start", rule("", first_not))


def _class_char(ch: str) -> str:
    """`ch` as written inside a character class."""
    if ch in _CLASS_ESCAPES:
        return _CLASS_ESCAPES[ch]
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
    rules.add("answer", _without(rules, "answer-text", ANSWER_NEVER_HOLDS, ANSWER_NEVER_STARTS))
    return rules.text() + "\n" + _COMMON + "\n"
