"""Commands that run another command (`sudo`, `env`, `xargs`, `timeout` ...): how each
takes its options, and where the command it runs begins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .shell_words import ASSIGNMENT


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
