"""A write's or an edit's result says when a data file (JSON, TOML, YAML, INI) stopped parsing.

A small model editing a setting drops a comma, a quote or an indent and answers that the
setting is changed; the program that reads the file fails later, somewhere else. The check
runs on the text the call left, and only when the text before it parsed (or the file is new):
a file that was never strict JSON (comments in a tsconfig.json) gets no warning it did not
earn. YAML is only composed (its syntax read into nodes, no object built), so an application's
own tags (`!Ref`, `!vault`) are valid and nothing of the file runs. A template (`{{ ... }}`,
`{% ... %}`: a Helm chart, a cookiecutter) is read by its template engine first, and a .cfg
or .ini file that does not begin with a `[section]` is some program's own format (haproxy.cfg):
neither is blamed for not parsing.
"""

from __future__ import annotations

import configparser
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

DATA_CHECK_CHARS = 1_000_000
"""Data files up to this size are parsed after a change."""
YAML_CHECK_CHARS = 200_000
"""YAML up to this size is composed when PyYAML has no C parser (pure Python takes seconds
for a megabyte, and the result waits for it)."""
_TEMPLATE = re.compile(r"(?<!\$)\{\{|\{%")
"""A template engine's markers; a GitHub Actions `${{ ... }}` is inside YAML's own scalars."""
_SECTION_FIRST = re.compile(r"\A(?:[ \t]*(?:[#;].*)?\r?\n)*[ \t]*\[[^\]\n]+\]", re.M)
"""An INI file's first line that is not blank or a comment is a `[section]` header."""

Parse = Callable[[str], str | None]
"""A parser's verdict: None when the text parses, else what is wrong (one line)."""


def _json_error(text: str) -> str | None:
    try:
        json.loads(text, parse_int=str)  # digits beyond Python's int limit are valid JSON
    except json.JSONDecodeError as err:
        return f"{err.msg} (line {err.lineno}, column {err.colno})"
    return None


def _toml_error(text: str) -> str | None:
    try:
        tomllib.loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError is a ValueError
        return str(err)
    return None


def _yaml_error(text: str) -> str | None:
    import yaml  # type: ignore[import-untyped]  # imported when a YAML file changed: not at start-up

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None and len(text) > YAML_CHECK_CHARS:
        return None
    try:
        for _ in yaml.compose_all(text, Loader=loader or yaml.SafeLoader):
            pass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None)
        if problem is None:  # a reader error (a NUL byte): its text says which and where
            return " ".join(str(err).split())
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else str(problem)
    return None


def _ini_error(text: str) -> str | None:
    # A key with no value is an option set (`skip-name-resolve` in my.ini)
    parser = configparser.ConfigParser(interpolation=None, strict=True, allow_no_value=True)
    try:
        parser.read_string(text)
    except configparser.Error as err:
        return " ".join(str(err).split())
    return None


PARSERS: dict[str, tuple[str, Parse]] = {
    ".json": ("JSON", _json_error),
    ".toml": ("TOML", _toml_error),
    ".yaml": ("YAML", _yaml_error),
    ".yml": ("YAML", _yaml_error),
    ".ini": ("INI", _ini_error),
    ".cfg": ("INI", _ini_error),
}
"""Suffix -> (the format's name, its parser)."""


def data_syntax_note(path: Path, text: str, shown: str, before: str | None) -> str:
    """A warning line for a change's result when `text`, now the content of `path`, no longer
    parses as its format ("" otherwise). `before`: the file's text before the change (None: a
    new file); a file whose old text did not parse either gets no warning."""
    known = PARSERS.get(path.suffix.lower())
    if known is None or len(text) > DATA_CHECK_CHARS:
        return ""
    name, parse = known
    text, before = text.removeprefix("\ufeff"), before and before.removeprefix("\ufeff")
    error = _parsed(parse, text)
    if error is None or not _of_the_format(name, text, before):
        return ""
    if before is not None and _parsed(parse, before) is not None:
        return ""
    return (f"\nWarning: {shown} is not valid {name} now: {error}. A program that reads it will "
            "fail; fix it with edit_file.")


def _of_the_format(name: str, text: str, before: str | None) -> bool:
    """The file is meant to be read as its format: no template markers, and for INI a
    `[section]` first (in the old text, or the new one for a file that was new or empty)."""
    if _TEMPLATE.search(text):
        return False
    return name != "INI" or _SECTION_FIRST.match(before or text) is not None


def _parsed(parse: Parse, text: str) -> str | None:
    """The parser's verdict; nesting deeper than Python's recursion allows is an error too."""
    try:
        return parse(text)
    except RecursionError:
        return "nested too deeply to read"
