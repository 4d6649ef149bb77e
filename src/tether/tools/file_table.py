"""The file tools' table: read_file, write_file, edit_file, delete_file, copy_file,
create_dir, list_dir and search_in_file.

Each entry names its handler by where it lives (`files`, `file_edit`, `file_search`) and its
parameters model likewise (`params`): the table is built at every start, before the first
request can be sent, and imports none of them; a handler's module (with what it needs: the
text loading, the copy and outside-value notes, an edit's checks, the search engines) loads
at the tool's first call.
"""

from __future__ import annotations

from typing import Any

from tether.core.toolspec import Tool

from .limits import READ_CHAR_CAP, params_named


def _tool(name: str, description: str, params: str, handler: str, **flags: Any) -> Tool:
    return Tool(name=name, description=description, params=params, handler=handler, **flags)


FILE_TOOLS: list[Tool] = [
    _tool(
        "read_file",
        "Read a text file. Each line is shown as 'N:hh|text' (N = line number, hh = line "
        "hash); edit_file accepts 'N:hh' as an anchor. Long files are paged: use offset.",
        params_named("ReadFileParams"),
        "tether.tools.files:read_file",
        reads=True,
        main_arg="filepath",
        path_params=("filepath",),
        result_cap=READ_CHAR_CAP + 1_000,
    ),
    _tool(
        "write_file",
        "Create a file or overwrite it with the complete new content (parents are created).",
        params_named("WriteFileParams"),
        "tether.tools.files:write_file",
        writes_files=True,
        block_params=("content",),
        main_arg="filepath",
        path_params=("filepath",),
        written_params=("filepath",),
    ),
    _tool(
        "edit_file",
        "Edit a file in one of two ways: replace old_content (exact text occurring once) "
        "with new_content, or replace the lines start_anchor..end_anchor ('N:hh' from "
        "read_file) with new_content. Returns a diff.",
        params_named("EditFileParams"),
        "tether.tools.file_edit:edit_file",
        writes_files=True,
        block_params=("old_content", "new_content"),
        main_arg="filepath",
        path_params=("filepath",),
        written_params=("filepath",),
        reads_written=True,
    ),
    _tool(
        "delete_file",
        "Delete one file (not a directory).",
        params_named("DeleteFileParams"),
        "tether.tools.files:delete_file",
        writes_files=True,
        main_arg="filepath",
        path_params=("filepath",),
        written_params=("filepath",),
    ),
    _tool(
        "copy_file",
        "Copy a file to a new path; refuses to overwrite an existing destination.",
        params_named("CopyFileParams"),
        "tether.tools.files:copy_file",
        writes_files=True,
        main_arg="source",
        path_params=("source", "destination"),
        written_params=("destination",),
    ),
    _tool(
        "create_dir",
        "Create a directory and any missing parents.",
        params_named("CreateDirParams"),
        "tether.tools.files:create_dir",
        writes_files=True,
        main_arg="path",
        path_params=("path",),
        written_params=("path",),
    ),
    _tool(
        "list_dir",
        "List a directory: subdirectories first (with a trailing '/'), then files with sizes.",
        params_named("ListDirParams"),
        "tether.tools.files:list_dir",
        reads=True,
        main_arg="path",
        path_params=("path",),
        result_cap=32_000,
    ),
    _tool(
        "search_in_file",
        "Search a file, or every file under a directory, for a Python regular expression; "
        "prints 'path:line: text'. Skips .git, ignored, binary and very large files.",
        params_named("SearchInFileParams"),
        "tether.tools.file_search:search_in_file",
        reads=True,
        main_arg="pattern",
        path_params=("path",),
    ),
]
