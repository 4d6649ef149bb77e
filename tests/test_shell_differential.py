"""The splitter against bash itself: every command bash runs must be one it reported.

Thousands of command lines are generated from words, quotes, escapes, comments,
operators, newlines, substitutions and here-documents. Each runs under a real
`bash -c` in which nothing real can run: every command name the generator uses
is a shell function that records its argv, builtins included (a function
shadows a builtin), `command_not_found_handle` records any other name, PATH is
an empty directory and the working directory a fresh temporary one. Whatever
bash ran must be one of the simple commands `split_command` reported, with the
same argv, unless the splitter called the line opaque (then it is never allowed
part by part, and under --auto a deny rule refuses it).

The examples are derandomized and no example database is kept, so the suite
gives the same answer on every run and in every checkout. Nothing is shrunk: a
failure names the lines that missed (with what a lone `bash -c` ran for each)
at once, where shrinking batches of bash runs took minutes.
TETHER_DIFFERENTIAL_EXAMPLES raises the count, TETHER_DIFFERENTIAL_RANDOM=1 draws
new lines and TETHER_DIFFERENTIAL_SHRINK=1 shrinks a failure, for a longer hunt.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tether.safety.shell_parse import ShellSplit, allow_forms, split_command

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

COMMANDS_PER_EXAMPLE = 30
EXAMPLES = int(os.environ.get("TETHER_DIFFERENTIAL_EXAMPLES", "100"))
RANDOM_HUNT = os.environ.get("TETHER_DIFFERENTIAL_RANDOM") == "1"
SHRINK = os.environ.get("TETHER_DIFFERENTIAL_SHRINK") == "1"
RUN_TIMEOUT = 20
"""Seconds one `bash -c` may take; only a true hang reaches it."""

RECORDED = (
    "git rm ls touch cat echo cd sudo env xargs timeout nohup nice eval exec source . "
    "test [ set export declare local let unset trap alias shopt hash enable command "
    "builtin bash sh find flock setarch read true : x y ab status"
).split()
"""Every name the generator puts in command position; each becomes a recording function."""

# One file per record, named by process, count and chance: bash's printf writes a
# line-buffered stdout, so a record with a newline in an argument is more than one
# write(), and two sides of a pipe appending to one shared log interleaved them.

PRELUDE = r"""
__tether_record() {
    printf -v __tether_r '%s\037' "$@"
    printf '%s' "$__tether_r" > "$__TETHER_LOG/$BASHPID.$((__tether_n += 1)).$SRANDOM$RANDOM"
}
command_not_found_handle() { __tether_record "$@"; }
"""


def _prelude() -> str:
    functions = [f"function {name} {{ __tether_record {shlex.quote(name)} \"$@\"; }}"
                 for name in RECORDED]
    return PRELUDE + "\n".join(functions) + "\n"


# --- the generator --------------------------------------------------------------------

PLAIN = st.sampled_from(["a", "b", "x", "-rf", "--short", "status", "1", "a=b", "A=1", "%s",
                         "-c", "-v", "-p", "--", "{}", "]", "=", "é", "a\rb", "HEAD~1", "!"])
EXPANDING = st.sampled_from(["~", "*", "a?", "[a]", "a{b,c}", "A=~", "a[1]=2", "{", "$"])
ESCAPES = st.sampled_from(["\\;", "\\ ", "\\#", "\\'", '\\"', "\\\\", "\\\n", "\\$", "\\a",
                           "\\|", "\\&", "\\>", "\\`", "\\{", "\\*", "\\~"])
SINGLE = st.builds(lambda s: f"'{s}'", st.sampled_from(
    ["", "a b", "a;b", "#", "$(x)", "\\", '"', "\n", "rm x", "a\\\nb", "`y`", "} {", "*"]))
DOUBLE = st.builds(lambda s: f'"{s}"', st.sampled_from(
    ["", "a b", "a;b", "#", "\\\"", "\\\\", "\\$", "\\a", "\\\n", "'", "$", "a $ b", "\n",
     "\\`", "rm x", "*", "~", "{a,b}", "\\'"]))
SUBSTITUTION = st.sampled_from(["$(x)", "$(rm a)", "`y`", "`rm a`", "<(x)", ">(y)", "$x",
                                "${x}", "$((1+1))", "$'a'", '$"a"', "$#", '"$(x)"', '"`y`"'])
CLEAN_PIECE = st.one_of(PLAIN, PLAIN, PLAIN, ESCAPES, ESCAPES, SINGLE, DOUBLE)
ANY_PIECE = st.one_of(CLEAN_PIECE, CLEAN_PIECE, EXPANDING, SUBSTITUTION)
SEPARATOR = st.sampled_from([";", "&&", "||", "|", "|&", "&", "\n", " ;", "\n\n", "time",
                             "time -p", "time -v", "!", "&&\n", "|\n"])
OPAQUE_OPERATOR = st.sampled_from([";;", "(", ")", "{", "}", ">", "<", "2>&1", ">>", "<<<",
                                   "&>", "<>", ">|"])
ANY_OPERATOR = st.one_of(SEPARATOR, SEPARATOR, OPAQUE_OPERATOR)
COMMENT = st.builds(lambda s: f"#{s}", st.sampled_from(
    ["", "'", '"', " \\", "\\", " x'", "$(", "`", " ; rm a", "'\"", " a\\", "#", " <<E", " {",
     " )", " '\\"]))
COMMENT_END = st.sampled_from(["\n", "", "\n#'\n", "\\\n", "\n'"])
HEREDOC = st.sampled_from([
    "<<E\nrm a\nE\n", "<<'E'\n$(x)\nE\n", "<<-E\n\trm a\n\tE\n", '<<"E"\n`y`\nE\n',
    "<<E\n#'\nE\n", "<<E", "<<E\nE",
])
JOIN = st.sampled_from([" ", " ", " ", "", "\t", " \\\n ", "\\\n"])
CLEAN_NAMES = [n for n in RECORDED if n not in
               "eval exec source . bash sh trap alias shopt hash enable let".split()]


@st.composite
def command_lines(draw: st.DrawFn) -> str:
    """One line: simple commands (a name and words) joined by operators, with comments,
    here-documents and odd spacing between the pieces. Half the lines keep to what the
    splitter can read (quotes, escapes, comments, separators), so that it is tested on
    lines it does not call opaque, not only on lines it gives up on."""
    clean = draw(st.booleans())
    piece, operator = (CLEAN_PIECE, SEPARATOR) if clean else (ANY_PIECE, ANY_OPERATOR)
    names = st.sampled_from(CLEAN_NAMES if clean else RECORDED)
    pieces: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        pieces.append(draw(names))
        pieces.extend(draw(st.lists(st.lists(piece, min_size=1, max_size=3).map("".join),
                                    max_size=4)))
        extra = draw(st.sampled_from(["", "", "comment", "comment", "heredoc"]))
        if extra == "comment":
            pieces.append(draw(COMMENT) + draw(COMMENT_END))
        elif extra == "heredoc" and not clean:
            pieces.append(draw(HEREDOC))
        pieces.append(draw(operator))
    if draw(st.booleans()):
        pieces.pop()  # most lines do not end with an operator
    line = pieces[0]
    for part in pieces[1:]:
        line += draw(JOIN) + part
    return line


# --- running under bash -------------------------------------------------------------------

DRIVER = r"""
i=0
while IFS= read -r -d '' __tether_line; do
    export __TETHER_LOG="$__TETHER_LOGS/$i"  # made beforehand: PATH has no mkdir
    # The recording functions are defined by the same parse stream that then reads
    # the line, so the line is read exactly as `bash -c` reads its string.
    # `wait`, outside the evaluated text: a background job's earlier commands (the `echo` of
    # `echo hi | cat &`) hold no pipe of ours, so without it the next line could start, and
    # the batch end, before they wrote their record.
    ( eval "$__TETHER_PRELUDE"$'\n'"$__tether_line"; wait ) </dev/null 2>/dev/null
    i=$((i + 1))
done < "$__TETHER_LINES"
"""
"""Runs each line in its own subshell of one bash: a fork per line, not an exec."""


@dataclass
class Harness:
    prelude: str
    empty_path: Path
    home: Path
    scratch: Path

    def __repr__(self) -> str:
        return "Harness()"  # hypothesis prints it with every failing example

    def run_all(self, lines: list[str]) -> list[list[list[str]] | None]:
        """The argv of every command bash ran for each line (None: the line hung)."""
        batch = Path(tempfile.mkdtemp(dir=self.scratch))
        for i in range(len(lines)):
            (batch / "logs" / str(i)).mkdir(parents=True)
        (batch / "lines").write_bytes(b"\0".join(_encoded(line) for line in lines) + b"\0")
        env = self._env(__TETHER_LOGS=str(batch / "logs"), __TETHER_LINES=str(batch / "lines"),
                        __TETHER_PRELUDE=self.prelude)
        if self._bash(["-c", DRIVER], batch, env, RUN_TIMEOUT * len(lines)):
            return [_records(batch / "logs" / str(i)) for i in range(len(lines))]
        return [self.run(line) for line in lines]  # something hung: find which line, alone

    def run(self, line: str) -> list[list[str]] | None:
        """One line under its own `bash -c`, the recording functions set up by BASH_ENV."""
        work = Path(tempfile.mkdtemp(dir=self.scratch))
        (work / "prelude.sh").write_text(self.prelude)
        (work / "log").mkdir()
        env = self._env(__TETHER_LOG=str(work / "log"), BASH_ENV=str(work / "prelude.sh"))
        if not self._bash(["-c", line], work, env, RUN_TIMEOUT):
            return None
        return _records(work / "log")

    def _env(self, **extra: str) -> dict[str, str]:
        return {"PATH": str(self.empty_path), "HOME": str(self.home), "LC_ALL": "C.UTF-8", **extra}

    def _bash(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> bool:
        """Run bash; False if it had not finished after `timeout` seconds."""
        assert BASH is not None
        try:
            # Output goes to pipes that background jobs inherit, so this returns only
            # once every job has finished writing its record.
            subprocess.run([BASH, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return False
        return True


def _encoded(line: str) -> bytes:
    return line.encode("utf-8", "surrogateescape")


def _records(log: Path) -> list[list[str]]:
    """Every argv recorded in the directory `log`, sorted: processes running side by
    side have no order of their own."""
    records = (path.read_bytes().decode("utf-8", "surrogateescape") for path in log.iterdir())
    return sorted(record.split("\x1f")[:-1] for record in records)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Harness:
    base = tmp_path_factory.mktemp("differential")
    for name in ("empty", "home", "scratch"):
        (base / name).mkdir()
    return Harness(_prelude(), base / "empty", base / "home", base / "scratch")


def reported_argvs(split: ShellSplit) -> set[str]:
    return {form for part in split.parts for form in allow_forms(part)}


def unreported(command: str, ran: list[list[str]] | None) -> list[str]:
    """What bash ran that the splitter did not report (empty when opaque)."""
    split = split_command(command)
    if split.opaque:
        return []
    if ran is None:
        return ["<bash hung on a line the splitter could read>"]
    forms = reported_argvs(split)
    return [shlex.join(argv) for argv in ran if shlex.join(argv) not in forms]


REGRESSIONS = [
    # A pipe whose left side records an argument with a newline: the record was two
    # writes to a shared log, and the right side's record landed between them.
    'setarch \\*\'} {\' "rm x"é\'\' ="#"\'a\\\nb\' \\\n |\tcat \\\n ""%sHEAD~1\\\n\\\n'
    ' \'a;b\'"a b" #\\\ttime -p \\\n rm\t# x\'\\\n ;',
]
"""Lines that once failed, run first on every run."""


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM_HUNT,
    database=None,
    phases=[Phase.explicit, Phase.generate, *([Phase.shrink] if SHRINK else [])],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(command_lines(), min_size=COMMANDS_PER_EXAMPLE, max_size=COMMANDS_PER_EXAMPLE))
@example(REGRESSIONS)
def test_every_command_bash_runs_was_reported(harness: Harness, lines: list[str]) -> None:
    results = harness.run_all(lines)
    misses = {line: miss for line, ran in zip(lines, results, strict=True) if (miss := unreported(line, ran))}
    assert not misses, "bash ran commands the splitter did not report:\n" + "\n".join(
        f"  {line!r}: {miss}\n    (alone under bash -c it ran {harness.run(line)})"
        for line, miss in misses.items())


# --- the harness itself ---------------------------------------------------------------------


def test_the_harness_records_every_command_and_runs_nothing_real(harness: Harness) -> None:
    line = "git status --short; rm -rf a\necho hi | cat & unknown 'a b'"
    alone, (batched,) = harness.run(line), harness.run_all([line])
    assert alone is not None and batched is not None
    assert alone == batched == sorted(
        [["git", "status", "--short"], ["rm", "-rf", "a"], ["echo", "hi"], ["cat"],
         ["unknown", "a b"]])


def test_the_harness_keeps_records_whole_when_a_pipe_writes_newlines(harness: Harness) -> None:
    """Every side of a pipe records an argument with a newline at the same time; one
    shared log interleaved their writes (about one line in ten)."""
    line = "x 'a\nb' | y 'c\nd' | x 'e\nf' | y 'g\nh'"
    expected = sorted([["x", "a\nb"], ["y", "c\nd"], ["x", "e\nf"], ["y", "g\nh"]])
    assert harness.run_all([line] * 100) == [expected] * 100


def test_the_harness_sees_through_substitutions_and_builtins(harness: Harness) -> None:
    ran = harness.run("eval 'x'; echo $(rm a) `y`; [ -f b ]; cd /; exec ls")
    assert ["rm", "a"] in (ran or [])
    assert ["y"] in (ran or [])
    assert ["[", "-f", "b", "]"] in (ran or [])
    assert ["exec", "ls"] in (ran or [])


def test_the_harness_catches_a_splitter_that_ignores_comments(harness: Harness) -> None:
    """The oracle must be able to fail: the old comment bug is a miss it reports."""
    line = "git status #'\ntouch M\n#'"
    ran = harness.run(line)
    assert ran == [["git", "status"], ["touch", "M"]]
    blind = ShellSplit(["git status #'\ntouch M\n#'"], False, [])
    assert "touch M" not in reported_argvs(blind)
