"""The usage of a program that refused options it does not take.

A small model runs a script with options it made up (`--count 5 --file notes.txt`), reads
argparse's "error: unrecognized arguments: --count --file notes.txt", and sends the same
made-up options again until the step cap. After such a failure the result names the options
the program refused and repeats its usage, so the next call is built from what the program
takes. No command is written out for the model: an option it wrote may be one the task
needs (`--dry-run`, `--confirm-each`), and a command without it could do something else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .messages import Evidence

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

UNKNOWN_OPTIONS = (
    "\n\nThe program does not take {options}. Nothing was run in its place. Its usage:\n{usage}\n"
    "Build the next command from the options it lists (its --help says what each does); if "
    "the task needs what {options} meant, find how this program does it, or say that it cannot."
)
NO_USAGE = "(it printed none: run it with --help to see the options it takes)"
_ARGPARSE = re.compile(r"error: unrecognized arguments: (.+)$", re.M)
_CLICK = re.compile(r"Error: No such option: (--?[\w-]+)", re.M)
_USAGE = re.compile(r"^usage: .+$(?:\n[ \t]+\S.*$)*", re.M | re.I)
"""A usage line with its indented continuation lines (argparse wraps a long one)."""
MAX_USAGE_CHARS = 1_500


def usage_fix_note(watch: TurnWatch, evidence: Evidence) -> str:
    """The note for a command that failed on options its program does not take (once per
    command); "" when it did not."""
    command = evidence.call.arguments.get("command")
    if evidence.call.name != "run_cmd" or not isinstance(command, str):
        return ""
    if evidence.command is None or not evidence.command.failed:
        return ""
    options = [token for token in unknown_options(evidence.result) if token.startswith("-")]
    if not options or not watch.once(f"usage:{command.strip()}"):
        return ""
    return UNKNOWN_OPTIONS.format(options=", ".join(options), usage=usage_text(evidence.result))


def unknown_options(output: str) -> list[str]:
    """The arguments a program's usage error names as unknown (argparse, click)."""
    found = _ARGPARSE.search(output)
    if found is not None:
        return found.group(1).split()
    return [m.group(1) for m in _CLICK.finditer(output)]


def usage_text(output: str) -> str:
    """The program's usage as it printed it (its last usage block), or NO_USAGE."""
    blocks = _USAGE.findall(output)
    return blocks[-1][:MAX_USAGE_CHARS] if blocks else NO_USAGE
