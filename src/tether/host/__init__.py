"""How tether touches the machine it runs on: paths resolved as the kernel resolves them,
regular files only, bounded reads, crash-safe writes, state files that fail safe, text safe to
write out, the programs tether runs itself (git hardened against the repository's own config)
and the project's file list. The bottom layer: it imports nothing else of tether, so every
layer above may use it."""

from .atomic import (
    SECRET_MODE,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    make_parents,
)
from .filereads import MAX_CONFIG_BYTES, FileProblem, file_problem, read_file_bytes, reason_of
from .git_guard import (
    MAX_POINTER_BYTES,
    GitConfigError,
    HardenedGit,
    base_git_env,
    hardened_git,
    run_hardened,
    writes_git_files,
)
from .host_programs import host_path, host_program
from .paths import (
    file_identity,
    is_within,
    resolve_from,
    resolve_path,
    resolve_user_path,
    resolved_forms,
)
from .project_files import ProjectFiles, git_listed_names, searchable_files
from .regular_files import (
    CHUNK,
    NotARegularFile,
    TooLarge,
    copy_regular,
    open_regular,
    read_at_most,
    read_small_file,
    refuse_special,
)
from .safetext import (
    SafeTextStream,
    bad_char_fields,
    clean_data,
    clean_text,
    cleaned_with_note,
    count_bad_chars,
    discard_output,
    has_bad_chars,
    write_safely,
    writes_utf8,
)
from .statefile import (
    LoadedFile,
    StateFileError,
    dangling_link,
    read_json_file,
    read_toml_file,
    write_json_state,
)

__all__ = [
    "CHUNK",
    "FileProblem",
    "GitConfigError",
    "HardenedGit",
    "LoadedFile",
    "MAX_CONFIG_BYTES",
    "MAX_POINTER_BYTES",
    "NotARegularFile",
    "ProjectFiles",
    "SECRET_MODE",
    "SafeTextStream",
    "StateFileError",
    "TooLarge",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "bad_char_fields",
    "base_git_env",
    "clean_data",
    "clean_text",
    "cleaned_with_note",
    "copy_regular",
    "count_bad_chars",
    "dangling_link",
    "discard_output",
    "file_identity",
    "file_problem",
    "git_listed_names",
    "hardened_git",
    "has_bad_chars",
    "host_path",
    "host_program",
    "is_within",
    "make_parents",
    "open_regular",
    "read_at_most",
    "read_file_bytes",
    "read_json_file",
    "read_small_file",
    "read_toml_file",
    "reason_of",
    "refuse_special",
    "resolve_from",
    "resolve_path",
    "resolve_user_path",
    "resolved_forms",
    "run_hardened",
    "searchable_files",
    "write_json_state",
    "write_safely",
    "writes_git_files",
    "writes_utf8",
]
