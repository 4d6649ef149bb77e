"""What the harness adds to a call's result for a small model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .failing_test import failing_test_note
from .guessing import guess_range_note
from .messages import Evidence
from .renames import rename_progress_note
from .script_args import unread_arguments_note
from .toolspec import ToolContext
from .usage_fix import usage_fix_note

if TYPE_CHECKING:
    from .turn_watch import TurnWatch


def result_notes(watch: TurnWatch, earlier: list[Evidence], last: Evidence, ctx: ToolContext) -> str:
    """What the harness adds to the result of the turn's `last` call (after the `earlier` ones)
    for a small model: the code a failing test points at, the options a program refused, the
    range a guessing game left, the places a rename has left, the arguments a script ignores."""
    return (
        failing_test_note(watch, last, ctx)
        + usage_fix_note(watch, last)
        + guess_range_note(earlier, last)
        + rename_progress_note(watch, last)
        + unread_arguments_note(watch, last)
    )


def result_note(watch: TurnWatch, key: str, earlier: list[Evidence], last: Evidence,
                ctx: ToolContext, changes_things: bool) -> str:
    """The repeat note and the result notes for the turn's `last` call, after the watch has
    seen the call (a note may offer a call: it must come after)."""
    note = watch.repeat_note(key, last)
    watch.saw(key, last, changes_things)
    watch.last_note = result_notes(watch, earlier, last, ctx)
    return note + watch.last_note
