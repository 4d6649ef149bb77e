"""The command without the options a program said it does not take.

A small model runs a script with options it made up (`--count 5 --file notes.txt`), reads
argparse's "error: unrecognized arguments: --count --file notes.txt", and sends the same
made-up options again until the step cap (run_textstats). After such a failure the result
gets the command with those options (and a value after one that is no file) taken out, as a
call to send. The model still sends it; a file named on the command line is always kept.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from .messages import Evidence

if TYPE_CHECKING:
    from .nudges import TurnWatch

UNKNOWN_OPTIONS = (
    "\n\nThe program does not take {options} (its usage line is above). The same command without "
    "them, to send as it is or to fix further, is:\n{call}"
)
_ARGPARSE = re.compile(r"error: unrecognized arguments: (.+)$", re.M)
_USAGE = re.compile(r"^usage: (.+)$", re.M)
_CLICK = re.compile(r"Error: No such option: (--?[\w-]+)", re.M)


def usage_fix_note(watch: TurnWatch, evidence: Evidence) -> str:
    """The note for a command that failed on options its program does not take; "" when it
    did not, or nothing would be left to change."""
    command = evidence.call.arguments.get("command")
    if evidence.call.name != "run_cmd" or not isinstance(command, str) or watch.show_call is None:
        return ""
    if "run_cmd" not in watch.tools or evidence.command is None or not evidence.command.failed:
        return ""
    unknown = _unknown_options(evidence.result)
    if not unknown:
        return ""
    fixed = without_options(command, unknown, watch.root, positionals(evidence.result))
    if fixed is None or fixed in watch.commands or not watch.once(f"usage:{fixed}"):
        return ""
    options = ", ".join(token for token in unknown if token.startswith("-"))
    return UNKNOWN_OPTIONS.format(options=options, call=watch.offer("run_cmd", {"command": fixed}))


def _unknown_options(output: str) -> list[str]:
    found = _ARGPARSE.search(output)
    if found is not None:
        return found.group(1).split()
    return [m.group(1) for m in _CLICK.finditer(output)]


def positionals(output: str) -> set[str]:
    """The positional arguments argparse's usage line names (`usage: greeter [-h] [--times
    TIMES] name` -> {"name"}), lower-cased."""
    found = _USAGE.search(output)
    if found is None:
        return set()
    bare = re.sub(r"\[[^\[\]]*\]", " ", re.sub(r"\[[^\[\]]*\]", " ", found.group(1)))  # nested once
    return {word.lower() for word in bare.split()[1:] if re.fullmatch(r"[A-Za-z_][\w-]*", word)}


def without_options(command: str, unknown: list[str], root: Path | None,
                    positional: set[str] | frozenset[str] = frozenset()) -> str | None:
    """`command` less each unknown option (`--count`, `--count=5`) and the value after one
    when that value is no existing file; an option named like one of the program's
    `positional` arguments (`--name Ann` where the usage says `name`) keeps its value, as that
    argument. None when the command cannot be split, names none of them, or would be left
    unchanged."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    drop = {token.split("=", 1)[0] for token in unknown if token.startswith("-")}
    kept: list[str] = []
    skip_value = keep_value = False
    for token in tokens:
        if skip_value or keep_value:
            skip_value, was_kept, keep_value = False, keep_value, False
            if not token.startswith("-") and not was_kept and not _is_file(token, root):
                continue
        name, _, value = token.partition("=")
        if name in drop:
            as_positional = name.lstrip("-").replace("-", "_").lower() in positional
            if as_positional and value:
                kept.append(value)
            keep_value = as_positional and "=" not in token
            skip_value = not as_positional and "=" not in token
            continue
        kept.append(token)
    if kept == tokens:
        return None
    return shlex.join(kept)


def _is_file(token: str, root: Path | None) -> bool:
    return root is not None and (root / token).exists()
