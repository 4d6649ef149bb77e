"""The request read once: what the user asks for, and the files, commands and tests it names.

`read_request` runs once per user request and its `RequestReading` is handed to whoever
needs it (the rules and the call guard through `reading_of`, the verification after a
change), so no module reads the request with regular expressions of its own. Names are found the same way
in any language (paths, backticks, file suffixes, program names); only the kind of request
(a question, a change, a run) is read from English words.

Every reading of the request the assist package makes is here: its kind (question, change,
run), the files, commands and tests it names, and the few words the rules weigh (asks for a
number, for a test, to keep the tests, to add or to remove something). The rules and the call
guard read a turn's `RequestReading` (`reading_of`), never the request text.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..engine.turn_record import TurnEvidence
from .reply_shapes import is_test_path

CHANGE_VERBS = (
    "fix|change|edit|update|set|add|create|write|make|rename|replace|remove|delete|implement|"
    "refactor|move|save|append|insert|modify|bump|convert|raise|lower|scale|turn"
)
RUN_VERBS = "run|execute|play|register|start|launch"
"""A request to run something ("run summary.py and tell me the count?") is not a question
about the code: its answer comes from running it."""

_PATH = re.compile(
    r"(?<![\w/.@:-])((?:\.{1,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/-])"
)
"""A file name with a suffix (`convert.py`, `src/app.ts`, `./run.sh`); a URL's or an e-mail
address's pieces never start one (no letter, `/`, `.`, `@` or `:` before it)."""
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_CODE_SUFFIXES = frozenset({
    "py", "pyi", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "rs", "rb", "java", "kt", "c", "h",
    "cc", "cpp", "hpp", "cs", "php", "sh", "bash", "swift", "scala", "lua", "pl", "r", "sql",
    "json", "toml", "yaml", "yml", "ini", "cfg", "conf", "env", "xml", "html", "css", "md",
    "txt", "csv", "tsv", "log", "rst", "lock",
})
"""Suffixes a file the project does not have yet must have to count as named (`e.g.` and
`v2.x` name nothing)."""
_CODE_KEYWORDS = frozenset({
    "def", "class", "return", "import", "from", "if", "for", "while", "let", "const", "var",
    "function", "fn", "func", "pub", "print", "raise", "assert", "async", "await", "lambda",
})
"""First words of code in backticks, which is not a command."""
_TEST_PROGRAMS = re.compile(
    r"(?:^|[\s/])(?:pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|bats)\b"
    r"|(?:^|\s)(?:npm|yarn|pnpm|bun|go|cargo|make|mvn|gradle|dotnet|mix|deno|zig)\s+(?:run\s+)?tests?\b"
)
"""A command that runs tests, by the program it starts (language-neutral: program names)."""
_RUN_CLAUSE = re.compile(
    rf"\b(?:{RUN_VERBS})\s+(?!(?:the|it|this|that|them|a|an|my|our|all|some)\b)"
    r"([^\n,;!?`]+?)(?=\s+(?:and|then|to|so|with|again|once|after|before|until|for)\b|[,;!?\n`]|\.(?:\s|$)|$)",
    re.I,
)
"""What follows "run"/"execute" up to the end of its clause ("run pytest -k bar and ...")."""
_RUNNERS = frozenset({
    "python", "python3", "pytest", "node", "npm", "npx", "yarn", "pnpm", "bun", "deno", "bash",
    "sh", "zsh", "make", "go", "cargo", "ruby", "perl", "php", "java", "dotnet", "tox", "nox",
    "uv", "poetry", "just", "docker",
})
"""Programs whose name after "run" starts a command, not an ordinary word ("run fast")."""
_CHANGE = re.compile(rf"\b({CHANGE_VERBS})\b", re.I)
_RUN = re.compile(rf"\b({RUN_VERBS})\b", re.I)
_QUESTION_START = re.compile(
    r"^\W*(how|what|which|where|why|when|who|whose|does|do|is|are|was|were|tell|explain|"
    r"describe|show|list|find|count)\b", re.I
)
_USE_PROGRAM = re.compile(
    r"(?:^|(?<=[.!?])\s+)\W*(?:please\s+)?use\s+(?:the\s+)?`?((?:\.{1,2}/)?[\w./-]+\.(?:py|sh|js|mjs|rb|pl|pyz))`?"
    r"(?:\s+(?:script|program|tool|app))?\s+to\b.*?"
    r"(?=,?\s+(?:and\s+)?then\b|;|[.!?](?:\s|$)|\n|$)",
    re.I,
)
"""A sentence that asks to use one of the project's programs for a change ("use todo.py to add
an item"): the change is the program's to make, by running it, not the model's by editing."""
_NEW_FILE_WORDS = re.compile(r"\b(create|write|add|make|new|save|generate|put)\b", re.I)
_EVERYWHERE = re.compile(
    r"\b(?:everywhere|throughout|across|codebase|callers|call\s+sites|usages|"
    r"(?:whole|entire)\s+(?:project|repo|repository|code)|"
    r"(?:all|every|each)\s+(?:the\s+|its\s+|of\s+its\s+)?(?:uses?|usages?|references?|callers?|"
    r"call\s+sites?|places?|occurrences?|files?|mentions?))\b",
    re.I,
)
_NUMBER_WANTED = re.compile(r"\b(how (many|much|often|long)|number of|what is the (count|total|sum))\b", re.I)
_KEEPS_TESTS = re.compile(
    r"\b(?:without\s+(?:changing|touching|editing|modifying)|"
    r"(?:do\s+not|don'?t|never|not)\s+(?:change|touch|edit|modify))\b[^.;\n]{0,40}?\btests?\b"
    r"|\b(?:leave|leaving|keep|keeping)\b[^.;\n]{0,40}?\btests?\b(?:\s+\w+)?\s+"
    r"(?:alone|unchanged|untouched|intact|as\s+(?:is|it\s+is|they\s+are))\b",
    re.I,
)
"""Says to leave the tests as they are; "keep the tests passing" does not."""
_WANTS_TEST = re.compile(r"\b(?:add|write|create|with|and)\s+(?:a\s+|an?\s+|some\s+)?(?:unit\s+)?tests?\b", re.I)
_CLAUSE_END = r"(?=[.;!?,](?:\s|$)|\n|$)"
"""Where a clause ends: a stop or comma before a space or the end (not the dot of `app.py`)."""
_KEEP_CLAUSE = re.compile(
    r"\b(?:(?:do\s+not|don'?t|never|not|nor)\s+(?:change|touch|edit|modify|alter|rewrite)"
    rf"|without\s+(?:changing|touching|editing|modifying|altering))\b(.{{0,80}}?){_CLAUSE_END}"
    r"|\bleave\s+(.{0,60}?)\s+(?:alone|as\s+(?:it\s+is|is|they\s+are)|unchanged|untouched)\b"
    r"|\bkeep\s+(.{0,60}?)\s+(?:unchanged|untouched|as\s+(?:it\s+is|is|they\s+are))\b",
    re.I,
)
"""A clause that says to leave something as it is; the files it names are kept."""
_CODE_NAME = re.compile(
    r"(?<![\w./-])(?:--?[A-Za-z][\w-]*|[A-Za-z_]\w*(?:\(\))?)(?![\w/-]|\.\w)"
)
"""A word that may be a name in code (an identifier, `parse()`, an option), not part of a path."""
_CODE_SHAPED = re.compile(r"^--?[A-Za-z]|_|[a-z][A-Z]|\(\)$")
"""What marks a bare word as a name in code: an underscore, an inner capital (`getUser`),
call parentheses or an option's dashes; a plain English word has none."""
_CALLED_WITH = re.compile(r"\((?!e?s\))[ \t]*[A-Za-z_*]\w*(?:[ \t]*(?:=[^()\n]{1,20})?[ \t]*,[ \t]*\*{0,2}[A-Za-z_]\w*)*[ \t]*(?:=[^()\n]{1,20})?\)")
"""A word's call with named parameters right after it (`slugify(text)`, `clamp(x, lo, hi)`):
a function's name, though a plain word ("file(s)" aside)."""
_RENAMED = re.compile(
    r"\brenam(?:e|ing)\s+(?:(?:the|a|an|its|our|my)\s+)?"
    r"(?:(?:environment|env|config|configuration|shell|json|yaml|toml|ini|css|html)\s+)?"
    r"(?:(?:function|method|class|setting|variable|var|key|field|option|flag|constant|parameter|param|"
    r"argument|arg|module|type|property|attribute|column|helper|command|struct|enum|interface|macro)s?\s+)?"
    r"[`'\"]?(?P<old>-{0,2}[A-Za-z_$][\w$-]*)[`'\"]?\s+(?:to|as|into)\s+"
    r"[`'\"]?(?P<new>-{0,2}[A-Za-z_$][\w$-]*)(?![\w$-]*(?:\.\w|/))",
    re.I,
)
"""A rename's two names ("rename the setting retries to max_retries"): names in code whatever
their shape, a plain word too."""
_REMOVES = re.compile(r"\b(?:remove|delete|drop|strip|clear|empty|trim)", re.I)
_ADDS = re.compile(r"\badd(?:s|ing)?\b", re.I)
_TAKES_AWAY = re.compile(r"\b(remove|delete|replace|rename|drop|instead of)\b", re.I)
SCRIPT_SUFFIXES = frozenset({"py", "js", "sh"})
NEW_CODE_SUFFIXES = frozenset({"py", "js", "ts", "rb", "go", "rs", "json", "toml", "yaml", "yml"})
"""Files a reply may show whole for the request to create (reply_shapes' fence labels)."""


@dataclass(frozen=True)
class RequestReading:
    """One user request, read once. Several kinds may hold at once ("run summary.py and write
    the count to out.txt" is a run and a change); a request in another language may hold
    none and still name files, commands and tests."""

    text: str
    question: bool = False
    """Asks for an answer in words and for no change (a run may still be asked)."""
    change: bool = False
    """Asks for a change to the project (fix, add, rename, write ...)."""
    run: bool = False
    """Asks to run a program."""
    new_file: bool = False
    """Asks to write a file the project does not have yet."""
    files: tuple[str, ...] = ()
    """Project files the request names, as project-relative paths."""
    new_files: tuple[str, ...] = ()
    """Files the request names that the project does not have (yet), as written."""
    commands: tuple[str, ...] = ()
    """Commands the request names, as written (in backticks, or after "run")."""
    test_files: tuple[str, ...] = ()
    """Test files the request names, existing or not (project-relative when they exist)."""
    test_commands: tuple[str, ...] = ()
    """The named commands that run tests (`pytest -k bar`, `npm test`)."""
    wants_number: bool = False
    """Words that ask for a number ("how many ...", "the total")."""
    keeps_tests: bool = False
    """Says to leave the tests as they are ("without changing the tests")."""
    wants_test: bool = False
    """Asks for a test to be written ("and a test for it")."""
    adds: bool = False
    """Asks to add something."""
    removes: bool = False
    """Asks to remove something (a section, a line)."""
    takes_away: bool = False
    """Asks to remove, replace, rename or drop something: an edit may drop old code."""
    everywhere: bool = False
    """Says the change is for the whole project ("everywhere", "and all its callers"), even
    when it names the file where the change starts."""
    kept_files: tuple[str, ...] = ()
    """Project files the request says to leave as they are ("don't change app_test.py",
    "leave config.yaml alone", "without touching setup.cfg"), or names as the model of a new
    file ("write backup.sh like clean.sh"), as project-relative paths."""
    code_names: tuple[str, ...] = ()
    """Names of code or settings the request names (`max_retries`, `getUser`, `--dry-run`,
    `parse()`), by their shape: in backticks, or with an underscore, an inner capital or
    call parentheses; never a file name."""

    @property
    def asks_question(self) -> bool:
        """A question about the project that asks neither for a change nor for a run."""
        return self.question and not self.run

    @property
    def asks_only_to_run(self) -> bool:
        """Asks to run something and for no change to the files."""
        return self.run and not self.change

    def keeps(self, path: str) -> bool:
        """The request says to leave `path` (project-relative, as a call names it) as it is:
        it names the file so, or it is a test and the request says to keep the tests."""
        return self.keeps_by_name(path) or (self.keeps_tests and is_test_path(path))

    def keeps_by_name(self, path: str) -> bool:
        """The request names `path` as a file to leave as it is."""
        return posixpath.normpath(path.replace("\\", "/")) in self.kept_files

    @property
    def named(self) -> tuple[str, ...]:
        """Every file the request names: those the project has, then the new ones."""
        return self.files + self.new_files


def read_request(text: str, project_files: Iterable[str]) -> RequestReading:
    """`text` read once; `project_files` are the project's files as relative paths (to tell
    a named file the project has from a new one, and to find `util.py` at `pkg/util.py`)."""
    index = _FileIndex(project_files)
    files: list[str] = []
    new_files: list[str] = []
    for name in _named_paths(text):
        found = index.find(name)
        if found is not None:
            files.append(found)
        elif name.rsplit(".", 1)[1].lower() in _CODE_SUFFIXES:
            new_files.append(name)
    commands = _named_commands(text, index)
    own_words = _USE_PROGRAM.sub(lambda m: " " if _program_does(m, index) else m.group(), text)
    change = bool(_CHANGE.search(own_words))
    return RequestReading(
        text=text,
        question=_asks(text) and not change,
        change=change,
        run=bool(_RUN.search(text)) or own_words != text,
        new_file=bool(new_files) and bool(_NEW_FILE_WORDS.search(text)),
        files=_unique(files),
        new_files=_unique(new_files),
        commands=commands,
        test_files=_unique(name for name in files + new_files if is_test_path(name)),
        test_commands=tuple(command for command in commands if runs_tests(command)),
        wants_number=bool(_NUMBER_WANTED.search(text)),
        keeps_tests=leaves_tests(text),
        wants_test=bool(_WANTS_TEST.search(text)),
        adds=bool(_ADDS.search(text)),
        removes=bool(_REMOVES.search(text)),
        takes_away=bool(_TAKES_AWAY.search(text)),
        code_names=_code_names(text, files + new_files),
        kept_files=_kept_files(text, index),
        everywhere=bool(_EVERYWHERE.search(text)),
    )


def _program_does(use: re.Match[str], index: _FileIndex) -> bool:
    """Whether a "use X to ..." sentence asks the program X, which the project has, to make
    the change: not when it names another file ("use helpers.py to fix app.py": X is a
    library, the change is app.py's)."""
    program = use.group(1)
    return index.find(program) is not None and all(name == program for name in _named_paths(use.group()))


def reading_of(evidence: TurnEvidence) -> RequestReading:
    """The turn's request as read once (read again, without the project's files, when the
    snapshot carries no reading of this package's)."""
    reading = evidence.reading
    return reading if isinstance(reading, RequestReading) else read_request(evidence.request, ())


def _suffix(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower()


def new_code_file(reading: RequestReading, root: Path | None) -> str | None:
    """The one code file the request names that the project does not have (yet): "write a
    script convert.py that ...". None when it names none or several, or the file exists now."""
    wanted = [name for name in reading.named if _suffix(name) in NEW_CODE_SUFFIXES]
    if root is None or len(wanted) != 1 or (root / wanted[0]).exists():
        return None
    return wanted[0]


def named_script(reading: RequestReading, root: Path | None) -> str | None:
    """The one script the request names ("run summary.py and tell me the count"), when the
    project has it inside its root; None when it names none, several, or a missing one."""
    scripts = [name for name in reading.named if _suffix(name) in SCRIPT_SUFFIXES]
    if root is None or len(scripts) != 1 or scripts[0] not in reading.files:
        return None
    path = (root / scripts[0]).resolve()
    return scripts[0] if path.is_relative_to(root.resolve()) and path.is_file() else None


def leaves_tests(request: str) -> bool:
    """The request says to keep the tests unchanged ("without changing the test", "leave
    the tests themselves alone")."""
    return any(not _TOLD_NOT_ASKED.search(request[:match.start()]) for match in _KEEPS_TESTS.finditer(request))


def runs_tests(command: str) -> bool:
    """The command runs tests: a test runner, or a program given a test file (`python x_test.py`)."""
    return bool(_TEST_PROGRAMS.search(command)) or any(is_test_path(word) for word in command.split()[1:])


def test_runner_named(command: str) -> bool:
    """The command starts a test runner (which counts its tests), not a test file run directly."""
    return bool(_TEST_PROGRAMS.search(command))


def _asks(text: str) -> bool:
    stripped = text.strip()
    return stripped.endswith("?") or bool(_QUESTION_START.match(stripped))


_MODEL_FILE = re.compile(
    r"\b(?:like|similar\s+to|based\s+on|same\s+as|modell?ed\s+on|in\s+the\s+style\s+of)\s+"
    r"(?:the\s+one\s+in\s+|the\s+)?`?((?:\.{1,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})`?(?![\w/-]|'s\b)",
    re.I,
)
"""A file named as the model of a new one ("write backup.sh like clean.sh"): to follow, not to change."""


def _model_files(text: str, index: _FileIndex) -> list[str]:
    return [found for match in _MODEL_FILE.finditer(text)
            if (found := index.find(posixpath.normpath(match.group(1)))) is not None]


def _kept_files(text: str, index: _FileIndex) -> tuple[str, ...]:
    """The project files named in the request's clauses that say to leave them as they are:
    as a whole ("don't change app_test.py", "the tests in test_app.py"), not a part of them
    ("app.py's API", "the signature of parse() in app.py"), and not named after "except"
    ("anything but app.py" is the file to change); a clause that tells what was done ("I did
    not change app.py") keeps nothing. A file named as the model of a new one ("a backup.sh
    like clean.sh") is kept too: asked so, a model changed the model instead."""
    kept = _model_files(text, index) if _NEW_FILE_WORDS.search(text) else []
    for clause in _KEEP_CLAUSE.finditer(text):
        if _TOLD_NOT_ASKED.search(text[:clause.start()]):
            continue
        words = next(group for group in clause.groups() if group is not None)
        words = _EXCEPT.split(words, maxsplit=1)[0]
        for match in _PATH.finditer(words.replace("\\", "/")):
            found = index.find(posixpath.normpath(match.group(1)))
            if found is not None and _whole_file(words[:match.start()], words[match.end():]):
                kept.append(found)
    return _unique(kept)


_TOLD_NOT_ASKED = re.compile(
    r"\b(?:did|does|have|has|had|was|were|is|are|could|would)(?:\s+(?:really|even|just|ever))?\s+$",
    re.I,
)
"""Words before a "not change" that make it a statement ("I did not change it"), not a request."""
_EXCEPT = re.compile(
    r"\b(?:except|but|besides|apart\s+from|aside\s+from|other\s+than|save\s+for|outside\s+(?:of\s+)?)\b", re.I
)
_WHOLE_FILE_WORDS = frozenset({
    "the", "a", "an", "any", "either", "file", "files", "test", "tests", "existing", "in", "of",
    "inside", "or", "and", "nor", "anything", "everything", "code", "at", "all", "this", "that",
    "contents", "content", "its", "my", "our",
})
"""Words that may come between "don't change" and a file it keeps whole."""


def _whole_file(before: str, after: str) -> bool:
    """The clause's words around a file name speak of the whole file."""
    if re.match(r"['’]s\b", after):
        return False
    words = [word.lower() for word in re.findall(r"[^\s,]+", before)]
    if "file" in words or "files" in words:  # "the config file config.yaml": what it is called
        words = words[max(i for i, word in enumerate(words) if word in ("file", "files")):]
    return all(word in _WHOLE_FILE_WORDS or word.endswith("/") or _PATH.fullmatch(word) for word in words)


def _code_names(text: str, files: list[str]) -> tuple[str, ...]:
    """The names of code the request names (see `RequestReading.code_names`)."""
    found = []
    backticked = {match.group(1).strip() for match in _BACKTICKED.finditer(text)}
    for match in _CODE_NAME.finditer(text):
        word = match.group(0)
        if word in backticked or _CODE_SHAPED.search(word) or _CALLED_WITH.match(text, match.end()):
            found.append(word.removesuffix("()"))
    for match in _RENAMED.finditer(text):
        found += [match.group("old").rstrip("-"), match.group("new").rstrip("-")]
    taken = {part for name in files for part in re.split(r"[/.]", name)}
    return _unique(name for name in found if name.strip("_-") and name not in taken)


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _named_paths(text: str) -> list[str]:
    """File names in the request, in order, `\\` read as `/` and `./` dropped."""
    names = []
    for match in _PATH.finditer(text.replace("\\", "/")):
        name = posixpath.normpath(match.group(1))
        if not name.startswith("../") and name != "..":
            names.append(name)
    return names


class _FileIndex:
    """The project's files by relative path and by base name."""

    def __init__(self, names: Iterable[str]) -> None:
        self.paths = {posixpath.normpath(name) for name in names}
        self.by_base: dict[str, list[str]] = {}
        for path in sorted(self.paths):
            self.by_base.setdefault(posixpath.basename(path), []).append(path)

    def find(self, name: str) -> str | None:
        """The project file `name` names: itself, else the one file whose path ends with it."""
        if name in self.paths:
            return name
        ending = [p for p in self.by_base.get(posixpath.basename(name), []) if p.endswith("/" + name)]
        return ending[0] if len(ending) == 1 else None

    def has(self, name: str) -> bool:
        return self.find(posixpath.normpath(name)) is not None


def _named_commands(text: str, index: _FileIndex) -> tuple[str, ...]:
    """Commands in backticks (a program and its arguments; a bare program only when the
    request asks to run it) and after "run"/"execute" (a known program, or a project file)."""
    found: list[str] = []
    asks_run = bool(_RUN.search(text))
    for match in _BACKTICKED.finditer(text):
        span = match.group(1).strip()
        if _is_command(span, index, single_ok=asks_run and _follows_run(text, match.start())):
            found.append(span)
    for match in _RUN_CLAUSE.finditer(text):
        clause = match.group(1).strip()
        first = clause.split()[0] if clause else ""
        if first in _RUNNERS or first.startswith("./") or index.has(first):
            found.append(clause)
    return _unique(found)


def _follows_run(text: str, at: int) -> bool:
    """The backticks at `at` come right after a run verb ("run `pytest`")."""
    return bool(re.search(rf"\b(?:{RUN_VERBS})\s*$", text[:at], re.I))


def _is_command(span: str, index: _FileIndex, single_ok: bool) -> bool:
    words = span.split()
    first = words[0] if words else ""
    if not re.fullmatch(r"(?:\.{0,2}/)?[\w.+/-]+", first) or first in _CODE_KEYWORDS:
        return False
    if len(words) == 1:
        return single_ok and (first in _RUNNERS or first.startswith("./") or index.has(first))
    return words[1] not in ("=", "==", ":=", "+=", "-=") and not words[1].startswith("(")
