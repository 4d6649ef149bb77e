"""What the file tools share: text loaded with its encoding and line endings kept, the
`N:hh|` line form read_file shows, and OS errors turned into messages for the model."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, cast

from tether.core.toolspec import ToolContext, ToolError, ToolOutput
from tether.host import (
    NotARegularFile,
    TooLarge,
    atomic_write_bytes,
    open_regular,
    read_at_most,
)
from tether.tools._paths import display_path, near_names
from tether.tools.nearby import closest_paths

READ_LINE_CAP = 4_000
"""Characters of one line shown by read_file; longer lines (minified code) are cut."""
MAX_READ_BYTES = 64 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
UTF8_BOM = b"\xef\xbb\xbf"


# --- shared helpers ---------------------------------------------------------

_Handler = ParamSpec("_Handler")


def _os_errors_as_tool_errors(handler: Callable[_Handler, ToolOutput]) -> Callable[_Handler, ToolOutput]:
    """An unexpected OSError (permissions, a file where a directory should be)
    becomes a plain message for the model instead of a traceback. `handler` is a tool's
    handler or a method that is one (AstTools'): the call's context is its last argument."""

    @functools.wraps(handler)
    def wrapper(*args: _Handler.args, **kwargs: _Handler.kwargs) -> ToolOutput:
        try:
            return handler(*args, **kwargs)
        except OSError as err:
            ctx = cast(ToolContext, args[-1])
            raise ToolError(_describe_os_error(err, ctx.root)) from err

    return wrapper


def _describe_os_error(err: OSError, root: Path) -> str:
    if isinstance(err, NotARegularFile):
        return (
            f"{display_path(err.path, root)} is {err.kind}, not a regular file; the file "
            "tools only read and write regular files (reading it could wait forever)."
        )
    if isinstance(err, TooLarge):
        return (
            f"{display_path(err.path, root)} gave more than its size said (over "
            f"{err.limit:,} bytes): a kernel file that never ends or a file something keeps "
            "writing to; not copied."
        )
    reason = err.strerror or str(err)
    if err.filename is None:
        return reason
    return f"{reason}: {display_path(Path(os.fsdecode(err.filename)), root)}"


def _not_found(path: Path, ctx: ToolContext, what: str = "File") -> ToolError:
    shown = display_path(path, ctx.root)
    elsewhere = closest_paths(path, ctx.root)
    hint = f" Closest existing paths: {', '.join(elsewhere)}." if elsewhere else ""
    if not path.parent.is_dir():
        parent = display_path(path.parent, ctx.root)
        return ToolError(
            f"{what} not found: {shown} (the directory {parent} does not exist).{hint}"
        )
    similar = near_names(path)
    if similar:
        hint = f" Similar names there: {', '.join(similar)}."
    return ToolError(f"{what} not found: {shown}.{hint}")


def line_hash(text: str) -> str:
    """Two hex characters from a stable hash of a line's text (without its line ending)."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2s(data, digest_size=1).hexdigest()


def _split_keepends(text: str) -> list[str]:
    """Lines split on "\\n" only (like editors and grep), each keeping its ending."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _bare(line: str) -> str:
    """A line without its ending ("\\n" or "\\r\\n")."""
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    return line


def _count_lines(text: str) -> int:
    return len(_split_keepends(text))


def _render_line(number: int, text: str) -> str:
    shown = text
    if len(text) > READ_LINE_CAP:
        shown = text[:READ_LINE_CAP] + f" [... line cut: {len(text):,} characters]"
    return f"{number}:{line_hash(text)}|{shown}"


@dataclass(frozen=True)
class _Loaded:
    """A text file's content and what is needed to write it back the same way."""

    text: str
    encoding: str
    bom: bool = False

    @property
    def newline(self) -> str:
        crlf = self.text.count("\r\n")
        lone_lf = self.text.count("\n") - crlf
        return "\r\n" if crlf and crlf >= lone_lf else "\n"

    def encode(self, text: str, shown: str) -> bytes:
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as err:
            raise ToolError(
                f"{shown} is stored as {self.encoding} and the new text has characters "
                f"it cannot hold ({err.object[err.start : err.end]!r})."
            ) from err
        return UTF8_BOM + data if self.bom else data


def _load_text(path: Path, ctx: ToolContext) -> _Loaded:
    shown = display_path(path, ctx.root)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file. Use list_dir to see its entries.")
    if not path.exists():
        raise _not_found(path, ctx)
    with open_regular(path) as handle:  # a FIFO or device is refused, never waited on
        size = os.fstat(handle.fileno()).st_size
        try:
            if size > MAX_READ_BYTES:
                raise TooLarge(path, MAX_READ_BYTES)
            data = read_at_most(handle, path, MAX_READ_BYTES)  # /proc files report 0 bytes
        except TooLarge:
            raise ToolError(
                f"{shown} is too large to load (over {MAX_READ_BYTES:,} bytes). Use "
                "search_in_file to find the part you need."
            ) from None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(
            f"{shown} looks like a binary file (it contains NUL bytes); not reading it."
        )
    return _decode(data)


def _decode(data: bytes) -> _Loaded:
    bom = data.startswith(UTF8_BOM)
    body = data[len(UTF8_BOM) :] if bom else data
    try:
        return _Loaded(body.decode("utf-8"), "utf-8", bom)
    except UnicodeDecodeError:
        return _Loaded(data.decode("latin-1"), "latin-1")


def _write_bytes(path: Path, data: bytes) -> None:
    """Write atomically (see tether.host.atomic), keeping an existing file's mode. `path` comes
    from ctx.resolve with every symlink followed (so a link updates what it points at and
    stays a link): it is written as checked, not resolved a second time."""
    atomic_write_bytes(path, data)


SYNTAX_CHECK_CHARS = 1_000_000
"""Python files up to this size are parsed after a write, to say at once when they broke."""


def python_syntax_note(path: Path, text: str, shown: str) -> str:
    """A line for a write's result when a Python file no longer parses ("" otherwise): a
    small model writes the command that runs a script as its code, or cuts a function in
    half, and learns of it only when something runs it."""
    if path.suffix not in (".py", ".pyw") or len(text) > SYNTAX_CHECK_CHARS:
        return ""
    try:
        compile(text, shown, "exec", dont_inherit=True)
    except SyntaxError as err:
        where = f" (line {err.lineno})" if err.lineno else ""
        return f"\nWarning: {shown} is not valid Python now: {err.msg}{where}. Fix it before running it."
    except ValueError:  # a NUL byte in the text
        return f"\nWarning: {shown} is not valid Python now: it holds a NUL byte."
    return ""
