"""The project files a request mentions by a word of their path, when it names no file.

"What does the mailer do with a bounced message?" names no file, but the project has a
`mailer/` folder; "give the indexer 4 threads; the other daemons keep theirs" has
`deploy/daemons.ini`. A small model asked such a thing answers from the project map with
code it made up, or writes a whole settings file it guessed, without opening one. So when a
request names no project file, the files whose folder or name (without its suffix) the
request says as a word are read first, the most words matched first (aider ranks the files
whose names a request mentions first in the same way). Test files count only when the
request speaks of tests. A test file is mentioned by its subject too ("the tokenizer tests"
mentions `tests/test_tokenizer.py`; `lexer_test.go`, `lexer.test.js` and `lexer.spec.ts`
name theirs the same way).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from .reply_shapes import is_test_path

_WORD = re.compile(r"[a-z][a-z0-9_-]{3,}")
"""A word of four characters or more: shorter ones (`app`, `db`, `io`) name too much."""
_PLURAL_FROM = 5
"""A trailing "s" is dropped from words this long (`daemons` finds `daemon.py`)."""
_LAYOUT_WORDS = frozenset({"test", "spec", "source", "code", "file", "folder", "project"})
"""Words of a project's layout, not of what it does: "add tests for the parser" means the
parser, not every file under tests/ (folded, as the request's words are)."""


_SPEAKS_OF_TESTS = re.compile(r"\b(?:tests?|specs?|testing)\b", re.I)
"""Asks for a test, says one fails, or says to leave them alone: the test files are wanted."""


def speaks_of_tests(request: str) -> bool:
    """Whether the request speaks of tests, so that test files are among what it means."""
    return _SPEAKS_OF_TESTS.search(request) is not None
_TEST_AFFIX = re.compile(r"^tests?_|(?:[._]test|[._]spec|_tests)$", re.I)
"""How a test file's name adds to its subject's: `test_x`, `x_test`, `x.test`, `x.spec`."""


def _folded(word: str) -> str:
    word = word.lower()
    return word[:-1] if len(word) >= _PLURAL_FROM and word.endswith("s") else word


def mentioned_files(request: str, project_files: Iterable[str]) -> list[str]:
    """The project files a path word of which the request says, the most words matched first,
    then the shallowest, then by name (a package's `__init__.py` last); none of them hidden,
    and no test file unless the request speaks of tests."""
    wants_test = speaks_of_tests(request)
    words = {_folded(word) for word in _WORD.findall(request.lower())} - _LAYOUT_WORDS
    ranked: list[tuple[int, int, bool, str]] = []
    for path in project_files:
        parts = path.split("/")
        test = is_test_path(path)
        if any(part.startswith(".") for part in parts) or (test and not wants_test):
            continue
        stem = posixpath.splitext(parts[-1])[0]
        subject = _TEST_AFFIX.sub("", stem) if test else stem
        names = {_folded(part) for part in (*parts[:-1], stem, subject) if part}
        matched = len(names & words)
        if matched:
            ranked.append((-matched, len(parts), stem.startswith("__"), path))
    return [path for *_, path in sorted(ranked)]
