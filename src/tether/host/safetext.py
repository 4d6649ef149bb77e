"""Text that cannot be encoded, made safe to show, send and save.

Python strings may hold lone surrogates: a file name or argv that is not UTF-8
decodes (surrogateescape) to U+DC80..U+DCFF, one per bad byte, and a model's
JSON may carry an escaped `\\ud800`. UTF-8 refuses to encode them, so one such
character in a tool result or an argument used to end a request, a session
save or an output stream. Every place where text leaves the process (the
request body, a state file, stdout) passes it through `clean_text` first.

A byte that was escaped on decoding is shown as `\\xNN` (the byte is not lost,
and a person can read it); any other lone surrogate becomes U+FFFD. A proper
high/low pair (from a `surrogatepass` decode) is joined into its character.

Bad bytes and broken files, in detail:

- `safetext.clean_text` is applied where text leaves the process: the request body
  (`HttpTransport._open`, every provider), state files (`atomic_write_json`/`_text`), the
  one-shot writer (`HeadlessUI.emit`/`progress`) and the terminal (the app's console writes
  through `SafeTextStream`). A surrogate-escaped byte becomes `\\xNN`, any other lone surrogate
  U+FFFD. `Dispatcher.dispatch` cleans each tool result as it enters the history, with a note
  for the model (`cleaned_with_note`), and `_validate` refuses arguments that hold one.
  `cli.run_one_shot` turns any unexpected exception into an error result object, so every
  output format ends with one.
- `prompt.with_safe_mouse_reports` wraps prompt_toolkit's mouse-report handler: its input
  parser takes `ESC[<digits>m` (a colour code typed at the prompt) for a report, and the stock
  handler raised on it.
- `statefile.read_json_file` / `read_toml_file` read whatever tether parses from disk into a
  `LoadedFile` whose `problem` names the path and line; nothing raises for a bad file.
  `write_json_state` refuses (`StateFileError`) to overwrite a file whose read had a problem.
  `TrustStore` and `ConnectionStore` use both; `KeyStore`, `MemoryStore` and `SessionStore`
  keep their own readers with the same rule (refuse to save over a corrupt file).
- `statefile.dangling_link` tells a symbolic link to nothing from an absent file: every
  state reader reports it instead of reading it as empty (which would drop a rules file's deny
  rules, and make the next save create a file where the link points).
- A rules file that cannot be read, or holds a deny rule that cannot be parsed, lands in
  `RuleSet.unreadable`; `ApprovalPolicy.
  rules_file_verdict` then fails closed: calls with side effects ask, and are denied under
  `--auto` (one-shot mode has nobody to ask, so they are refused there too).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import select
import sys
from typing import Any, TextIO

REPLACEMENT = "\ufffd"
_SURROGATES = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def has_bad_chars(text: str) -> bool:
    """True when `text` holds a character that UTF-8 cannot encode."""
    return _SURROGATES.search(text) is not None


def count_bad_chars(text: str) -> int:
    return len(_SURROGATES.findall(text))


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced: escaped bytes as `\\xNN`, others as U+FFFD."""
    if not has_bad_chars(text):  # the common case costs one regex scan
        return text
    text = _PAIR.sub(_join_pair, text)
    text = _ESCAPED_BYTE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    return _SURROGATES.sub(REPLACEMENT, text)


def clean_data(value: Any) -> Any:
    """A JSON-shaped value (dicts, lists, strings, numbers) with every string cleaned,
    keys included. Other values are returned as they are."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_data(k): clean_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_data(v) for v in value]
    return value


def cleaned_with_note(text: str) -> str:
    """`clean_text`, plus a first line saying that something was replaced (for a model
    that would otherwise take `\\xe9` for the literal four characters)."""
    bad = count_bad_chars(text)
    if not bad:
        return text
    note = (
        f"[note: {bad} character(s) here were not valid UTF-8 text: bytes of a name or text "
        "that is not UTF-8 are shown as \\xNN, other broken characters as \ufffd]"
    )
    return note + "\n" + clean_text(text)


def bad_char_fields(value: Any, where: str = "") -> list[str]:
    """The names of the fields of a JSON-shaped value whose strings hold a lone surrogate."""
    if isinstance(value, str):
        return [where or "value"] if has_bad_chars(value) else []
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in bad_char_fields(v, _join(where, str(k)))]
    if isinstance(value, (list, tuple)):
        return [f for i, v in enumerate(value) for f in bad_char_fields(v, _join(where, str(i)))]
    return []


def _join_pair(match: re.Match[str]) -> str:
    return match.group().encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def writes_utf8(stream: TextIO) -> bool:
    """True when `stream` encodes as UTF-8 (so any cleaned text can be written as it is)."""
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("-", "")
    return encoding in ("utf8", "utf8sig")


def write_safely(stream: TextIO, text: str) -> None:
    """Write and flush `text`; what the stream's encoding cannot hold is written as an
    escape (a terminal with a Latin-1 or ASCII locale), never an exception. All of it is
    written, or OSError (BrokenPipeError when the reader went away) is raised."""
    raw = unbuffered_file(stream)
    if raw is None:
        SafeTextStream(stream).write(text)
        stream.flush()
        return
    stream.flush()  # anything the text layer still holds goes first
    encoding = getattr(stream, "encoding", None) or "utf-8"
    write_all(raw, clean_text(text).encode(encoding, "backslashreplace"))


def unbuffered_file(stream: TextIO) -> io.RawIOBase | None:
    """The file right under a text stream that has no buffer of its own (`python -u`,
    PYTHONUNBUFFERED=1), else None. Such a stream hands a write to the file once and drops
    what a short write left (a pipe whose reader left in the middle of a long answer):
    the rest was lost without an error, and the run looked as if it had been read whole."""
    buffer = getattr(stream, "buffer", None)
    return buffer if isinstance(buffer, io.RawIOBase) else None


def write_all(raw: io.RawIOBase, data: bytes) -> None:
    """Write every byte of `data` to `raw`, however many writes that takes."""
    view = memoryview(data)
    while view:
        written = raw.write(view)
        if written is None:  # a non-blocking file that is full: wait until it takes more
            select.select([], [raw], [])
            continue
        view = view[written:]


def discard_output(stream: TextIO) -> None:
    """Send what is still to be written to `stream` (and what its buffer holds) to
    /dev/null: its reader has gone away (a closed pipe), and the interpreter's final
    flush must not fail with BrokenPipeError either."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)


class SafeTextStream:
    """A text stream whose writes never fail for an encoding problem (see write_safely):
    the terminal gets it, so a broken character on screen cannot stop the app.

    Without a stream it writes to whatever `sys.stdout` is at the moment, as rich does by
    default: prompt_toolkit swaps in its own stdout while a prompt is on screen."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._fixed = stream

    @property
    def _stream(self) -> TextIO:
        return self._fixed if self._fixed is not None else sys.stdout

    def write(self, text: str) -> int:
        text = clean_text(text)
        try:
            return self._stream.write(text)
        except UnicodeEncodeError:  # raised before anything is written: encoding comes first
            encoding = getattr(self._stream, "encoding", None) or "ascii"
            return self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, flush, ...
        return getattr(self._stream, name)
