"""A write's or an edit's result says when a data file (JSON, TOML, YAML, INI) stopped parsing.

A small model editing a setting drops a comma, a quote or an indent and answers that the
setting is changed; the program that reads the file fails later, somewhere else. The check
runs on the text the call left, and only when the text before it parsed (or the file is new):
a file that was never strict JSON (comments in a tsconfig.json) gets no warning it did not
earn. YAML is only composed (its syntax read into nodes, no object built), so an application's
own tags (`!Ref`, `!vault`) are valid and nothing of the file runs.
"""

from __future__ import annotations

import configparser
import json
import sys
from collections.abc import Callable
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

DATA_CHECK_CHARS = 1_000_000
"""Data files up to this size are parsed after a change."""

Parse = Callable[[str], str | None]
"""A parser's verdict: None when the text parses, else what is wrong (one line)."""


def _json_error(text: str) -> str | None:
    try:
        json.loads(text)
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

    try:
        for _ in yaml.compose_all(text, Loader=yaml.SafeLoader):
            pass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or type(err).__name__
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else str(problem)
    return None


def _ini_error(text: str) -> str | None:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
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
    error = _parsed(parse, text)
    if error is None or (before is not None and _parsed(parse, before) is not None):
        return ""
    return (f"\nWarning: {shown} is not valid {name} now: {error}. A program that reads it will "
            "fail; fix it with edit_file.")


def _parsed(parse: Parse, text: str) -> str | None:
    """The parser's verdict; nesting deeper than Python's recursion allows is an error too."""
    try:
        return parse(text)
    except RecursionError:
        return "nested too deeply to read"
