"""The project files that hold the code a request names: read first, where it is defined,
then where it is used.

"Carry the new column through: load_users fills it in, describe() shows it" names no file,
only functions. Told only the project's file list, a small model answered with code it made
up for both, never having opened the two modules that define them; asked to rename a
function everywhere, a model changes the one file it found. A request's code names (by their
shape: `load_users`, `describe()`, `getUser`; see `RequestReading.code_names`) are looked up
in the project's source and settings files as whole words: the files that define one come
first, then the files that use one, so the model starts from the code it is asked to change
(aider adds the files whose identifiers a request mentions in the same way). A name that too
many files use gives only the files that define it: the model has to search for the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ..tools._paths import is_inside_resolved, kernel_resolved
from .leftovers import defines, has_word
from .reply_shapes import file_text, is_test_path

SOURCE_SUFFIXES = frozenset({
    "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "rs", "rb", "java", "kt", "c", "h", "cc",
    "cpp", "cs", "php", "sh", "bash", "json", "toml", "yaml", "yml", "ini", "cfg", "conf",
})
"""Code and settings files: where a name of code or a setting is defined or used."""
FILE_LIMIT = 64 * 1024
"""A file bigger than this is not searched (a generated or vendored file, a data dump)."""
SEARCHED_AT_MOST = 400
"""A project with more candidate files than this is not searched at the turn's start."""
USERS_AT_MOST = 4
"""A name used in more files than this gives only the files that define it."""


def code_files(request_names: Sequence[str], root: Path, project_files: Iterable[str],
               wants_test: bool = False) -> list[str]:
    """The project files that define one of the names, then those that use one (test files
    only when `wants_test`), each once, in the project's order within each group."""
    names = [name.removesuffix("()") for name in request_names if not name.startswith("-")]
    if not names:
        return []
    candidates = [path for path in project_files
                  if path.rsplit(".", 1)[-1].lower() in SOURCE_SUFFIXES
                  and not any(part.startswith(".") for part in path.split("/"))
                  and (wants_test or not is_test_path(path))]
    resolved_root = kernel_resolved(root)
    if len(candidates) > SEARCHED_AT_MOST or resolved_root is None:
        return []
    texts = {path: text for path in candidates  # a link out of the project is not read
             if is_inside_resolved(root / path, resolved_root)
             and (text := file_text(root / path, FILE_LIMIT)) is not None}
    defining: list[str] = []
    using: list[str] = []
    for name in names:
        users = [path for path, text in texts.items() if has_word(name, text)]
        defined_in = [path for path in users if defines(name, texts[path])]
        defining += defined_in
        if len(users) <= USERS_AT_MOST:
            using += [path for path in users if path not in defined_in]
    return list(dict.fromkeys([*defining, *using]))
