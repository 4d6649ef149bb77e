"""Saved sessions: round trips, lookup, listing, corrupt files left alone, export, kill safety."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tether.core.messages import Evidence, Message, Text, Thinking, ToolCall, ToolResult, Usage
from tether.store.session import (
    SessionCorrupt,
    SessionRecord,
    SessionStore,
    clean_title,
    evidence_record,
    title_prompt,
)


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "home")


def rich_history() -> list[Message]:
    call = ToolCall("call_1", "read_file", {"filepath": "a.py", "offset": 3})
    return [
        Message.user("What is in a.py?"),
        Message("assistant", [Thinking("look first"), Text("Reading it."), call]),
        Message("tool", [ToolResult("call_1", "read_file", "1:ab|print('hi')", False)]),
        Message("assistant", [Text("It prints hi.")]),
    ]


def saved(
    store: SessionStore, root: Path, title: str = "", *, updated: float | None = None
) -> SessionRecord:
    record = store.new(root, "ollama", "qwen3")
    record.title = title
    record.messages = [Message.user(f"hello {title}")]
    if updated is not None:
        record.updated = updated
    store.save(record)
    return record


# ---------------------------------------------------------------- round trip


def test_new_record_has_sortable_id_and_resolved_root(store: SessionStore, project: Path) -> None:
    record = store.new(project / ".." / project.name, "ollama", "qwen3")
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", record.id)
    assert record.root == str(project.resolve())
    assert record.title == "" and record.autotitle
    assert not store.path_for(record.id).exists(), "nothing is written before save"


def test_save_load_round_trip_keeps_every_part(store: SessionStore, project: Path) -> None:
    record = store.new(project, "openai", "gpt-x")
    record.messages = rich_history()
    record.usage = Usage(120, 30, 7)
    evidence = Evidence(
        ToolCall("call_1", "read_file", {"filepath": "a.py"}), 1.0, 0.25, "1 line", "x" * 5000
    )
    record.evidence = evidence_record([evidence])
    store.save(record)

    loaded = store.load(record.id)
    assert loaded == record
    assert loaded.messages[1].parts[0] == Thinking("look first")
    assert loaded.messages[2].tool_results[0].content == "1:ab|print('hi')"
    stored = loaded.evidence[0]
    assert stored["name"] == "read_file" and stored["summary"] == "1 line"
    assert stored["result"].startswith("x" * 2000) and len(stored["result"]) < 2100

    data = json.loads(store.path_for(record.id).read_text())
    assert data["version"] == 1


def test_update_from_conversation_and_back(store: SessionStore, project: Path) -> None:
    from tether.engine.loop import Conversation

    conv = Conversation(messages=rich_history(), usage=Usage(5, 6, 0))
    record = store.new(project, "ollama", "qwen3")
    before = record.updated
    time.sleep(0.01)
    record.update_from(conv)
    store.save(record)
    again = store.load(record.id).to_conversation()
    assert again.messages == conv.messages
    assert again.usage == Usage(5, 6, 0)
    assert record.updated > before


def test_store_adds_no_secrets_and_keeps_user_content(
    store: SessionStore, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-secret-never-saved")
    record = store.new(project, "openai", "gpt-x")
    record.messages = [
        Message("tool", [ToolResult("c1", "read_file", "OPENAI_API_KEY=sk-user-file-text")])
    ]
    store.save(record)
    text = store.path_for(record.id).read_text()
    assert "sk-user-file-text" in text, "user content is stored as it was"
    assert "sk-env-secret-never-saved" not in text
    assert set(json.loads(text)) == {
        "version", "id", "title", "root", "created", "updated", "provider", "model",
        "autotitle", "usage", "messages", "evidence",
    }  # fmt: skip
    assert store.load(record.id).messages == record.messages


def test_session_file_is_private(store: SessionStore, project: Path) -> None:
    record = saved(store, project)
    if os.name == "posix":
        assert store.path_for(record.id).stat().st_mode & 0o077 == 0


# ---------------------------------------------------------------- lookup


def test_lookup_by_id_prefix_and_title(store: SessionStore, project: Path) -> None:
    first = saved(store, project, "Fix the parser")
    second = saved(store, project, "Write release notes")
    assert store.load(first.id).id == first.id
    unique_prefix = next(
        first.id[:n] for n in range(1, len(first.id) + 1) if not second.id.startswith(first.id[:n])
    )
    assert store.load(unique_prefix).id == first.id
    assert store.load("fix THE parser").id == first.id
    assert store.load("release").id == second.id


def test_exact_title_wins_over_substring(store: SessionStore, project: Path) -> None:
    short = saved(store, project, "Parser")
    saved(store, project, "Parser rewrite")
    assert store.load("parser").id == short.id


def test_ambiguous_lookup_lists_candidates(store: SessionStore, project: Path) -> None:
    one = saved(store, project, "Docs for the CLI")
    two = saved(store, project, "Docs for the API")
    with pytest.raises(LookupError) as info:
        store.load("docs")
    message = str(info.value)
    assert "2 sessions match" in message
    assert one.id in message and two.id in message
    assert "Docs for the API" in message


def test_missing_lookup_is_a_clear_lookup_error(store: SessionStore, project: Path) -> None:
    saved(store, project, "Something")
    with pytest.raises(LookupError, match="No session matches 'nothing here'"):
        store.load("nothing here")
    with pytest.raises(LookupError):
        store.load("   ")
    with pytest.raises(LookupError):
        store.load("../../etc/passwd")


def test_lookup_by_title_is_limited_to_the_root_but_ids_are_not(
    store: SessionStore, tmp_path: Path, project: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    record = saved(store, other, "Elsewhere work")
    with pytest.raises(LookupError):
        store.load("elsewhere", root=project)
    assert store.load("elsewhere", root=other).id == record.id
    assert store.load(record.id, root=project).id == record.id


# ---------------------------------------------------------------- list and latest


def test_list_newest_first_with_corrupt_file_shown(store: SessionStore, project: Path) -> None:
    old = saved(store, project, "Old", updated=1_000.0)
    new = saved(store, project, "New", updated=2_000.0)
    bad = store.directory / "20260101-000000-dead.json"
    bad.write_text("{ not json")
    os.utime(bad, (1_500.0, 1_500.0))
    (store.directory / ".20260101-000000-beef.json.x1.tmp").write_text("partial")

    summaries = store.list()
    assert [s.id for s in summaries] == [new.id, bad.stem, old.id]
    assert summaries[0].title == "New" and summaries[0].messages == 1
    assert summaries[0].corrupt is None
    assert summaries[1].corrupt and "not valid JSON" in summaries[1].corrupt


def test_list_filters_by_root(store: SessionStore, tmp_path: Path, project: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    mine = saved(store, project, "Mine")
    saved(store, other, "Theirs")
    assert [s.id for s in store.list(project)] == [mine.id]
    assert len(store.list()) == 2


def test_list_of_an_empty_home_is_empty(store: SessionStore) -> None:
    assert store.list() == []


def test_latest_is_most_recent_for_the_root(
    store: SessionStore, tmp_path: Path, project: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert store.latest(project) is None
    saved(store, project, "Older", updated=1_000.0)
    newest_here = saved(store, project, "Newer", updated=2_000.0)
    saved(store, other, "Elsewhere", updated=3_000.0)
    latest = store.latest(project)
    assert latest is not None and latest.id == newest_here.id


def test_latest_skips_a_corrupt_newer_file(store: SessionStore, project: Path) -> None:
    good = saved(store, project, "Good", updated=1_000.0)
    broken = saved(store, project, "Broken", updated=2_000.0)
    path = store.path_for(broken.id)
    data = json.loads(path.read_text())
    data["messages"] = [{"role": "user", "parts": [{"type": "image", "url": "x"}]}]
    path.write_text(json.dumps(data))
    latest = store.latest(project)
    assert latest is not None and latest.id == good.id


# ---------------------------------------------------------------- corrupt files


def corrupt_variants(record: SessionRecord, valid: dict) -> dict[str, str]:
    unknown_part = dict(valid, messages=[{"role": "user", "parts": [{"type": "video"}]}])
    bad_field = dict(valid, messages=[{"role": "user", "parts": [{"type": "text", "txt": "x"}]}])
    wrong_type = dict(valid, created="yesterday")
    return {
        "bad JSON": '{"version": 1, "id": ',
        "not an object": "[1, 2, 3]",
        "unknown part type": json.dumps(unknown_part),
        "unknown part field": json.dumps(bad_field),
        "wrong field type": json.dumps(wrong_type),
        "newer version": json.dumps(dict(valid, version=2)),
        "other id": json.dumps(dict(valid, id="20200101-000000-0000")),
        "not utf-8": "\udcff",
    }


def test_corrupt_file_is_reported_and_never_overwritten(store: SessionStore, project: Path) -> None:
    record = saved(store, project, "Precious")
    path = store.path_for(record.id)
    valid = json.loads(path.read_text())
    for label, content in corrupt_variants(record, valid).items():
        raw = content.encode("utf-8", "surrogateescape")
        path.write_bytes(raw)
        with pytest.raises(SessionCorrupt) as info:
            store.load(record.id)
        assert str(path) in str(info.value), label
        record.messages.append(Message.user("more"))
        with pytest.raises(SessionCorrupt):
            store.save(record)
        with pytest.raises(SessionCorrupt):
            store.rename(record.id, "New name")
        assert path.read_bytes() == raw, f"{label}: the corrupt file must stay byte-identical"
        assert store.list()[0].corrupt, label


def test_corrupt_problem_says_what_is_wrong(store: SessionStore, project: Path) -> None:
    record = saved(store, project)
    path = store.path_for(record.id)
    data = json.loads(path.read_text())
    data["messages"][0]["parts"][0]["type"] = "hologram"
    path.write_text(json.dumps(data))
    with pytest.raises(SessionCorrupt, match="hologram") as info:
        store.load(record.id)
    assert "message 0" in info.value.problem


# ---------------------------------------------------------------- rename and export


def test_rename_sets_title_and_stops_autotitle(store: SessionStore, project: Path) -> None:
    record = saved(store, project, "", updated=1_234.0)
    renamed = store.rename(record.id, "  My   chosen\nname ")
    assert renamed.title == "My chosen name" and not renamed.autotitle
    loaded = store.load("my chosen name")
    assert loaded.id == record.id and not loaded.autotitle
    assert loaded.updated == 1_234.0, "renaming does not make a session the latest"
    with pytest.raises(ValueError):
        store.rename(record.id, "   ")


def test_export_json_is_the_saved_format(
    store: SessionStore, project: Path, tmp_path: Path
) -> None:
    record = store.new(project, "ollama", "qwen3")
    record.messages = rich_history()
    store.save(record)
    out = store.export(record, "json", tmp_path / "out.json")
    assert json.loads(out.read_text()) == json.loads(store.path_for(record.id).read_text())


def test_export_markdown_transcript(store: SessionStore, project: Path, tmp_path: Path) -> None:
    record = store.new(project, "ollama", "qwen3")
    record.title = "Reading a file"
    history = rich_history()
    fence_content = "```\n" + "y" * 3000
    history.append(Message("tool", [ToolResult("c2", "run_cmd", fence_content, True)]))
    record.messages = history
    out = store.export(record, "md", tmp_path)
    assert out == tmp_path / f"{record.id}.md"
    md = out.read_text()
    assert md.startswith("# Reading a file\n")
    assert "## User\n\nWhat is in a.py?" in md
    assert "## Assistant\n\nReading it." in md
    assert "**Tool call** `read_file`" in md
    assert '```json\n{\n  "filepath": "a.py",\n  "offset": 3\n}\n```' in md
    assert "**Tool result** `read_file`\n\n```\n1:ab|print('hi')\n```" in md
    assert "**Tool error** `run_cmd`\n\n````\n```\n" in md, "a longer fence wraps backticks"
    assert "y" * 1990 in md and "y" * 2500 not in md and "more characters not kept" in md
    assert "look first" not in md, "thinking is not part of the transcript"


def test_export_rejects_unknown_format(store: SessionStore, project: Path, tmp_path: Path) -> None:
    record = store.new(project, "ollama", "qwen3")
    with pytest.raises(ValueError, match="format"):
        store.export(record, "html", tmp_path / "x.html")  # type: ignore[arg-type]


# ---------------------------------------------------------------- titles


def test_title_prompt_carries_both_texts_capped() -> None:
    prompt = title_prompt("How do I rebase?", "Use git rebase -i." + "z" * 5000)
    assert "3 to 6 words" in prompt
    assert "How do I rebase?" in prompt and "Use git rebase -i." in prompt
    assert len(prompt) < 4000


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('"Fixing the Parser Bug."', "Fixing the Parser Bug"),
        ("Title: Rebase workflow help", "Rebase workflow help"),
        ("**Title:** Release notes draft!", "Release notes draft"),
        ("\n\n  Debugging flaky tests\nSecond line", "Debugging flaky tests"),
        ("<think>hmm, a title</think>\nCache invalidation strategy", "Cache invalidation strategy"),
        ("“Smart quotes title”", "Smart quotes title"),
        ("", ""),
        ('"..."', ""),
        ("   \n  ", ""),
    ],
)
def test_clean_title(raw: str, expected: str) -> None:
    assert clean_title(raw) == expected


def test_clean_title_caps_at_a_word_boundary() -> None:
    title = clean_title("word " * 30)
    assert len(title) <= 60 and title.endswith("word") and not title.endswith(" ")


# ---------------------------------------------------------------- kill safety

SAVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tether.core.messages import Message
    from tether.store.session import SessionStore

    store = SessionStore(Path(sys.argv[1]))
    root = Path(sys.argv[2])
    if len(sys.argv) > 3:
        record = store.load(sys.argv[3])
    else:
        record = store.new(root, "ollama", "qwen3")
    n = 0
    while True:
        n += 1
        record.messages.append(Message.user("line %d " % n + "x" * 2000))
        del record.messages[:-40]
        store.save(record)
        if n == 1:
            print(record.id, flush=True)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_saves_survive_sigkill_at_random_moments(
    store: SessionStore, project: Path, tmp_path: Path
) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    rng = random.Random(20261130)
    session_id = ""
    for attempt in range(20):
        args = [sys.executable, "-c", SAVER, str(tmp_path / "home"), str(project)]
        if session_id:
            args.append(session_id)
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, text=True)
        try:
            line = proc.stdout.readline().strip() if proc.stdout else ""
            assert line, f"attempt {attempt}: the saver did not start"
            session_id = session_id or line
            time.sleep(rng.uniform(0.0, 0.05))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout:
                proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL, "killed while still saving"
        record = store.load(session_id)
        assert record.messages and record.messages[-1].text.startswith("line ")
    assert [s.corrupt for s in store.list()] == [None]


# ---------------------------------------------------------------- bad bytes


def test_a_session_holding_text_utf8_cannot_encode_is_saved_escaped(
    store: SessionStore, project: Path
) -> None:
    """A file name that is not UTF-8 in a tool result, a lone surrogate from a model:
    the session is still saved (and exported), with the bytes as \\xNN and the rest as U+FFFD."""
    record = store.new(project, "ollama", "qwen3")
    call = ToolCall("call_1", "list_dir", {"path": "caf\udce9"})
    record.messages = [
        Message.user("typed caf\udce9"),
        Message("assistant", [Text("a \ud800 b"), call]),
        Message("tool", [ToolResult("call_1", "list_dir", "caf\udce9.txt", False)]),
    ]
    store.save(record)
    loaded = store.load(record.id)
    assert loaded.messages[0].text == "typed caf\\xe9"
    assert loaded.messages[1].text == "a \ufffd b"
    assert loaded.messages[1].tool_calls[0].arguments == {"path": "caf\\xe9"}
    assert loaded.messages[2].tool_results[0].content == "caf\\xe9.txt"
    exported = store.export(record, "md", project / "out.md")
    assert "caf\\xe9.txt" in exported.read_text(encoding="utf-8")
