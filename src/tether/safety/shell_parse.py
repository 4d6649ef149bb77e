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
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_DEPTH = 6
"""Nesting (substitutions inside `bash -c` inside `sudo` ...) beyond which we stop looking."""

BLANKS = " \t"
"""What bash itself splits words on; a carriage return is part of a word."""
WORD_BREAKS = ";&|()<>"
"""Bash's metacharacters besides blanks and newline: each ends a word, so a `#` after
one starts a comment."""
SEPARATORS = {
    ";": "';' separator",
    "&&": "'&&'",
    "||": "'||'",
    "|": "pipe '|'",
    "|&": "pipe '|&'",
    "&": "background '&'",
}
REDIRECTIONS = ("&>>", "<<<", "<<-", "&>", ">>", "<<", "<&", ">&", "<>", ">|", "<", ">")
"""Bash's redirection operators, longest first so the longest one matches."""
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
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


@dataclass
class _Findings:
    parts: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    opaque: bool = False
    seen: set[str] = field(default_factory=set)

    def note(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)

    def refuse(self, reason: str) -> None:
        self.opaque = True
        self.note(reason)

    def add_part(self, text: str) -> None:
        if text and text not in self.seen:
            self.seen.add(text)
            self.parts.append(text)


def split_command(command: str) -> ShellSplit:
    """The simple commands in `command`, and whether any of it is beyond reasoning."""
    found = _Findings()
    if "\0" in command:
        found.refuse("a NUL character")  # bash never sees past it; nothing here models that
    _split_text(command, 0, found)
    return ShellSplit(found.parts, found.opaque, found.reasons)


def normalize_whitespace(text: str) -> str:
    """Collapse unquoted blank runs to one space and blank runs holding a newline
    to one newline; quoted text is kept as written. Newlines survive because
    they separate commands: `a\\nb` must never equal `a b`."""
    out: list[str] = []
    pending = ""
    quote = ""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            step = 2 if quote == '"' and c == "\\" else 1
            out.append(text[i : i + step])
            quote = "" if c == quote else quote
            i += step
            continue
        if c == "\\" and text[i + 1 : i + 2] == "\n":
            i += 2  # a line continuation vanishes: `a\<newline>b` is the word `ab`
        elif c == "#" and (not out or pending or (len(out[-1]) == 1 and out[-1] in WORD_BREAKS)):
            end = _line_end(text, i)  # a comment: its quotes open nothing
            if pending and out:
                out.append(pending)
            pending = ""
            out.append(text[i:end])
            i = end
        elif c in BLANKS or c == "\n":
            pending = "\n" if "\n" in (c, pending) else " "
            i += 1
        else:
            if pending and out:
                out.append(pending)
            pending = ""
            step = 2 if c == "\\" else 1
            quote = c if c in "'\"" else ""
            out.append(text[i : i + step])
            i += step
    return "".join(out)


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
        i for i in range(1, len(words))
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


@dataclass
class Word:
    """One word of a simple command as bash reads it."""

    text: str = ""
    """The word after quote removal: what the program gets in its argv."""
    raw: str = ""
    """The word as written."""
    unquoted: str = ""
    """Its unquoted characters only, in order (quoted ones are left out)."""
    started: bool = False
    """Whether anything (even an empty `''`) was written: `''` is a word, a blank is not."""
    assignment: bool = False
    """NAME=... with NAME and `=` unquoted, the form bash treats as an assignment."""

    def add(self, raw: str, text: str, *, quoted: bool) -> None:
        self.raw += raw
        self.text += text
        if not quoted:
            self.unquoted += text
        self.started = True


def lex_words(text: str) -> list[Word] | None:
    """Split one simple command into words with bash's quoting rules; None when a
    quote is left open. Expansions are not performed (the scanner makes any command
    holding one opaque), so `$x` is kept as the two characters."""
    words: list[Word] = []
    word = Word()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in BLANKS or c == "\n":
            if word.started:
                words.append(_finished(word))
            word = Word()
            i += 1
        elif c == "\\":
            escaped = text[i + 1 : i + 2]
            if escaped != "\n":  # a line continuation vanishes
                word.add(text[i : i + 2], escaped or "\\", quoted=bool(escaped))
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return None
            word.add(text[i : end + 1], text[i + 1 : end], quoted=True)
            i = end + 1
        elif c == '"':
            end = _double_quoted_end(text, i)
            if end < 0:
                return None
            word.add(text[i : end + 1], _double_quoted_text(text[i + 1 : end]), quoted=True)
            i = end + 1
        else:
            word.add(c, c, quoted=False)
            i += 1
    if word.started:
        words.append(_finished(word))
    return words


def _finished(word: Word) -> Word:
    word.assignment = bool(ASSIGNMENT.match(word.raw))
    return word


def _double_quoted_end(text: str, start: int) -> int:
    """Index of the `"` closing the one at `start`, or -1."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i
        else:
            i += 1
    return -1


DOUBLE_QUOTE_ESCAPES = '$`"\\\n'
"""The only characters a backslash escapes inside double quotes; before any other
it stays a backslash."""


def _double_quoted_text(inner: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(inner):
        if inner[i] == "\\" and inner[i + 1 : i + 2] and inner[i + 1] in DOUBLE_QUOTE_ESCAPES:
            if inner[i + 1] != "\n":
                out.append(inner[i + 1])
            i += 2
        else:
            out.append(inner[i])
            i += 1
    return "".join(out)


# --- the structural scanner -------------------------------------------------


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


class _Scanner:
    """Walks `text` once, cutting it into raw simple-command segments at unquoted
    control operators and collecting the text of substitutions for a separate look."""

    def __init__(self, text: str, found: _Findings) -> None:
        self.text = text
        self.found = found
        self.pos = 0
        self.buf: list[str] = []
        self.segments: list[str] = []
        self.nested: list[str] = []
        self.handlers = self._handlers()
        self.word_start = True
        """Whether the next character would begin a word: only there does `#` start a comment."""

    def run(self) -> None:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            handler = self.handlers.get(c)
            if c == "#" and self.word_start:
                self._comment()
            elif text.startswith("\\\n", self.pos):
                self.pos += 2  # a line continuation vanishes, and the word goes on as before
            elif handler is not None:
                handler()
                self.word_start = c in WORD_BREAKS or c == "\n"
            else:
                self._take(1)
                self.word_start = c in BLANKS
        self._cut()

    def _comment(self) -> None:
        """Bash drops a comment up to the newline: quotes, backslashes and `$` in it mean
        nothing, so `git status #'` does not open a quote that hides the next line."""
        self.pos = _line_end(self.text, self.pos)

    def _handlers(self) -> dict[str, Callable[[], None]]:
        return {
            "\\": self._backslash,
            "'": self._single_quote,
            '"': self._double_quote,
            "$": self._dollar,
            "`": self._backtick,
            "\n": self._newline,
            ";": self._operator,
            "&": self._operator,
            "|": self._operator,
            "<": self._redirection,
            ">": self._redirection,
            "(": self._parenthesis,
            ")": self._parenthesis,
        }

    # each handler consumes at least one character

    def _take(self, count: int) -> None:
        self.buf.append(self.text[self.pos : self.pos + count])
        self.pos += count

    def _cut(self) -> None:
        segment = normalize_whitespace("".join(self.buf))
        if segment:
            self.segments.append(segment)
        self.buf = []

    def _backslash(self) -> None:
        if self.pos + 1 == len(self.text):
            self.found.refuse("a backslash at the end")
        self._take(2)

    def _single_quote(self) -> None:
        end = self.text.find("'", self.pos + 1)
        if end < 0:
            self.found.refuse("unbalanced quote")
            self._take(len(self.text) - self.pos)
        else:
            self._take(end + 1 - self.pos)

    def _double_quote(self) -> None:
        text, i = self.text, self.pos + 1
        while i < len(text) and text[i] != '"':
            if text[i] == "\\":
                i += 2
            elif text[i] == "$" and _expands(text[i + 1 : i + 2]):
                i = self._expansion_at(i)
            elif text[i] == "`":
                i = self._backtick_at(i)
            else:
                i += 1
        if i >= len(text):
            self.found.refuse("unbalanced quote")
        self._take(min(i + 1, len(text)) - self.pos)

    def _dollar(self) -> None:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt == "'":
            self.found.refuse("$'...' quoting")
            self._take(1 + self._ansi_c_quote_length(self.pos + 1))
        elif nxt == '"':
            self.found.refuse('$"..." quoting')
            self._take(1)
        elif _expands(nxt):
            end = self._expansion_at(self.pos)
            self._take(end - self.pos)
        else:
            self._take(1)

    def _ansi_c_quote_length(self, start: int) -> int:
        """Length of `$'...'` text from its opening quote; backslash escapes apply inside."""
        text, i = self.text, start + 1
        while i < len(text) and text[i] != "'":
            i += 2 if text[i] == "\\" else 1
        if i >= len(text):
            self.found.refuse("unbalanced quote")
        return min(i + 1, len(text)) - start

    def _expansion_at(self, i: int) -> int:
        """Note the expansion starting with `$` at `i`; returns the index just past it."""
        text, nxt = self.text, self.text[i + 1 : i + 2]
        if nxt == "(":
            self.found.refuse("command substitution $(...)")
            end = _closing_paren(text, i + 2)
            self.nested.append(text[i + 2 : end - 1])
            return min(end, len(text))
        if nxt == "{":
            self.found.refuse("parameter expansion ${...}")
            end = text.find("}", i + 2)
            return len(text) if end < 0 else end + 1
        self.found.refuse("variable expansion $" + nxt)
        return i + 2

    def _backtick(self) -> None:
        end = self._backtick_at(self.pos)
        self._take(end - self.pos)

    def _backtick_at(self, i: int) -> int:
        self.found.refuse("backtick substitution")
        text, j = self.text, i + 1
        while j < len(text) and text[j] != "`":
            j += 2 if text[j] == "\\" else 1
        if j >= len(text):
            self.found.refuse("unbalanced backtick")
        self.nested.append(text[i + 1 : j])
        return min(j + 1, len(text))

    def _newline(self) -> None:
        self.found.note("newline")
        self.pos += 1
        self._cut()

    def _operator(self) -> None:
        text, i = self.text, self.pos
        two = text[i : i + 2]
        if two in ("&>",):
            self._redirection()
            return
        if two in (";;", ";&"):
            self.found.refuse("case syntax " + two)
            op = two
        elif two in ("&&", "||", "|&"):
            op = two
        else:
            op = text[i]
        self.found.note(SEPARATORS.get(op, op))
        self.pos += len(op)
        self._cut()

    def _redirection(self) -> None:
        text, i = self.text, self.pos
        if text[i + 1 : i + 2] == "(" and text[i] in "<>":
            self.found.refuse("process substitution")
            end = _closing_paren(text, i + 2)
            self.nested.append(text[i + 2 : end - 1])
            self._take(min(end, len(text)) - i)
            return
        op = next(op for op in REDIRECTIONS if text.startswith(op, i))
        here = op in ("<<", "<<-")
        self.found.refuse("here-document" if here else f"redirection '{op}'")
        self._take(len(op))

    def _parenthesis(self) -> None:
        self.found.refuse("subshell or grouping ( )")
        self.pos += 1
        self._cut()



def _line_end(text: str, start: int) -> int:
    """Index of the newline ending the line `start` is on (len(text) on the last line)."""
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _expands(nxt: str) -> bool:
    """Whether `$` followed by `nxt` may expand. Shells differ (zsh has `$=x`,
    `$~x`), so only a dollar before a blank, a quote or the end counts as literal."""
    return bool(nxt) and nxt not in BLANKS + "\n\"'"


def _closing_paren(text: str, start: int) -> int:
    """Index just past the `)` closing a `(` opened before `start`, skipping quoted
    text; len(text) + 1 when it never closes."""
    depth, i = 1, start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            end = text.find(c, i + 1)
            i = len(text) if end < 0 else end + 1
            continue
        depth += {"(": 1, ")": -1}.get(c, 0)
        i += 1
        if depth == 0:
            return i
    return len(text) + 1


# --- what a simple command runs ------------------------------------------------


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


@dataclass(frozen=True)
class Wrapper:
    """How a command that runs another command takes its options."""

    flags: frozenset[str] = frozenset()
    """Options without an argument (a short flag may also carry an attached value)."""
    with_arg: frozenset[str] = frozenset()
    """Options whose argument is the next word (or attached: `-uroot`, `--user=root`)."""
    positional: int = 0
    """Words between the options and the command (`timeout 10 cmd`, `chrt 5 cmd`)."""
    opaque_flags: frozenset[str] = frozenset()
    """Options that hand the command to a shell (`sudo -s`, `sudo -i`)."""
    assignments: bool = False
    """Whether NAME=VALUE words may come before the command (`env`)."""
    numeric_flags: bool = False
    """Whether `-5` style options exist (`nice -5`)."""
    default_command: tuple[str, ...] = ()
    """What runs when no command is given (`xargs` alone runs echo)."""
    optional_value: frozenset[str] = frozenset()
    """Short flags whose value, if any, is attached (`xargs -i{}`)."""


def _opts(names: str) -> frozenset[str]:
    return frozenset(names.split())


WRAPPERS: dict[str, Wrapper] = {
    "sudo": Wrapper(
        flags=_opts(
            "-A -B -b -E -H -K -k -l -N -n -P -S -V -v --askpass --background "
            "--bell --list --no-update --non-interactive --preserve-env "
            "--remove-timestamp --reset-timestamp --set-home --stdin --validate "
            "--version"
        ),
        with_arg=_opts(
            "-C -D -g -h -p -R -r -T -t -U -u --chdir --chroot --close-from "
            "--command-timeout --group --host --other-user --prompt --role --type "
            "--user"
        ),
        opaque_flags=_opts("-e -i -s --edit --login --shell"),
    ),
    "doas": Wrapper(
        flags=_opts("-L -n"),
        with_arg=_opts("-a -C -u"),
        opaque_flags=_opts("-s"),
    ),
    "env": Wrapper(
        flags=_opts("- -0 -i -v --debug --ignore-environment --null"),
        with_arg=_opts("-C -P -S -u --chdir --split-string --unset"),
        opaque_flags=_opts("-S --split-string"),
        assignments=True,
    ),
    "xargs": Wrapper(
        flags=_opts(
            "-0 -o -p -r -t -x --eof --exit --interactive --max-lines "
            "--no-run-if-empty --null --open-tty --replace --show-limits --verbose"
        ),
        with_arg=_opts(
            "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-chars "
            "--max-procs --process-slot-var"
        ),
        optional_value=_opts("-e -i -l"),
        default_command=("echo",),
    ),
    "nohup": Wrapper(),
    "builtin": Wrapper(),
    "busybox": Wrapper(),
    "unbuffer": Wrapper(
        flags=_opts("-p"),
    ),
    "setsid": Wrapper(
        flags=_opts("-c -f -w --ctty --fork --wait"),
    ),
    "command": Wrapper(
        flags=_opts("-p -V -v"),
    ),
    "time": Wrapper(
        flags=_opts("-a -p -q -v --append --portability --quiet --verbose"),
        with_arg=_opts("-f -o --format --output"),
    ),
    "nice": Wrapper(
        with_arg=_opts("-n --adjustment"),
        numeric_flags=True,
    ),
    "timeout": Wrapper(
        flags=_opts("-v --foreground --preserve-status --verbose"),
        with_arg=_opts("-k -s --kill-after --signal"),
        positional=1,
    ),
    "stdbuf": Wrapper(
        with_arg=_opts("-e -i -o --error --input --output"),
    ),
    "ionice": Wrapper(
        flags=_opts("-t --ignore"),
        with_arg=_opts("-c -n --class --classdata"),
    ),
    "chrt": Wrapper(
        flags=_opts(
            "-a -b -d -f -i -m -o -R -r -v --all-tasks --batch --deadline --fifo "
            "--idle --other --reset-on-fork --rr --verbose"
        ),
        with_arg=_opts("-D -P -T"),
        positional=1,
    ),
    "taskset": Wrapper(
        flags=_opts("-a -c --all-tasks --cpu-list"),
        positional=1,
    ),
}


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


@dataclass
class _Options:
    index: int = 1
    """The first word after the options."""
    unsure: bool = False
    """An option was not recognised, so `index` is a guess."""
    to_shell: bool = False
    shell_text: list[str] = field(default_factory=list)
    """Values of options that are themselves command text (`env -S '...'`)."""


def _parse_options(spec: Wrapper, words: list[str]) -> _Options:
    options = _Options()
    while options.index < len(words):
        word = words[options.index]
        if word == "--":
            options.index += 1
            break
        if (spec.assignments and ASSIGNMENT.match(word)) or word in spec.flags:
            options.index += 1
        elif not word.startswith("-") or word == "-":
            break
        elif spec.numeric_flags and re.fullmatch(r"-\d+", word):
            options.index += 1
        elif word.startswith("--"):
            options.index += _long_option(spec, word, words, options)
        else:
            options.index += _short_options(spec, word, words, options)
    return options


def _long_option(spec: Wrapper, word: str, words: list[str], options: _Options) -> int:
    """Words consumed by `--name`, `--name=value` or `--name value`."""
    name, has_value, value = word.partition("=")
    if name in spec.opaque_flags:
        options.to_shell = True
    if name in spec.with_arg:
        if not has_value:
            value = _next_word(words, options.index)
        if name in spec.opaque_flags:
            options.shell_text.append(value)
        return 1 if has_value else 2
    if name not in spec.flags and name not in spec.opaque_flags:
        options.unsure = True
    return 1


def _short_options(spec: Wrapper, word: str, words: list[str], options: _Options) -> int:
    """Words consumed by a cluster of short options: `-rt`, `-n1`, `-u root`."""
    for k in range(1, len(word)):
        option, rest = "-" + word[k], word[k + 1 :]
        if option in spec.opaque_flags:
            options.to_shell = True
        if option in spec.with_arg:
            value = rest or _next_word(words, options.index)
            if option in spec.opaque_flags:
                options.shell_text.append(value)
            return 1 if rest else 2
        if option in spec.optional_value:
            return 1  # the rest of the word, if any, is its value: -i{}, -l1
        if option not in spec.flags and option not in spec.opaque_flags:
            options.unsure = True
            return 1
    return 1


def _next_word(words: list[str], index: int) -> str:
    return words[index + 1] if index + 1 < len(words) else ""


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
    **{name: _names_variables for name in ("test", "[", "read", "unset", "printf", "getopts", "wait")},
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
