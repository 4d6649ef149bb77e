"""Limits that a tool's parameters model, its handler and its table entry read (tools.params
holds the models; this module imports nothing, so a table can use them at start)."""

DEFAULT_COMMAND_TIMEOUT = 120
MAX_COMMAND_TIMEOUT = 3500
DEFAULT_MAP_BUDGET = 1_024
MAX_MAP_BUDGET = 8_192
READ_CHAR_CAP = 30_000
"""Characters of one read_file page (its result cap leaves room for the notes after it)."""

PARAMS = "tether.tools.params"
"""Where the built-in tools' parameters models live (`Tool.params` names them by it)."""


def params_named(name: str) -> str:
    """The location of the built-in parameters model `name`, as `Tool.params` takes it."""
    return f"{PARAMS}:{name}"
