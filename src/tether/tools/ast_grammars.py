"""The tree-sitter grammars of the `ast` extra: which language a file is, its parser and
its queries, each made once per language and kept.

The extra is optional. tree-sitter and its grammar wheels are imported only here, only
when a tool first needs them; without them `Grammars.available` is False and the tools
fall back to the standard `ast` module for Python (see `python_outline`) and say how to
install the extra for the rest. Each grammar is its own small wheel that carries its
compiled parser and its `tags.scm` query, so nothing is fetched at run time.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MATCH_LIMIT = 20_000
EXTRA_HINT = "install tether's ast extra for it: pip install 'tether[ast]'"

LANGUAGE_OF_SUFFIX = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
}


@dataclass(frozen=True)
class _Grammar:
    module: str
    """The grammar wheel's module."""
    function: str = "language"
    """The module's function that returns the language pointer."""
    tags_from: tuple[str, ...] = ()
    """Modules whose TAGS_QUERY make this language's tags (TypeScript adds its own to
    JavaScript's, as the grammar's documentation says to); empty: the module's own."""


GRAMMARS = {
    "python": _Grammar("tree_sitter_python"),
    "javascript": _Grammar("tree_sitter_javascript"),
    "typescript": _Grammar("tree_sitter_typescript", "language_typescript",
                           ("tree_sitter_javascript", "tree_sitter_typescript")),
    "tsx": _Grammar("tree_sitter_typescript", "language_tsx",
                    ("tree_sitter_javascript", "tree_sitter_typescript")),
    "go": _Grammar("tree_sitter_go"),
    "rust": _Grammar("tree_sitter_rust"),
    "java": _Grammar("tree_sitter_java"),
    "c": _Grammar("tree_sitter_c"),
    "cpp": _Grammar("tree_sitter_cpp"),
}

EXTRA_REFERENCES = {
    # Their tags.scm name no references, so nothing would point at a definition and the
    # ranking would see no links: calls and type names stand in.
    "c": "(call_expression function: (identifier) @name) @reference.call\n"
         "(type_identifier) @name @reference.type",
    "cpp": "(call_expression function: (identifier) @name) @reference.call\n"
           "(call_expression function: (field_expression field: (field_identifier) @name))"
           " @reference.call\n(type_identifier) @name @reference.type",
    # Python's names calls only; a class is as often named in an annotation.
    "python": "(type (identifier) @name) @reference.type",
}


def language_of(path: str | Path) -> str | None:
    """The language a file's suffix names, or None for one without a grammar."""
    return LANGUAGE_OF_SUFFIX.get(Path(path).suffix.lower())


class GrammarMissing(Exception):
    """A grammar (or tree-sitter itself) is not installed; the message says what to do."""


@dataclass
class Grammars:
    """The grammars of this process: tree-sitter imported on first use, each language and
    compiled tags query made once. Two handler threads may build the same entry at once;
    one of the two equal results is kept, so no lock is needed."""

    _tree_sitter: Any = field(default=None, init=False, repr=False)
    _missing: str | None = field(default=None, init=False, repr=False)
    _languages: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _tags: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def available(self) -> bool:
        """Whether tree-sitter itself imports (a grammar may still be missing)."""
        return self._module() is not None

    def _module(self) -> Any:
        if self._tree_sitter is None and self._missing is None:
            try:
                self._tree_sitter = importlib.import_module("tree_sitter")
            except ImportError as err:
                self._missing = str(err)
        return self._tree_sitter

    def language(self, name: str) -> Any:
        """The tree-sitter Language; GrammarMissing when it cannot be loaded."""
        if name in self._languages:
            return self._languages[name]
        module = self._module()
        if module is None:
            raise GrammarMissing(f"tree-sitter is not installed; {EXTRA_HINT}")
        grammar = GRAMMARS[name]
        try:
            pointer = getattr(importlib.import_module(grammar.module), grammar.function)()
        except (ImportError, AttributeError) as err:
            raise GrammarMissing(
                f"the {name} grammar ({grammar.module.replace('_', '-')}) is not installed "
                f"({err}); {EXTRA_HINT}"
            ) from err
        self._languages[name] = module.Language(pointer)
        return self._languages[name]

    def parse(self, name: str, source: bytes) -> Any:
        """The syntax tree of `source` (a Parser is cheap; a fresh one keeps threads apart)."""
        language = self.language(name)  # first: it says when tree-sitter is missing
        return self._module().Parser(language).parse(source)

    def query(self, name: str, text: str) -> Any:
        """A compiled query; raises ValueError with tree-sitter's message for a bad one."""
        language = self.language(name)
        try:
            return self._module().Query(language, text)
        except self._module().QueryError as err:
            raise ValueError(str(err)) from err

    def tags_query(self, name: str) -> Any:
        """The language's tags query (definitions and references), compiled once."""
        if name not in self._tags:
            grammar = GRAMMARS[name]
            modules = grammar.tags_from or (grammar.module,)
            parts = [importlib.import_module(module).TAGS_QUERY for module in modules]
            parts.append(EXTRA_REFERENCES.get(name, ""))
            self._tags[name] = self.query(name, "\n".join(parts))
        return self._tags[name]

    def matches(self, query: Any, node: Any) -> list[tuple[int, dict[str, list[Any]]]]:
        """Every match of `query` under `node`: (pattern index, {capture: [nodes]})."""
        return list(self._cursor(query).matches(node))

    def captures(self, query: Any, node: Any) -> dict[str, list[Any]]:
        """Every capture of `query` under `node`, by capture name."""
        return dict(self._cursor(query).captures(node))

    def _cursor(self, query: Any) -> Any:
        # The match limit bounds the memory a pathological query can take.
        return self._module().QueryCursor(query, match_limit=MATCH_LIMIT)
