"""Saved sessions: one JSON file per conversation, written after every exchange.

Files live at `home/sessions/<id>.json` and are replaced atomically, so a crash
or a kill at any moment leaves the previous save or the new one, never half.
A file that cannot be read back (bad JSON, wrong shape, unknown message part,
a newer format) is reported as corrupt and left exactly as it is: the store
refuses to overwrite it, so nothing the user might still recover is lost.

The store writes only what the record holds (the conversation, the model and
provider names, token counts); it never adds settings or environment, so no
API key can reach a session file through it.
"""

from __future__ import annotations

import builtins
import datetime as dt
import json
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core.conversation import Conversation
from ..core.messages import (
    Evidence,
    Image,
    Message,
    Part,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
    part_from_dict,
)
from ..core.textclip import clip_words, keep_head
from ..host import atomic_write_json, atomic_write_text, read_file_bytes, reason_of

FORMAT_VERSION = 1
EVIDENCE_RESULT_CAP = 2_000
EXPORT_RESULT_CAP = 2_000
TITLE_CAP = 60
TITLE_SOURCE_CAP = 1_500
MAX_SESSION_BYTES = 256 * 1024 * 1024
"""A session file larger than this is refused as unreadable, never read into memory whole."""
"""Characters of the first question and answer sent when asking a model for a title."""

_ROLES = ("system", "user", "assistant", "tool")


class SessionCorrupt(Exception):
    """A session file (or the sessions folder) cannot be read back; it is left untouched."""

    def __init__(self, path: Path, problem: str, message: str = "") -> None:
        super().__init__(
            message
            or f"Session file {path} is corrupt ({problem}). It was left untouched; "
            "fix it or move it away to use this session id again."
        )
        self.path = path
        self.problem = problem


@dataclass
class SessionRecord:
    id: str
    """Short and sortable: UTC time plus 4 hex digits, e.g. "20261130-061502-ab12"."""
    title: str
    """Empty until the session is titled."""
    root: str
    """The resolved project root the session belongs to."""
    created: float
    updated: float
    provider: str
    model: str
    messages: list[Message] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    """The last turn's evidence (`Evidence.as_dict()` plus a capped "result")."""
    usage: Usage = field(default_factory=Usage)
    autotitle: bool = True
    """False once the user named the session, so an automatic title never replaces theirs."""

    def update_from(self, conv: Conversation) -> None:
        """Take the conversation's current state; call before `SessionStore.save`."""
        self.messages = list(conv.messages)
        self.evidence = evidence_record(conv.evidence)
        self.usage = Usage(**conv.usage.as_dict())
        self.updated = time.time()

    def to_conversation(self) -> Conversation:
        """The history to continue with; last turn's evidence stays in the record only."""
        return Conversation(messages=list(self.messages), usage=Usage(**self.usage.as_dict()))


@dataclass(frozen=True)
class SessionSummary:
    id: str
    title: str
    updated: float
    root: str
    messages: int
    corrupt: str | None = None
    """What is wrong with the file, or None when it loads."""
    first_request: str = ""
    """The first request's start, on one line: what names an untitled session in a list."""


def evidence_record(evidence: Iterable[Evidence]) -> list[dict[str, Any]]:
    """Evidence as stored with a session: its summary plus the head of its result."""
    return [
        {**item.as_dict(), "result": cap_text(item.result, EVIDENCE_RESULT_CAP)}
        for item in evidence
    ]


def cap_text(text: str, limit: int) -> str:
    """The head of `text`, with a note saying how much was left out."""
    return keep_head(text, limit, "more characters not kept")


# ---------------------------------------------------------------- the store


class SessionStore:
    def __init__(self, home: Path) -> None:
        self.directory = Path(home).expanduser() / "sessions"

    def path_for(self, session_id: str) -> Path:
        return self.directory / f"{session_id}.json"

    def new(self, root: Path, provider: str, model: str) -> SessionRecord:
        """A fresh record with an id no file uses yet; nothing is written until `save`."""
        now = time.time()
        return SessionRecord(
            id=self._unused_id(now),
            title="",
            root=_root_key(root),
            created=now,
            updated=now,
            provider=provider,
            model=model,
        )

    def save(self, record: SessionRecord) -> None:
        """Write the record atomically; raises SessionCorrupt instead of replacing a corrupt file."""
        path = self.path_for(record.id)
        if path.exists():
            self._read(path)  # raises SessionCorrupt, and then nothing is written
        atomic_write_json(path, record_to_dict(record), secret=True)

    def load(self, key: str, root: Path | None = None) -> SessionRecord:
        """Find a session by id, unique id prefix, title, or unique title substring.

        An exact id is found wherever the session belongs; the other forms only
        look at sessions of `root` when it is given. Raises LookupError when
        nothing or more than one session matches, SessionCorrupt for a bad file.
        """
        key = key.strip()
        if not key:
            raise LookupError("Give a session id or title.")
        if any(path.stem == key for path in self._files()):
            return self._read(self.path_for(key))
        return self._read(self._match(key, root))

    def list(self, root: Path | None = None) -> builtins.list[SessionSummary]:
        """Every session, newest first; a corrupt file is listed with what is wrong with it."""
        wanted = _root_key(root) if root is not None else None
        found = []
        for path in self._files():
            summary = self._summary(path)
            if wanted is None or summary.root in (wanted, ""):
                found.append(summary)
        return sorted(found, key=lambda s: (s.updated, s.id), reverse=True)

    def latest(self, root: Path) -> SessionRecord | None:
        """The most recently updated session of this project that loads (for `tether -c`)."""
        for summary in self.list(root):
            if summary.corrupt is None:
                try:
                    return self._read(self.path_for(summary.id))
                except SessionCorrupt:
                    continue  # it broke since it was listed; an older one still serves
        return None

    def rename(self, key: str, title: str) -> SessionRecord:
        """Give a session the user's title; automatic titling leaves it alone from now on."""
        clean = " ".join(title.split())
        if not clean:
            raise ValueError("A session title cannot be empty.")
        record = self.load(key)
        record.title = clean
        record.autotitle = False
        self.save(record)
        return record

    def export(self, record: SessionRecord, fmt: Literal["json", "md"], path: Path) -> Path:
        """Write the session as JSON (the saved format) or a Markdown transcript.

        `path` may be an existing directory, in which case the file is named
        after the session id. Returns the path written.
        """
        if fmt not in ("json", "md"):
            raise ValueError(f"Unknown export format {fmt!r}; use 'json' or 'md'.")
        target = Path(path).expanduser()
        if target.is_dir():
            target = target / f"{record.id}.{fmt}"
        if fmt == "json":
            atomic_write_json(target, record_to_dict(record))
        else:
            atomic_write_text(target, render_markdown(record))
        return target

    # ------------------------------------------------------------ helpers

    def _files(self) -> builtins.list[Path]:
        try:
            paths = list(self.directory.iterdir())
            # Hidden names are the atomic writer's temporary files.
            return [
                p for p in paths
                if p.suffix == ".json" and not p.name.startswith(".") and p.is_file()
            ]
        except FileNotFoundError:
            return []
        except OSError as exc:  # a file where the folder should be, or no permission
            reason = exc.strerror or type(exc).__name__
            raise SessionCorrupt(
                self.directory, reason,
                f"The sessions folder {self.directory} cannot be read ({reason}); saved "
                "sessions are unavailable until it is fixed or moved away.",
            ) from None

    def _read(self, path: Path) -> SessionRecord:
        try:
            raw = read_file_bytes(path, MAX_SESSION_BYTES).decode("utf-8")
        except UnicodeDecodeError:
            raise SessionCorrupt(path, "not UTF-8 text") from None
        except OSError as exc:  # permissions, a folder or a FIFO in its place: unreadable
            problem = reason_of(exc)
            raise SessionCorrupt(
                path, problem, f"Session file {path} {problem}. It was left untouched.",
            ) from None
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise SessionCorrupt(path, f"not valid JSON: {exc}") from None
        try:
            record = record_from_dict(data)
        except ValueError as exc:
            raise SessionCorrupt(path, str(exc)) from None
        if record.id != path.stem:
            raise SessionCorrupt(path, f"it holds session {record.id!r}, not {path.stem!r}")
        return record

    def _summary(self, path: Path) -> SessionSummary:
        try:
            record = self._read(path)
        except SessionCorrupt as exc:
            return SessionSummary(path.stem, "", _mtime(path), _root_hint(path), 0, exc.problem)
        return SessionSummary(
            record.id, record.title, record.updated, record.root, len(record.messages),
            first_request=first_request(record.messages),
        )

    def _match(self, key: str, root: Path | None) -> Path:
        summaries = self.list(root)
        by_prefix = [s for s in summaries if s.id.startswith(key)]
        if by_prefix:
            return self._one(key, by_prefix)
        folded = key.casefold()
        titled = [s for s in summaries if s.corrupt is None and s.title]
        for candidates in (
            [s for s in titled if s.title.casefold() == folded],
            [s for s in titled if folded in s.title.casefold()],
        ):
            if candidates:
                return self._one(key, candidates)
        raise LookupError(f"No session matches {key!r}.")

    def _one(self, key: str, candidates: builtins.list[SessionSummary]) -> Path:
        if len(candidates) == 1:
            return self.path_for(candidates[0].id)
        shown = "\n".join(f"  {s.id}  {s.title or '(untitled)'}" for s in candidates[:10])
        more = f"\n  ... and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        raise LookupError(
            f"{len(candidates)} sessions match {key!r}; use a longer id or the exact title:\n"
            f"{shown}{more}"
        )

    def _unused_id(self, now: float) -> str:
        stamp = dt.datetime.fromtimestamp(now, dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        while True:
            candidate = f"{stamp}-{secrets.token_hex(2)}"
            if not self.path_for(candidate).exists():
                return candidate


FIRST_REQUEST_CHARS = 70


def first_request(messages: Iterable[Message]) -> str:
    """The start of the first user message with text, on one line (tool results have none)."""
    text = next((m.text for m in messages if m.role == "user" and m.text.strip()), "")
    return clip_words(" ".join(text.split()), FIRST_REQUEST_CHARS)


def continued_record(store: SessionStore, root: Path, warn: Callable[[str], None],
                     resume: str | None = None, continue_last: bool = False
                     ) -> SessionRecord | None:
    """The saved session -r (by title or id: LookupError, SessionCorrupt) or -c (the folder's
    latest; `warn` says so when there is none) continues; None for a new one. It needs no
    runtime, so the chat opens it before its first prompt and shows where it left off."""
    if resume:
        return store.load(resume, root)
    if not continue_last:
        return None
    latest = store.latest(root)
    if latest is None:
        warn(no_earlier_session(store, root))
    return latest


def no_earlier_session(store: SessionStore, root: Path) -> str:
    """Why -c starts afresh: no session at all, or only ones that cannot be read."""
    broken = sum(1 for s in store.list(root) if s.corrupt)
    if not broken:
        return "No earlier session for this folder; starting a new one."
    which = ("the one saved session is" if broken == 1
             else f"all {broken} saved sessions are")
    return (f"No earlier session of this folder could be continued: {which} unreadable "
            "(see /sessions); starting a new one.")


def _root_key(root: Path) -> str:
    return str(Path(root).expanduser().resolve())


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _root_hint(path: Path) -> str:
    """The root a damaged file still names, so a per-project list can place it; "" if unknown."""
    try:
        data = json.loads(read_file_bytes(path, MAX_SESSION_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return ""
    root = data.get("root") if isinstance(data, dict) else None
    return root if isinstance(root, str) else ""


# ---------------------------------------------------------------- the file format


def record_to_dict(record: SessionRecord) -> dict[str, Any]:
    return {
        "version": FORMAT_VERSION,
        "id": record.id,
        "title": record.title,
        "root": record.root,
        "created": record.created,
        "updated": record.updated,
        "provider": record.provider,
        "model": record.model,
        "autotitle": record.autotitle,
        "usage": record.usage.as_dict(),
        "messages": [m.to_dict() for m in record.messages],
        "evidence": record.evidence,
    }


def record_from_dict(data: Any) -> SessionRecord:
    """Raises ValueError saying what is wrong with the data."""
    if not isinstance(data, dict):
        raise ValueError("the file does not hold a JSON object")
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise ValueError(
            f"unsupported format version {version!r} (this tether reads {FORMAT_VERSION})"
        )
    return SessionRecord(
        id=_field(data, "id", str),
        title=_field(data, "title", str),
        root=_field(data, "root", str),
        created=float(_field(data, "created", (int, float))),
        updated=float(_field(data, "updated", (int, float))),
        provider=_field(data, "provider", str),
        model=_field(data, "model", str),
        messages=[_message(m, i) for i, m in enumerate(_field(data, "messages", list))],
        evidence=_evidence(_field(data, "evidence", list)),
        usage=_usage(_field(data, "usage", dict)),
        autotitle=_field(data, "autotitle", bool),
    )


def _field(data: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in data:
        raise ValueError(f"missing field {name!r}")
    value = data[name]
    # bool is an int in Python; a number field holding true/false is still wrong.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(f"field {name!r} has the wrong type ({type(value).__name__})")
    return value


_PART_FIELDS: dict[type, dict[str, type]] = {
    Text: {"text": str},
    Thinking: {"text": str},
    ToolCall: {"id": str, "name": str, "arguments": dict},
    ToolResult: {"call_id": str, "name": str, "content": str, "is_error": bool},
    Image: {"mime": str, "data": str},
}


def _message(data: Any, index: int) -> Message:
    where = f"message {index}"
    if not isinstance(data, dict) or data.get("role") not in _ROLES:
        raise ValueError(f"{where} has no valid role")
    parts = data.get("parts", [])
    if not isinstance(parts, list):
        raise ValueError(f"{where}: 'parts' is not a list")
    return Message(data["role"], [_part(p, f"{where}, part {n}") for n, p in enumerate(parts)])


def _part(data: Any, where: str) -> Part:
    if not isinstance(data, dict):
        raise ValueError(f"{where} is not an object")
    try:
        part = part_from_dict(data)
    except TypeError:
        raise ValueError(f"{where} ({data.get('type')!r}) has missing or unknown fields") from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    for name, kind in _PART_FIELDS[type(part)].items():
        if not isinstance(getattr(part, name), kind):
            raise ValueError(f"{where}: field {name!r} has the wrong type")
    return part


def _evidence(items: list[Any]) -> list[dict[str, Any]]:
    if not all(isinstance(item, dict) for item in items):
        raise ValueError("'evidence' holds something other than objects")
    return items


def _usage(data: dict[str, Any]) -> Usage:
    known = Usage().as_dict()
    counts = {k: v for k, v in data.items() if k in known}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in counts.values()):
        raise ValueError("'usage' holds a count that is not a whole number")
    return Usage(**counts)


# ---------------------------------------------------------------- Markdown export


def render_markdown(record: SessionRecord) -> str:
    """A readable transcript: what was said, each tool call with its arguments, each result."""
    created = dt.datetime.fromtimestamp(record.created).strftime("%Y-%m-%d %H:%M")
    lines = [
        f"# {record.title or 'Untitled session'}",
        "",
        f"Session `{record.id}` · {record.provider}/{record.model} · started {created} · "
        f"project `{record.root}`",
        "",
    ]
    for message in record.messages:
        lines.extend(_message_markdown(message))
    return "\n".join(lines).rstrip() + "\n"


def _message_markdown(message: Message) -> list[str]:
    out: list[str] = []
    if message.role in ("user", "assistant", "system") and message.text.strip():
        out += [f"## {message.role.capitalize()}", "", message.text.strip(), ""]
    for image in message.images:  # the bytes stay in the session file, not in the transcript
        out += [f"*[attached image: {image.mime}, {len(image.data) * 3 // 4:,} bytes]*", ""]
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments, indent=2, ensure_ascii=False)
        out += [f"**Tool call** `{call.name}`", "", *_fenced(arguments, "json"), ""]
    for result in message.tool_results:
        label = "Tool error" if result.is_error else "Tool result"
        body = cap_text(result.content, EXPORT_RESULT_CAP)
        out += [f"**{label}** `{result.name}`", "", *_fenced(body), ""]
    return out


def _fenced(text: str, language: str = "") -> list[str]:
    """A code fence longer than any backtick run inside, so the content cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language, text, fence]


# ---------------------------------------------------------------- titles


def title_prompt(first_user_text: str, first_answer: str) -> str:
    """The small request that asks a model to name a conversation; the caller sends it."""
    question = cap_text(first_user_text.strip(), TITLE_SOURCE_CAP)
    answer = cap_text(first_answer.strip(), TITLE_SOURCE_CAP)
    return (
        "Write a short title (3 to 6 words) for the conversation below. "
        "Reply with the title only: no quotes, no punctuation at the end, no explanation.\n\n"
        f"User:\n{question}\n\nAssistant:\n{answer}"
    )


_THINK_RE = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|$)", re.DOTALL | re.IGNORECASE)
_LABEL_RE = re.compile(r"^(?:session\s+)?title\s*[:\-–—]\s*", re.IGNORECASE)
_EDGE_CHARS = "\"'`“”‘’«»*_#> "
_TRAILING = ".,;:!?…-–— "


def clean_title(raw: str) -> str:
    """A model's title reply made usable: one line, no label, quotes or end punctuation, ≤ 60 chars."""
    text = _THINK_RE.sub("", raw)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = _LABEL_RE.sub("", line.strip(_EDGE_CHARS))
    line = " ".join(line.strip(_EDGE_CHARS).rstrip(_TRAILING).strip(_EDGE_CHARS).split())
    if len(line) > TITLE_CAP:
        cut = line[:TITLE_CAP]
        line = cut.rsplit(" ", 1)[0] if " " in cut else cut
        line = line.rstrip(_TRAILING + _EDGE_CHARS)
    return line if any(ch.isalnum() for ch in line) else ""
