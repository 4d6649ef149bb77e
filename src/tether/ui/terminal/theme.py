"""Named styles for the terminal UI, so colours are chosen in one place, and the palettes
the `theme` setting picks: dark or light terminal colours, or none.

`NO_COLOR` (any non-empty value, no-color.org) means no colour whatever the setting says.
`auto` reads the terminal's own report where it gives one (`COLORFGBG`, "fg;bg": a
background of 7 or 9-15 is light) and takes dark otherwise, the more common default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.theme import Theme

CODE_THEME = "monokai"
"""Pygments theme for fenced code blocks in replies (on a dark terminal)."""

THEME = Theme(
    {
        "tool": "cyan",
        "tool.error": "bold red",
        "notice": "yellow",
        "thinking": "dim italic",
        "diff.add": "green",
        "diff.del": "red",
        "status": "dim",
        "escape": "reverse",
        "statusbar": "reverse",
    }
)
LIGHT_THEME = Theme(
    {
        "tool": "blue",
        "tool.error": "bold red3",
        "notice": "dark_orange3",
        "thinking": "dim italic",
        "diff.add": "green4",
        "diff.del": "red3",
        "status": "grey39",
        "escape": "reverse",
        "statusbar": "reverse",
        "markdown.code": "bold blue",  # rich's default, cyan on black, is a dark terminal's
        "markdown.link": "blue",
        "markdown.block_quote": "magenta",
    }
)
LIGHT_BACKGROUNDS = frozenset({7, *range(9, 16)})
"""ANSI colour numbers of a light background (white, bright white and the bright colours)."""


@dataclass(frozen=True)
class Palette:
    name: str
    styles: Theme
    code_theme: str
    colours: bool = True


PALETTES = {
    "dark": Palette("dark", THEME, CODE_THEME),
    "light": Palette("light", LIGHT_THEME, "friendly"),
    "none": Palette("none", THEME, CODE_THEME, colours=False),
}


def chosen_palette(setting: str, env: Mapping[str, str]) -> Palette:
    """The palette for the `theme` setting in this environment."""
    if env.get("NO_COLOR"):
        return PALETTES["none"]
    if setting in PALETTES:
        return PALETTES[setting]
    return PALETTES["light" if light_background(env.get("COLORFGBG", "")) else "dark"]


def light_background(colorfgbg: str) -> bool:
    """Whether a `COLORFGBG` value ("15;0", "0;default;15") names a light background."""
    background = colorfgbg.rsplit(";", 1)[-1]
    return background.isdigit() and int(background) in LIGHT_BACKGROUNDS
