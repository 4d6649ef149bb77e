"""Making the chat's own lines fit the terminal's width, cut or wrapped between words.

rich wraps what it prints at word boundaries, but a line drawn by prompt_toolkit (the status
line under the input, a question) is cut at the edge or broken mid-word; and a line printed
while the input line is on the screen lands on top of it unless prompt_toolkit erases the
input first and draws it again after (`print_above_input`).
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable, Sequence

from prompt_toolkit.application import Application, get_app_or_none, run_in_terminal
from prompt_toolkit.application.current import set_app

from tether.core.textclip import clip_words

SEPARATORS = ("  │  ", " │ ")
"""Between the parts of the status line: the wide one while everything fits."""


def fit_parts(parts: Sequence[str], width: int, droppable: Sequence[str] = ()) -> str:
    """`parts` joined on one line of at most `width` characters: the separator narrowed
    first, then the `droppable` parts left out (in that order), then the first part (a long
    model name) shortened so the rest stays whole, else the line cut at a word."""
    kept = list(parts)
    order = [part for part in droppable if part in kept]
    while True:
        for separator in SEPARATORS:
            line = separator.join(kept)
            if len(line) <= width:
                return line
        if not order:
            break
        kept.remove(order.pop(0))
    rest = "".join(SEPARATORS[-1] + part for part in kept[1:])
    room = width - len(rest)
    if kept and room >= width // 3:
        return clip_words(kept[0], room) + rest
    return clip_words(line, max(width, 1))


def word_wrapped(text: str, width: int) -> str:
    """`text` broken between words into lines of at most `width` characters (a word longer
    than a line is broken); its own line breaks and a trailing space (a prompt's) are kept."""
    width = max(width, 10)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(textwrap.wrap(paragraph, width, break_on_hyphens=False) or [""])
    wrapped = "\n".join(lines)
    return wrapped + " " if text.endswith(" ") and not wrapped.endswith(" ") else wrapped


def screen_width() -> int:
    """The width of the terminal that the running prompt_toolkit app draws on (else stdout's)."""
    app = get_app_or_none()
    if app is not None and app.is_running:
        return app.output.get_size().columns
    return shutil.get_terminal_size().columns


def print_above_input(show: Callable[[], None], *apps: Application | None) -> None:
    """Print with `show` while an input line or a question may be on the screen: above it,
    through prompt_toolkit (which erases it and draws it again below), when one of `apps` (or
    the current app) is running; directly otherwise, and when already printing above it."""
    for app in (get_app_or_none(), *apps):
        if app is None or not app.is_running:
            continue
        if getattr(app, "_running_in_terminal", False):  # inside run_in_terminal: erased already
            break
        with set_app(app):  # run_in_terminal works on the current app, whatever task calls
            run_in_terminal(show)
        return
    show()
