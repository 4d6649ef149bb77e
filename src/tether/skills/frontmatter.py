"""A SKILL.md's YAML frontmatter, checked against the Agent Skills format.

PyYAML (already a dependency) reads the YAML: quoting, folded descriptions and the nested
`metadata` map are its job, and its marks give the line of a mistake. safe_load builds
plain data only, so a hostile file cannot construct objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
KNOWN_KEYS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}


class FrontmatterError(ValueError):
    """What is wrong and on which line of the file (1-based)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Frontmatter:
    name: str
    description: str
    license: str = ""
    compatibility: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()


def split_frontmatter(text: str) -> tuple[str, str, int]:
    """(the YAML between the --- fences, the body after them, the body's first line)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontmatterError("the file does not start with a --- frontmatter fence", 1)
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1:]), index + 2
    raise FrontmatterError("the frontmatter has no closing --- fence", len(lines))


def parse_frontmatter(yaml_text: str, expected_name: str) -> Frontmatter:
    """The checked fields; FrontmatterError with the line (counted from the file's top)."""
    import yaml  # type: ignore[import-untyped]  # imported when a skill is read: not at start-up

    try:
        data = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise FrontmatterError(f"invalid YAML: {problem}", mark.line + 2 if mark else 1) from None
    if not isinstance(data, dict):
        raise FrontmatterError("the frontmatter is not a map of keys to values", 2)
    name = _text_field(data, "name", yaml_text, required=True)
    if len(name) > MAX_NAME or not NAME_PATTERN.fullmatch(name):
        raise FrontmatterError(
            f"name {name!r} must be at most {MAX_NAME} characters of a-z, 0-9 and single "
            "hyphens", line_of(yaml_text, "name"))
    if name != expected_name:
        raise FrontmatterError(f"name {name!r} does not match its file or folder "
                               f"{expected_name!r}", line_of(yaml_text, "name"))
    description = _text_field(data, "description", yaml_text, required=True)
    if len(description) > MAX_DESCRIPTION:
        raise FrontmatterError(f"description is longer than {MAX_DESCRIPTION} characters",
                               line_of(yaml_text, "description"))
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise FrontmatterError("metadata must be a map", line_of(yaml_text, "metadata"))
    return Frontmatter(
        name, description,
        license=_text_field(data, "license", yaml_text),
        compatibility=_text_field(data, "compatibility", yaml_text),
        metadata={str(k): str(v) for k, v in metadata.items()},
        allowed_tools=_tool_list(data.get("allowed-tools"), yaml_text),
    )


def _text_field(data: dict[str, Any], key: str, yaml_text: str, required: bool = False) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise FrontmatterError(f"the required field {key!r} is missing", 2)
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise FrontmatterError(f"{key} must be text", line_of(yaml_text, key))
    text = str(value).strip()
    if required and not text:
        raise FrontmatterError(f"{key} is empty", line_of(yaml_text, key))
    return text


def _tool_list(value: Any, yaml_text: str) -> tuple[str, ...]:
    """allowed-tools: a space-separated string (the spec's form) or a YAML list."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise FrontmatterError("allowed-tools must be a list of tool names",
                           line_of(yaml_text, "allowed-tools"))


def line_of(yaml_text: str, key: str) -> int:
    """The file line where `key:` starts (the fence is line 1)."""
    for number, line in enumerate(yaml_text.splitlines(), start=2):
        if line.startswith(key + ":"):
            return number
    return 2
