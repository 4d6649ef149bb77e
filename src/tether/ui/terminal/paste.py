"""Large pastes: one placeholder line at the prompt (and so in the scrollback), the whole
text for the model.

A bracketed paste (the terminal marks pasted text) longer than a few lines becomes
`[pasted text #N: L lines, C characters]` in the input line; `Pastes.expand` puts the text
back when the line is sent. Typed text that merely looks like a placeholder stays as typed
unless it names a paste of this session.
"""

from __future__ import annotations

import re

PASTE_MAX_LINES = 5
"""A paste of more lines than this is shown as a placeholder."""
PASTE_MAX_CHARS = 800
"""So is one of more characters than this (a long single line)."""
_PLACEHOLDER = re.compile(r"\[pasted text #(\d+): [\d,]+ lines?, [\d,]+ characters?\]")


class Pastes:
    """This session's large pastes, by number."""

    def __init__(self) -> None:
        self._texts: dict[int, str] = {}

    def insertion(self, data: str) -> str:
        """What a paste of `data` puts into the input line: the text itself when it is
        short, else a placeholder for it."""
        text = data.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        if lines <= PASTE_MAX_LINES and len(text) <= PASTE_MAX_CHARS:
            return text
        number = len(self._texts) + 1
        self._texts[number] = text
        return (f"[pasted text #{number}: {lines:,} line{'s' if lines != 1 else ''}, "
                f"{len(text):,} character{'s' if len(text) != 1 else ''}]")

    def expand(self, line: str) -> str:
        """`line` with each placeholder of this session replaced by the text it stands for."""
        if not self._texts:
            return line

        def text_of(match: re.Match[str]) -> str:
            return self._texts.get(int(match.group(1)), match.group(0))

        return _PLACEHOLDER.sub(text_of, line)
