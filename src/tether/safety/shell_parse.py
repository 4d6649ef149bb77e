"""Split a shell command into the simple commands it runs, for permission rules.

The question asked here is narrow: "which simple commands would this text run,
and is there anything in it we cannot see through?". Commands run under `bash
-c`, so the answer is bash's: a structural scanner walks the text with bash's
quoting rules and comments (a `#` starting a word hides the rest of its line,
quotes included) and cuts it at the control operators (`;`, `&&`, `||`, `|`,
`|&`, `&`, newlines, parentheses); `lex_words` then splits each piece into the
argv bash would build. Anything not modelled exactly as bash does it makes the
split *opaque*: substitutions, `$VAR`, redirections, wildcards, `~`, brace
expansion, `eval`, `sh -c`, subshells, unbalanced quotes, builtins that run or
change commands later. Permission rules may still deny an opaque command, but
never allow it part by part. tests/test_shell_differential.py holds this to
bash itself.

Commands that run other commands (`sudo`, `env`, `xargs`, `timeout`,
`find -exec`, `bash -c '...'`, the inside of `$(...)`) contribute their inner
command as an extra part, so a deny rule for `rm *` also sees the `rm` in
`sudo rm -rf x` or `echo $(rm x)`; `later_command_forms` goes further for deny
rules, treating any later word as a possible command. When in doubt the scanner
splits more and marks more as opaque: a wrong "ask" costs a keystroke, a wrong
"allow" costs the user's files.

The work is spread over four modules below this one: `shell_words` (words and
quoting), `shell_scan` (the cut at control operators), `shell_commands` (what a
simple command runs) and `shell_wrappers` (how wrappers take their options).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from .shell_commands import _split_text
from .shell_scan import _Findings
from .shell_words import lex_words, normalize_whitespace


@dataclass
class ShellSplit:
    parts: list[str]
    """The simple commands, each whitespace-normalized. Commands run by other
    commands (`sudo rm x` -> `rm x`, `$(rm x)` -> `rm x`) are parts too."""
    opaque: bool
    """True when the command has constructs we refuse to reason about
    (substitutions, eval, sh -c, redirections, unbalanced quotes, subshells ...):
    never auto-allowed by part rules."""
    reasons: list[str]
    """What made it compound or opaque, for messages."""

    @property
    def compound(self) -> bool:
        return self.opaque or bool(self.reasons) or len(self.parts) != 1


def split_command(command: str) -> ShellSplit:
    """The simple commands in `command`, and whether any of it is beyond reasoning."""
    found = _Findings()
    if "\0" in command:
        found.refuse("a NUL character")  # bash never sees past it; nothing here models that
    _split_text(command, 0, found)
    return ShellSplit(found.parts, found.opaque, found.reasons)


def allow_forms(part: str) -> list[str]:
    """Spellings of one simple command an allow rule may match: as written, and
    re-quoted word by word (so `git 'status'` is `git status`)."""
    forms = [part]
    words = _words(part)
    if words:
        _add(forms, shlex.join(words))
    return forms


def deny_forms(part: str) -> list[str]:
    """Every spelling a deny rule should see: the allow forms, the words joined
    without quotes, and the command name without its directory (`/bin/rm`)."""
    forms = allow_forms(part)
    words = _words(part)
    if words:
        _add(forms, " ".join(words))
        base = os.path.basename(words[0])
        if base and base != words[0]:
            _add(forms, shlex.join([base, *words[1:]]))
            _add(forms, " ".join([base, *words[1:]]))
    return forms


MAX_LATER_COMMANDS = 256
"""Later words looked at as commands per part; past that a deny rule simply matches."""


class TooManyWords(Exception):
    """A part with more candidate command words than a deny check looks at."""


def later_command_forms(part: str, name_prefix: str) -> list[str]:
    """Deny spellings of the command starting at every later word of `part` whose name
    (or its basename) starts with `name_prefix`: `setarch x86_64 rm x` holds `rm x`,
    whatever `setarch` is. No list of wrappers can be complete, so any program may be
    one. Raises TooManyWords past MAX_LATER_COMMANDS candidates."""
    words = _words(part)
    if words is None:
        words = part.split()
    starts = [
        i
        for i in range(1, len(words))
        if words[i].startswith(name_prefix) or os.path.basename(words[i]).startswith(name_prefix)
    ]
    if len(starts) > MAX_LATER_COMMANDS:
        raise TooManyWords(part)
    forms: list[str] = []
    for start in starts:
        for form in deny_forms(shlex.join(words[start:])):
            _add(forms, form)
    return forms


def _add(forms: list[str], form: str) -> None:
    if form not in forms:
        forms.append(form)


def _words(text: str) -> list[str] | None:
    """The words of one simple command, quotes removed; None if they cannot be split."""
    words = lex_words(text)
    return None if words is None else [w.text for w in words]


__all__ = [
    "ShellSplit",
    "TooManyWords",
    "allow_forms",
    "deny_forms",
    "later_command_forms",
    "normalize_whitespace",
    "split_command",
]
