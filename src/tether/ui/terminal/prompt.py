"""Input: prompt_toolkit with persistent history, completion, multi-line keys, @mentions."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.output import ColorDepth

from tether.engine.images import is_image_file
from tether.host import (
    SECRET_MODE,
    NotARegularFile,
    ProjectFiles,
    TooLarge,
    make_parents,
    open_regular,
    read_at_most,
)

from .paste import Pastes

MENTION = re.compile(r"(?<![\w@])@([\w./~-][\w./~-]*)")
MAX_ATTACH_CHARS = 60_000
MAX_ATTACH_BYTES = 4 * MAX_ATTACH_CHARS
"""Bytes read of an attached file: enough for its first MAX_ATTACH_CHARS characters."""
MAX_HISTORY_BYTES = 64 * 1024 * 1024
"""The input history read at start: a larger file is left alone (kept in memory only)."""
COUNT_CHUNK = 1024 * 1024
"""Bytes read at a time when counting the lines of a file too long to attach whole."""
COMPLETED_FILES = 5000
"""Project files offered to @ completion (a huge tree is not listed whole per key press)."""


HELP_PREFIX = "/help "
"""After it, the docs' topics complete."""


class TetherCompleter(Completer):
    """Slash commands (with their help) at the start of a line, the docs' topics after
    `/help `; @paths anywhere."""

    def __init__(self, commands: Callable[[], Sequence[tuple[str, str]]], files: ProjectFiles) -> None:
        self.commands = commands
        self.files = files

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for name, help_text in self.commands():
                if name.startswith(text):
                    yield Completion(name, -len(text), display_meta=help_text)
            return
        if text.startswith(HELP_PREFIX) and " " not in text[len(HELP_PREFIX):]:
            from tether.ui.docs_pages import topics  # not before the first prompt is drawn

            partial = text[len(HELP_PREFIX):]
            for topic in topics():
                if topic.startswith(partial):
                    yield Completion(topic, -len(partial))
            return
        word = text.rsplit(None, 1)[-1] if text.strip() else ""
        if word.startswith("@"):
            partial = word[1:]
            for name in self.files.names(COMPLETED_FILES):
                if partial.lower() in name.lower():
                    yield Completion("@" + name, -len(word))


def key_bindings(pastes: Pastes | None = None) -> KeyBindings:
    """Enter sends; Alt-Enter or Ctrl-J adds a line; Ctrl-C clears the line, or exits on an
    empty one; a large paste goes in as one placeholder line (`paste.Pastes`)."""
    keys = KeyBindings()

    if pastes is not None:
        @keys.add(Keys.BracketedPaste)
        def _paste(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text(pastes.insertion(event.data))

    @keys.add("escape", "enter")
    @keys.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    return keys


class SafeFileHistory(FileHistory):
    """Input history in a file that may fail: the first read or write error is reported
    through `warn`, after which the file is left alone and the history lives in memory.

    Only a regular file of at most MAX_HISTORY_BYTES is read or appended to: a FIFO or a
    device there would make opening it wait forever (or read forever). The file holds
    everything typed, so it is created owner-only."""

    def __init__(self, path: Path, warn: Callable[[str], None]) -> None:
        super().__init__(str(path))
        self.path = path
        self.warn = warn
        self.failed = False

    def load_history_strings(self) -> Iterable[str]:
        try:
            self._check_regular()
            return list(super().load_history_strings())
        except OSError as exc:
            self._give_up(exc)
            return []

    def store_string(self, string: str) -> None:
        if self.failed:
            return
        try:
            self._check_regular()
            _create_owner_only(self.path)
            super().store_string(string)
        except OSError as exc:
            self._give_up(exc)

    def _check_regular(self) -> None:
        """NotARegularFile or TooLarge unless the file is absent or a regular file that fits."""
        try:
            with open_regular(self.path) as handle:
                if os.fstat(handle.fileno()).st_size > MAX_HISTORY_BYTES:
                    raise TooLarge(self.path, MAX_HISTORY_BYTES)
        except FileNotFoundError:
            pass

    def _give_up(self, exc: OSError) -> None:
        if not self.failed:
            self.failed = True
            self.warn(f"The input history {self.path} cannot be used ({_reason(exc)}); "
                      "this session's history is kept in memory only.")


def _create_owner_only(path: Path) -> None:
    """Create `path` empty and 0600 unless something is there already."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, SECRET_MODE))


def open_history(path: Path, warn: Callable[[str], None]) -> History:
    """The history file, or an in-memory history (with one warning) when its folder cannot be made."""
    try:
        make_parents(path, private=True)
        path.parent.mkdir(exist_ok=True)  # FileExistsError when a file is in the way
    except OSError as exc:
        reason = "a file is in the way" if isinstance(exc, FileExistsError) else _reason(exc)
        warn(f"The folder {path.parent} cannot be created ({reason}); "
             "this session's input history is kept in memory only.")
        return InMemoryHistory()
    return SafeFileHistory(path, warn)


def _reason(exc: OSError) -> str:
    if isinstance(exc, NotARegularFile):
        return f"it is {exc.kind}"
    if isinstance(exc, TooLarge):
        return f"it holds more than {exc.limit:,} bytes"
    return exc.strerror or str(exc) or type(exc).__name__


def _ignore(_message: str) -> None:
    pass


def with_safe_mouse_reports(keys: KeyBindings) -> KeyBindings:
    """Add a mouse-report handler that survives what only looks like one.

    The input parser takes any `ESC [ digits;... m` for a mouse report, so a colour code
    typed or pasted without bracketed paste (`ESC[31m`) reached prompt_toolkit's handler,
    which failed on it ("Unhandled exception in event loop"). Such a sequence becomes the
    text after its ESC, as other unknown sequences do."""
    from prompt_toolkit.key_binding.bindings.mouse import load_mouse_bindings

    real = next(b.handler for b in load_mouse_bindings().bindings
                if b.keys == (Keys.Vt100MouseEvent,))

    @keys.add(Keys.Vt100MouseEvent)
    def _mouse(event: KeyPressEvent) -> object:
        try:
            return real(event)
        except (ValueError, KeyError, IndexError):
            event.current_buffer.insert_text(event.data.lstrip("\x1b"))
            return None

    return keys


def make_session(
    history: Path,
    completer: Completer,
    toolbar: Callable[[], FormattedText | str],
    warn: Callable[[str], None] = _ignore,
    pastes: Pastes | None = None,
    colours: bool = True,
) -> PromptSession:
    """The input line; `warn` hears (once) when the history file cannot be used; `pastes`
    keeps the large pastes the line shows as placeholders; without `colours` (theme none,
    NO_COLOR) it is drawn in black and white."""
    return PromptSession(
        color_depth=None if colours else ColorDepth.DEPTH_1_BIT,
        history=open_history(history, warn),
        completer=completer,
        complete_while_typing=True,
        key_bindings=with_safe_mouse_reports(key_bindings(pastes)),
        bottom_toolbar=toolbar,
        multiline=False,
        enable_open_in_editor=True,
    )


def expand_mentions(text: str, root: Path) -> tuple[str, list[str]]:
    """Attach the contents of every @path that names a file inside the project (an image
    file's bytes go as an image, `engine.images.attach_images`); the second
    value names each file attached, with what was cut of a large one."""
    attached: list[str] = []
    names: list[str] = []
    blocks: list[str] = []
    for match in MENTION.finditer(text):
        name = match.group(1).rstrip(".,;:)")
        path = (root / name).resolve()
        if name in names or not path.is_file() or not _inside(path, root) or is_image_file(path):
            continue  # an image goes as an image (engine/images.py), not as text
        try:
            block, label = attachment(path, name)
        except OSError:
            continue
        names.append(name)
        attached.append(label)
        blocks.append(block)
    if not blocks:
        return text, []
    return text + "\n\nAttached files:\n" + "\n".join(blocks), attached


def attachment(path: Path, name: str) -> tuple[str, str]:
    """The block that carries the file to the model and the label the user sees. A file too
    long to attach whole is cut at a line end, and both say what was cut and how the rest
    can be read, so neither the model nor the user takes the head for the whole file."""
    with open_regular(path) as handle:  # a FIFO swapped in is refused, not waited on
        size = os.fstat(handle.fileno()).st_size
        head = read_at_most(handle, path, MAX_ATTACH_BYTES + 1, cut=True)
        text = head[:MAX_ATTACH_BYTES].decode(errors="replace")
        if len(head) <= MAX_ATTACH_BYTES and len(text) <= MAX_ATTACH_CHARS:
            return f'<file path="{name}">\n{text}\n</file>', name
        kept = text[:MAX_ATTACH_CHARS]
        if "\n" in kept:
            kept = kept[: kept.rindex("\n") + 1]  # whole lines only
        total = lines_in(handle, head) if size <= read_file_limit() else None
    lines = kept.count("\n")
    cut = cut_summary(name, lines, len(kept), size, total)
    return (f'<file path="{name}">\n{kept}\n[... cut: {cut} ...]\n</file>',
            f"{name} (cut: {cut})")


def read_file_limit() -> int:
    """The largest file read_file loads (its module is the file tools', imported with the
    runtime after the first prompt is drawn)."""
    from tether.tools.file_text import MAX_READ_BYTES

    return MAX_READ_BYTES


def lines_in(handle: BinaryIO, head: bytes) -> int:
    """The lines of the whole file: those in `head` (already read) and in the rest of `handle`."""
    count, last = head.count(b"\n"), head[-1:]
    while chunk := handle.read(COUNT_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (1 if last and last != b"\n" else 0)


def cut_summary(name: str, lines: int, chars: int, size: int, total_lines: int | None) -> str:
    """What of a file was attached, of how much, and how to read on from there."""
    of = f"{total_lines:,} lines, {size:,} bytes" if total_lines is not None else f"{size:,} bytes"
    what = (f"the first {lines:,} lines ({chars:,} characters) of {of} are attached" if lines
            else f"the first {chars:,} characters of its first line ({of}) are attached")
    if size > read_file_limit():
        return (f"{what}; read_file cannot read a file this large, a command can "
                f"(e.g. sed -n '{lines + 1},{lines + 200}p' {name})")
    return f"{what}; read the rest with read_file filepath={name} offset={lines + 1}"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root.resolve())
    except ValueError:
        return False
    return True
