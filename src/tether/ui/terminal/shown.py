"""Text that may come from the model or a command, made safe to draw in the terminal."""

from __future__ import annotations

from rich.text import Text

from tether.safety.visible import visible_pieces


def shown(text: str, style: str = "") -> Text:
    """Text that may come from the model, for the terminal: every control or invisible
    character drawn as an escape, in reverse video (see visible.py)."""
    out = Text(style=style)
    for piece, hidden in visible_pieces(text):
        out.append(piece, style="escape" if hidden else None)
    return out
