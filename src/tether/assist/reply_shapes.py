"""What a reply shows instead of doing: a command for the user to run, a new version of a file.

Small models write the command they mean in a shell block ("run `python summary.py`") and
the new file in a fenced block, and stop. The rules find those, so the message they send can
write out the call that would do it; the model still decides whether to make it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from ..host import read_file_bytes

_SHELL_BLOCK = re.compile(r"^[ \t]*```[ \t]*(sh|bash|shell|console|zsh|)[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)
_COMMAND_START = re.compile(
    r"^(python3?|pytest|node|bash|sh|\./|make|grep|wc|cat|ls|head|tail|awk|sed|find|go|cargo|npm test)\b"
)
_NOT_SUGGESTED = re.compile(
    r"^(cd|pip3?|conda|apt(-get)?|brew|sudo|curl|wget|rm|git clone|npm install|export|source|touch|mkdir|mv|cp|chmod)\b"
)
NUMBERED_STEPS = re.compile(r"^\s*1[.)]\s+\S.*\n(?:.*\n)*?\s*2[.)]\s+\S", re.M)
"""Two numbered steps ("1. Open ...", "2. ..."): a plan written for the user."""
CODE_BLOCK = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)
"""A fenced block: its label, its body."""
_SHELL_LABELS = frozenset({"sh", "bash", "shell", "console", "zsh"})
VERSION_MAX_CHARS = 3_000
"""Files up to this size are compared with a reply's code blocks (and offered back whole)."""


def file_text(path: Path, limit: int) -> str | None:
    """The text of a file of at most `limit` bytes; None when longer, binary or unreadable."""
    try:
        data = read_file_bytes(path, limit)  # a FIFO is refused, never waited on
    except OSError:
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


def shown_command(text: str) -> str | None:
    """The command a reply shows in a shell code block for the user to run (the last such
    block's first command line), or None. An untagged block counts only when it starts like
    a command; set-up steps (cd, pip install, sudo ...) are never suggested back."""
    for match in reversed(list(_SHELL_BLOCK.finditer(text))):
        tagged = bool(match.group(1))
        for line in match.group(2).splitlines():
            line = line.strip().removeprefix("$ ").strip()
            if not line or line.startswith("#") or re.match(r"^cd\s", line):
                continue
            if _NOT_SUGGESTED.match(line) or not (tagged or _COMMAND_START.match(line)):
                break
            return line
    return None


def looks_like_command(value: str) -> bool:
    """A value given as a session that is really a command line ("python quiz.py")."""
    return " " in value.strip() or bool(re.search(r"\.\w{1,4}$", value))


def shown_version(text: str, files: dict[Path, str]) -> tuple[str, str] | None:
    """(shown path, content) when a code block of the reply is a new version of one of `files`
    (resolved path -> how the model named it): it keeps at least half of the file's lines and
    has a line the file does not (a copy missing a function must not be offered as the write
    to send). The block most like a file wins; None when none is a version of any."""
    blocks = [m.group(2) for m in CODE_BLOCK.finditer(text) if m.group(1).lower() not in _SHELL_LABELS]
    if not blocks:
        return None
    olds = {shown: file_text(path, VERSION_MAX_CHARS) or "" for path, shown in files.items()}  # each read once
    best: tuple[float, str, str] | None = None
    for block in blocks:
        for shown, old in olds.items():
            body = without_label(block, shown, old)
            lines = {line.strip() for line in body.splitlines() if line.strip()}
            old_lines = [line.strip() for line in old.splitlines() if line.strip()]
            if not old_lines or lines <= set(old_lines):
                continue  # no line new or changed: a copy of the file (or of part of it), no version
            kept = sum(line in lines for line in old_lines) / len(old_lines)
            if kept >= 0.5 and (best is None or kept > best[0]):
                best = (kept, shown, body)
    return None if best is None else (best[1], best[2])


_LABEL_LINE = re.compile(r"^[ \t]*(?:#|//|--|;|<!--|/\*)[ \t]*(?P<name>[\w./-]+?)[ \t]*(?:-->|\*/)?[ \t]*\n")


def without_label(body: str, shown: str, old: str) -> str:
    """The block without a first line that only names the file in a comment (`# settings.json`
    over a JSON file, `// lib/table.js`): a label the model put on the block, not a line of the
    file (unless the file starts with it), which written in would break a format with no
    comments."""
    label = _LABEL_LINE.match(body)
    if label is None or old.startswith(label.group(0).strip()):
        return body
    name = label.group("name")
    return body[label.end():] if name in (shown, posixpath.basename(shown)) else body


def python_blocks(text: str) -> list[str]:
    """The bodies of the reply's fences labelled Python or not labelled."""
    return [m.group(2) for m in CODE_BLOCK.finditer(text) if m.group(1).lower() in {"", "python", "py", "python3"}]


_LANGUAGE_LABELS = {
    "py": {"python", "py", "python3"}, "js": {"javascript", "js", "node"},
    "ts": {"typescript", "ts"}, "rb": {"ruby", "rb"}, "go": {"go", "golang"},
    "rs": {"rust", "rs"}, "json": {"json"}, "toml": {"toml"}, "yaml": {"yaml", "yml"},
    "yml": {"yaml", "yml"},
}
"""Files a reply may show whole for the request to create, by suffix: the labels of their
fences (a shell block is a command, a text block may be a made-up count)."""
def shown_new_file(text: str, name: str | None) -> tuple[str, str] | None:
    """(path, content) when the request names one code file that does not exist yet (`name`:
    "write a script convert.py that ...") and the reply shows its code in a fence instead of
    creating it: the one fence labelled in that file's language, or the only fence."""
    if name is None or name.rsplit(".", 1)[-1].lower() not in _LANGUAGE_LABELS:
        return None
    suffix = name.rsplit(".", 1)[1].lower()
    blocks = [(m.group(1).lower(), m.group(2)) for m in CODE_BLOCK.finditer(text)]
    fitting = [body for label, body in blocks if label in _LANGUAGE_LABELS[suffix]]
    if not fitting and len(blocks) == 1 and not blocks[0][0]:
        fitting = [blocks[0][1]]
    if len(fitting) != 1 or not fitting[0].strip():
        return None
    return name, fitting[0]


_NUMBER_GIVEN = re.compile(
    r"\d|\b(zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|none|no)\b", re.I)


_STEP_NUMBERS = re.compile(r"^\s*(?:\d+[.)]|#+\s*step\s+\d+\W)\s", re.M | re.I)
"""The numbers of numbered steps ("1. Locate the function", "### Step 2:"): no answer."""
_CODE_SPANS = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.S)


def gives_number(text: str, request: str = "") -> bool:
    """The answer states some number (in digits or as a word; "no" and "none" count),
    outside numbered steps' numbers and code (`--min 5` in a command it shows is no answer) and other than the numbers
    the request itself gives ("words of 5 or more letters")."""
    given = set(re.findall(r"\d+", request))
    prose = _STEP_NUMBERS.sub(" ", _CODE_SPANS.sub(" ", text))
    return any(m.group() not in given for m in _NUMBER_GIVEN.finditer(prose))


_TEST_FILE = re.compile(
    r"(?:^|/)(?:tests?/|test_[^/]*$|[^/]*_test\.[a-z]+$|[^/]*\.(?:test|spec)\.[a-z]+$)", re.I
)


def is_test_path(shown: str) -> bool:
    return bool(_TEST_FILE.search(shown.replace("\\", "/")))
