"""The machinery behind `Settings`: a frozen dataclass whose fields are declared with
`setting(default, description, bounds)` and checked and converted by their annotations.

Plain code instead of a validation library: the settings are read before the chat's first
prompt is drawn, and importing pydantic and building a model of fifty fields took about a
third of the time to that prompt. The tool table's models, built later in a thread, still
use pydantic.

Values come from TOML (typed) and environment variables (text), so a value is converted
the way a person means it: "20" is 20, "yes" is True, a list is a tuple. Anything else is
a `ValueError` whose message says what was expected, in a few words.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()
"""Every field's dataclass default: a value left out is told from one given."""

TRUE_WORDS = frozenset({"true", "yes", "on", "1", "t", "y"})
FALSE_WORDS = frozenset({"false", "no", "off", "0", "f", "n"})


def setting(
    default: Any = UNSET, description: str = "", *, factory: Callable[[], Any] | None = None,
    ge: float | None = None, gt: float | None = None, le: float | None = None,
    check: Callable[[Any], None] | None = None,
) -> Any:
    """One field of a settings class: its default (or `factory` for a mutable one), its
    one-line description, its bounds and a `check` that raises ValueError."""
    meta = {"default": default, "factory": factory, "description": description,
            "bounds": (ge, gt, le), "check": check}
    return dataclasses.field(default=UNSET, metadata=meta)


def default_of(field: dataclasses.Field) -> Any:
    factory = field.metadata["factory"]
    return factory() if factory is not None else field.metadata["default"]


def description_of(field: dataclasses.Field) -> str:
    return str(field.metadata.get("description", ""))


def settled(instance: Any, hints: Mapping[str, Any]) -> frozenset[str]:
    """Give every field of a frozen settings dataclass its default or its converted value;
    the names of the fields given. ValueError("name: why") for the first bad value."""
    given = []
    for field in dataclasses.fields(instance):
        if "description" not in field.metadata:
            continue
        value = getattr(instance, field.name)
        if value is UNSET:
            value = default_of(field)
        else:
            given.append(field.name)
            try:
                value = checked_value(value, hints[field.name], field.metadata)
            except ValueError as exc:
                raise ValueError(f"{field.name}: {exc}") from None
        object.__setattr__(instance, field.name, value)
    return frozenset(given)


def checked_value(value: Any, hint: Any, meta: Mapping[str, Any]) -> Any:
    value = converted(value, hint)
    if value is not None:
        within_bounds(value, *meta["bounds"])
    if meta["check"] is not None:
        meta["check"](value)
    return value


def converted(value: Any, hint: Any) -> Any:
    """`value` as the annotation `hint` says; ValueError saying what was expected."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin is Literal:
        if value in args:
            return value
        raise ValueError("expected one of " + ", ".join(map(str, args)))
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [arg for arg in args if arg is not type(None)]
        return converted(value, inner)
    if origin is tuple:
        return _as_tuple(value, args[0])
    if origin is dict:
        return _as_dict(value, args[1])
    return SCALARS[hint](value)


def within_bounds(value: Any, ge: float | None, gt: float | None, le: float | None) -> None:
    if ge is not None and value < ge:
        raise ValueError(f"must be at least {ge}")
    if gt is not None and value <= gt:
        raise ValueError(f"must be more than {gt}")
    if le is not None and value > le:
        raise ValueError(f"must be at most {le}")


def _as_tuple(value: Any, item: Any) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValueError("expected a list")
    return tuple(converted(entry, item) for entry in value)


def _as_dict(value: Any, item: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise ValueError("expected a table of names")
    return {key: converted(entry, item) for key, entry in value.items()}


def _as_text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value in (0.0, 1.0):
        value = int(value)
    word = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError("expected true or false")


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("expected a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
        try:
            number = float(value)  # "12.0" means 12
        except ValueError:
            number = math.nan
        if number.is_integer():
            return int(number)
    raise ValueError("expected a whole number")


def _as_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError("expected a number") from None
    if not math.isfinite(number):  # an endless timeout cannot be given to a socket either
        raise ValueError("expected a finite number")
    return number


SCALARS: dict[Any, Callable[[Any], Any]] = {str: _as_text, bool: _as_bool, int: _as_int,
                                            float: _as_float}
