"""Text that may come from the model or a command, made safe to draw in the terminal."""

from __future__ import annotations

from rich.padding import Padding
from rich.text import Text

from tether.safety.visible import visible_pieces


def shown(text: str, style: str = "") -> Text:
    """Text that may come from the model, for the terminal: every control or invisible
    character drawn as an escape, in reverse video (see visible.py)."""
    out = Text(style=style)
    for piece, hidden in visible_pieces(text):
        out.append(piece, style="escape" if hidden else None)
    return out


def indented(text: Text, columns: int) -> Padding:
    """`text` indented by `columns`, its wrapped lines too (not back at the left edge)."""
    return Padding(text, (0, 0, 0, columns))


def hanging(mark: Text, body: Text) -> Padding:
    """`mark` then `body`, the lines `body` wraps onto starting under its first character."""
    from rich.table import Table

    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row(mark, body)
    return Padding(grid, 0)
