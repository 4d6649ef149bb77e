"""What a simple command runs: the commands run by other commands (wrappers, shells,
`find -exec`, builtins that run code later), each analysed in turn.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable

from .shell_scan import _Findings, _Scanner
from .shell_words import ASSIGNMENT, BLANKS, Word, lex_words
from .shell_wrappers import WRAPPERS, Wrapper, _parse_options

MAX_DEPTH = 6
"""Nesting (substitutions inside `bash -c` inside `sudo` ...) beyond which we stop looking."""
KEYWORDS = frozenset(
    "if then else elif fi do done for while until case esac select function in "
    "coproc ! { } [[ ]]".split()
)
CODE_LATER_BUILTINS = frozenset(
    "trap alias shopt enable hash fc compgen complete bind let mapfile readarray".split()
)
SHELLS = frozenset("sh bash zsh dash ksh mksh ash fish csh tcsh yash".split())
XARGS_INPUT = "<input>"
"""Stands for the arguments xargs appends, so `xargs rm` is checked as `rm <input>`."""


def _split_text(text: str, depth: int, found: _Findings) -> None:
    if depth > MAX_DEPTH:
        found.refuse("nested too deeply to check")
        return
    scanner = _Scanner(text, found)
    scanner.run()
    for segment in scanner.segments:
        _analyse_segment(segment, depth, found)
    for inner in scanner.nested:
        _split_text(inner, depth + 1, found)


def _analyse_segment(segment: str, depth: int, found: _Findings) -> None:
    found.add_part(segment)
    lexed = lex_words(segment)
    if lexed is None:
        found.refuse("quoting that cannot be split into words")
        words = segment.split()
    else:
        for index, word in enumerate(lexed):
            _check_expansions(word, found, command_name=index == 0)
        words = [w.text for w in lexed]
    _analyse_words(words, depth, found)


def _check_expansions(word: Word, found: _Findings, *, command_name: bool) -> None:
    """Refuse the word-level expansions bash would perform: the argv it builds from
    them depends on the file system or the environment, not on the text."""
    bare = word.unquoted
    if "*" in bare or "?" in bare or ("[" in bare and "]" in word.text[word.text.find("[") :]):
        where = "in the command name" if command_name else "expanded to file names by the shell"
        found.refuse(f"wildcard {where}")
    if "{" in bare and word.raw != "{}":
        # `{}` alone is a literal word (find -exec uses it); anything else may be a
        # group or a brace expansion that turns one word into several.
        found.refuse("brace group or expansion { }")
    if word.raw.startswith("~") or (word.assignment and "~" in bare):
        found.refuse("tilde expansion ~")
    if word.assignment and "[" in word.raw.partition("=")[0]:
        found.refuse("array subscript in an assignment (evaluated as arithmetic)")


def _analyse_words(words: list[str], depth: int, found: _Findings) -> None:
    if not words:
        return
    if depth > MAX_DEPTH:
        found.refuse("nested too deeply to check")
        return
    count = _leading_assignments(words)
    if count:
        found.note("variable assignment before the command")
        _inner(words[count:], depth, found)
        return
    name = os.path.basename(words[0]) or words[0]
    if name in KEYWORDS:
        found.refuse(f"shell keyword '{name}'")
        _inner(words[1:], depth, found)
        return
    special = _SPECIAL.get(name)
    if special is not None:
        special(words, depth, found)
    elif name in WRAPPERS:
        _wrapper(WRAPPERS[name], words, depth, found)
    _shells_in_later_words(words, depth, found)


def _shells_in_later_words(words: list[str], depth: int, found: _Findings) -> None:
    """`setarch x86_64 bash -c '...'`: whatever program stands first, a shell named
    later with a command string may be run by it, so the string is split too."""
    for index in range(1, len(words)):
        if os.path.basename(words[index]) in SHELLS and _shell_string(words[index:]) is not None:
            _shell(words[index:], depth, found)


def _leading_assignments(words: list[str]) -> int:
    count = 0
    while count < len(words) and ASSIGNMENT.match(words[count]):
        count += 1
    return count


def _inner(words: list[str], depth: int, found: _Findings) -> None:
    """A command run by another command: a part of its own, analysed in turn."""
    if words:
        found.add_part(shlex.join(words))
        _analyse_words(words, depth + 1, found)


def _inner_text(text: str, depth: int, found: _Findings) -> None:
    """A string another command hands to a shell: split it like a command line."""
    _split_text(text, depth + 1, found)


def _wrapper(spec: Wrapper, words: list[str], depth: int, found: _Findings) -> None:
    name = os.path.basename(words[0])
    found.note(f"runs a command through {name}")
    options = _parse_options(spec, words)
    if options.to_shell:
        found.refuse(f"{name} hands the command to a shell")
        _inner_text(" ".join(options.shell_text + words[options.index :]), depth, found)
    if options.unsure:
        found.refuse(f"{name} options not understood")
    index = min(options.index + spec.positional, len(words))
    inner = list(words[index:]) or list(spec.default_command)
    if name == "xargs" and inner:
        inner.append(XARGS_INPUT)
    _inner(inner, depth, found)


def _shell(words: list[str], depth: int, found: _Findings) -> None:
    """`bash -c '...'` and friends: a second round of parsing we do not trust."""
    found.refuse(f"runs a shell ({os.path.basename(words[0])})")
    text = _shell_string(words)
    if text is not None:
        _inner_text(text, depth, found)


def _shell_string(words: list[str]) -> str | None:
    """The command string of `sh -c STRING` (options before it skipped), if there is one."""
    takes_string, index = False, 1
    while index < len(words) and words[index].startswith(("-", "+")):
        word = words[index]
        if word in ("-o", "+o", "-O", "+O"):
            index += 1
        elif not word.startswith("--") and "c" in word[1:]:
            takes_string = True
        index += 1
    return words[index] if takes_string and index < len(words) else None


def _runs_code_later(words: list[str], depth: int, found: _Findings) -> None:
    """Builtins that store text to run later (trap, compgen -C, mapfile -C), evaluate
    arithmetic (let), change how later words are parsed or found (shopt, alias,
    enable, hash), or replay history (fc): nothing in their words tells what runs."""
    found.refuse(f"the builtin {words[0]} can run or change commands later")
    for word in words[1:]:
        if any(ch in word for ch in BLANKS + ";&|\n"):
            _inner_text(word, depth, found)  # `trap 'rm x' EXIT`: still seen by deny rules


SAFE_SET_FLAGS = frozenset("euCf")
SAFE_SET_NAMES = frozenset("errexit nounset pipefail noglob noclobber".split())
"""`set` options that change no parsing and run nothing (-x is not one: PS4 is expanded
at every command it traces, so `PS4='$(rm x)'; set -x` runs rm)."""


def _set(words: list[str], depth: int, found: _Findings) -> None:
    if not _safe_set_options(words[1:]):
        found.refuse("set with options that change how commands run")


def _safe_set_options(words: list[str]) -> bool:
    """Whether every word is a known-harmless option: `-eu`, `-o pipefail`, `+e` ..."""
    names_follow = 0
    for word in words:
        if names_follow:
            if word not in SAFE_SET_NAMES:
                return False
            names_follow -= 1
        elif word[:1] in "-+" and len(word) > 1 and word != "--":
            letters = word[1:]
            names_follow = letters.count("o")
            if not set(letters) <= SAFE_SET_FLAGS | {"o"}:
                return False
        else:
            return False  # positional parameters (or `--`): nothing to gain from reading them
    return names_follow == 0


DECLARE_SAFE_OPTIONS = frozenset("-x -r -g -p -f -F -- -gx -xg -rx -xr".split())
"""declare/export/local options that make no variable evaluate (-i turns every later
assignment into arithmetic, which runs `$(...)` found in a value; -n makes a reference)."""


def _declares(words: list[str], depth: int, found: _Findings) -> None:
    options = [w for w in words[1:] if w.startswith(("-", "+"))]
    if any(o not in DECLARE_SAFE_OPTIONS for o in options):
        found.refuse(f"{words[0]} with options that make variables evaluate")
    _names_variables(words, depth, found)


def _names_variables(words: list[str], depth: int, found: _Findings) -> None:
    """Builtins that take variable names (test -v, read, unset, printf -v, declare ...):
    a subscript in a name, `a[$(rm x)]`, is arithmetic, and arithmetic runs commands."""
    if any("[" in word for word in words[1:]):
        found.refuse(f"{words[0]} names an array element (its subscript would be evaluated)")


def _time(words: list[str], depth: int, found: _Findings) -> None:
    """The `time` keyword takes `-p` and `--` only; whatever follows is the command
    (`time -v ls` runs `-v`). As a program (`/usr/bin/time`) it takes other options."""
    index = 1
    while index < len(words) and words[index] == "-p":
        index += 1
    if index < len(words) and words[index] == "--":
        index += 1
    _inner(words[index:], depth, found)
    _wrapper(WRAPPERS["time"], words, depth, found)


def _eval(words: list[str], depth: int, found: _Findings) -> None:
    found.refuse("eval")
    _inner_text(" ".join(words[1:]), depth, found)


def _exec(words: list[str], depth: int, found: _Findings) -> None:
    found.refuse("exec")
    index = 1
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] == "-a" else 1
    _inner(words[index:], depth, found)


def _source(words: list[str], depth: int, found: _Findings) -> None:
    found.refuse(f"runs a script in this shell ({words[0]})")


def _find(words: list[str], depth: int, found: _Findings) -> None:
    """`find ... -exec cmd {} ;` runs cmd: each -exec command is a part."""
    index = 1
    while index < len(words):
        if words[index] in ("-exec", "-execdir", "-ok", "-okdir"):
            found.note("find runs a command (" + words[index] + ")")
            end = index + 1
            while end < len(words) and words[end] not in (";", "+"):
                end += 1
            if end >= len(words):
                found.refuse("find -exec without ';' or '+'")
            _inner(words[index + 1 : end], depth, found)
            index = end
        index += 1


def _remote_or_scripted(words: list[str], depth: int, found: _Findings) -> None:
    """Commands that hand a string to some shell later (watch, su -c, ssh ...):
    opaque; any argument that looks like a command line is still split, for deny."""
    found.refuse(f"runs a command through {os.path.basename(words[0])}")
    for word in words[1:]:
        if any(ch in word for ch in BLANKS):
            _inner_text(word, depth, found)
    index = 1
    while index < len(words) and words[index].startswith("-"):
        index += 1
    _inner(words[index:], depth, found)


_SPECIAL: dict[str, Callable[[list[str], int, _Findings], None]] = {
    **{name: _shell for name in SHELLS},
    "eval": _eval,
    "exec": _exec,
    "source": _source,
    ".": _source,
    "find": _find,
    "time": _time,
    "set": _set,
    **{name: _runs_code_later for name in CODE_LATER_BUILTINS},
    **{name: _declares for name in ("declare", "typeset", "local", "readonly", "export")},
    **{
        name: _names_variables
        for name in ("test", "[", "read", "unset", "printf", "getopts", "wait")
    },
    **{
        name: _remote_or_scripted
        for name in (
            "watch",
            "su",
            "ssh",
            "parallel",
            "flock",
            "script",
            "strace",
            "ltrace",
            "runuser",
            "sg",
            "pkexec",
            "chroot",
            "unshare",
            "nsenter",
        )
    },
}
