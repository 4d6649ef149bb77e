"""A small GBNF recognizer for the tests: parses the subset of llama.cpp's grammar format
that tether writes (literals, character classes, rule references, groups, `|`, `?`, `*`,
`+`, `{m,n}`) and says whether a text is in the language. A rule the grammar references
but does not define, or a line that does not parse, raises ValueError as llama.cpp would
refuse it."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "]": "]", "[": "[", "-": "-",
            "^": "^", "/": "/"}


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Cls:
    negated: bool
    ranges: tuple[tuple[str, str], ...]

    def has(self, ch: str) -> bool:
        inside = any(low <= ch <= high for low, high in self.ranges)
        return inside != self.negated


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Rep:
    node: object
    low: int
    high: int | None


@dataclass(frozen=True)
class Seq:
    items: tuple[object, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Seq, ...]


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in " \t\n":
            self.at += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.at] if self.at < len(self.text) else ""

    def char(self, closing: str) -> str:
        ch = self.text[self.at]
        self.at += 1
        if ch != "\\":
            return ch
        kind = self.text[self.at]
        self.at += 1
        if kind == "x":
            code = self.text[self.at:self.at + 2]
            self.at += 2
            return chr(int(code, 16))
        if kind == "u":
            code = self.text[self.at:self.at + 4]
            self.at += 4
            return chr(int(code, 16))
        if kind not in _ESCAPES:
            raise ValueError(f"unknown escape \\{kind}")
        return _ESCAPES[kind]

    def alternatives(self) -> Alt:
        options = [self.sequence()]
        while self.peek() == "|":
            self.at += 1
            options.append(self.sequence())
        return Alt(tuple(options))

    def sequence(self) -> Seq:
        items: list[object] = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.repeated(self.atom()))
        return Seq(tuple(items))

    def atom(self) -> object:
        ch = self.peek()
        if ch == '"':
            self.at += 1
            text = ""
            while self.text[self.at] != '"':
                text += self.char('"')
            self.at += 1
            return Lit(text)
        if ch == "[":
            self.at += 1
            negated = self.text[self.at] == "^"
            self.at += negated
            ranges = []
            while self.text[self.at] != "]":
                low = self.char("]")
                high = low
                if self.text[self.at] == "-" and self.text[self.at + 1] != "]":
                    self.at += 1
                    high = self.char("]")
                ranges.append((low, high))
            self.at += 1
            return Cls(negated, tuple(ranges))
        if ch == "(":
            self.at += 1
            inner = self.alternatives()
            if self.peek() != ")":
                raise ValueError("unclosed group")
            self.at += 1
            return inner
        m = re.match(r"[a-zA-Z0-9-]+", self.text[self.at:])
        if m is None:
            raise ValueError(f"unexpected {self.text[self.at:self.at + 10]!r}")
        self.at += m.end()
        return Ref(m.group())

    def repeated(self, node: object) -> object:
        if self.at >= len(self.text):
            return node
        ch = self.text[self.at]
        if ch in "?*+":
            self.at += 1
            return Rep(node, 1 if ch == "+" else 0, 1 if ch == "?" else None)
        m = re.match(r"\{(\d+)(?:,(\d*))?\}", self.text[self.at:])
        if m is None:
            return node
        self.at += m.end()
        high = m.group(2)
        return Rep(node, int(m.group(1)), int(m.group(1)) if high is None else int(high) if high else None)


def parse(grammar: str) -> dict[str, Alt]:
    rules: dict[str, Alt] = {}
    for line in grammar.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, body = line.partition("::=")
        if not sep or not re.fullmatch(r"[a-zA-Z0-9-]+", name.strip()):
            raise ValueError(f"not a rule: {line!r}")
        reader = _Reader(body)
        rules[name.strip()] = reader.alternatives()
        if reader.peek():
            raise ValueError(f"unparsed rest in {line!r}")
    for name in _references(rules):
        if name not in rules:
            raise ValueError(f"undefined rule {name}")
    if "root" not in rules:
        raise ValueError("no root rule")
    return rules


def _references(rules: dict[str, Alt]) -> set[str]:
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, Ref):
            found.add(node.name)
        elif isinstance(node, Rep):
            walk(node.node)
        elif isinstance(node, Seq):
            for item in node.items:
                walk(item)
        elif isinstance(node, Alt):
            for option in node.options:
                walk(option)

    for alt in rules.values():
        walk(alt)
    return found


def accepts(grammar: str, text: str) -> bool:
    """Whether `text`, whole, is in the grammar's language."""
    rules = parse(grammar)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20 * len(text) + 1000))

    @cache
    def ends_of_rule(name: str, at: int) -> frozenset[int]:
        return frozenset(ends(rules[name], at))

    def ends(node: object, at: int) -> set[int]:
        if isinstance(node, Lit):
            return {at + len(node.text)} if text.startswith(node.text, at) else set()
        if isinstance(node, Cls):
            return {at + 1} if at < len(text) and node.has(text[at]) else set()
        if isinstance(node, Ref):
            return set(ends_of_rule(node.name, at))
        if isinstance(node, Alt):
            return set().union(*(ends(option, at) for option in node.options))
        if isinstance(node, Seq):
            current = {at}
            for item in node.items:
                current = set().union(*(ends(item, p) for p in current)) if current else set()
            return current
        assert isinstance(node, Rep)
        reached, frontier, count = set(), {at}, 0
        if node.low == 0:
            reached.add(at)
        while frontier and (node.high is None or count < node.high):
            frontier = set().union(*(ends(node.node, p) for p in frontier)) - (reached if count >= node.low else set())
            count += 1
            if count >= node.low:
                reached |= frontier
        return reached

    return len(text) in ends_of_rule("root", 0)
