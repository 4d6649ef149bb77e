"""Saved keys and the remembered connection: permissions, lookup order, damaged files."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tether.host.statefile import StateFileError
from tether.store.keys import (
    ConnectionStore,
    KeyStore,
    KeyStoreError,
    Secret,
    clean_key,
    resolve_key,
)

KEY = "sk-ant-api03-secret-value-123456"


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_saved_key_is_read_back_and_the_file_is_private(tmp_path: Path):
    store = KeyStore(tmp_path)
    assert store.get("anthropic") is None and not store.path.exists()
    store.set("anthropic", f"  {KEY}\n")  # pasted with whitespace
    assert store.get("anthropic") == KEY
    assert mode_of(store.path) == 0o600
    assert json.loads(store.path.read_text()) == {"version": 1, "keys": {"anthropic": KEY}}
    assert KeyStore(tmp_path).get("anthropic") == KEY  # a fresh store reads the same file
    assert [p.name for p in tmp_path.iterdir()] == ["credentials.json"]  # no temp files left


def test_keys_of_several_providers_and_deleting_one(tmp_path: Path):
    store = KeyStore(tmp_path)
    store.set("anthropic", KEY)
    store.set("gemini", "AIza-0000000000000000000000")
    assert store.providers() == ["anthropic", "gemini"]
    assert store.delete("anthropic") is True
    assert store.delete("anthropic") is False
    assert store.get("anthropic") is None and store.get("gemini")
    assert mode_of(store.path) == 0o600


def test_a_loosely_permitted_file_is_tightened_on_the_next_save(tmp_path: Path):
    store = KeyStore(tmp_path)
    store.path.write_text(json.dumps({"version": 1, "keys": {"openai": "sk-old"}}))
    store.path.chmod(0o644)
    store.set("anthropic", KEY)
    assert mode_of(store.path) == 0o600
    assert store.get("openai") == "sk-old"  # what was there is kept


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "is not valid JSON"),
        ('["a list"]', 'does not hold a "keys" object'),
        ('{"keys": {"anthropic": 42}}', 'does not hold a "keys" object'),
    ],
)
def test_a_damaged_file_is_reported_never_overwritten(tmp_path: Path, content: str, reason: str):
    store = KeyStore(tmp_path)
    store.path.write_text(content)
    assert store.get("anthropic") is None
    assert store.problem is not None and reason in store.problem
    assert str(store.path) in store.problem
    with pytest.raises(KeyStoreError) as info:
        store.set("anthropic", KEY)
    assert str(store.path) in str(info.value) and "Nothing was saved" in str(info.value)
    assert KEY not in str(info.value)
    with pytest.raises(KeyStoreError):
        store.delete("anthropic")
    assert store.path.read_text() == content


def test_an_unusable_home_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "home"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(KeyStoreError) as info:
        KeyStore(blocker).set("anthropic", KEY)
    assert "home/credentials.json cannot be read (Not a directory)" in str(info.value)
    assert blocker.read_text() == "a file where the directory should be"


@pytest.mark.parametrize("bad", ["", "   ", "sk-ant abc", "sk-ant\x00abc"])
def test_unusable_keys_are_refused_without_echoing_them(tmp_path: Path, bad: str):
    with pytest.raises(ValueError) as info:
        KeyStore(tmp_path).set("anthropic", bad)
    assert (bad.strip() or "<empty>") not in str(info.value)
    assert not (tmp_path / "credentials.json").exists()


def test_clean_key_strips_surrounding_whitespace():
    assert clean_key("\tabc\n") == "abc"


def test_secrets_never_show_themselves():
    secret = Secret(KEY)
    for shown in (repr(secret), str(secret), f"{secret}", repr([secret]), repr({"k": secret})):
        assert KEY not in shown and "****" in shown
    assert secret.reveal() == KEY and secret == Secret(KEY) and bool(secret)
    with pytest.raises(TypeError):
        json.dumps({"key": secret})


def test_the_store_itself_never_shows_a_key(tmp_path: Path):
    store = KeyStore(tmp_path)
    store.set("anthropic", KEY)
    assert KEY not in repr(store) and KEY not in repr(store.__dict__)


# ---------------------------------------------------------------- lookup order


def test_the_environment_wins_over_the_saved_key(tmp_path: Path):
    store = KeyStore(tmp_path)
    store.set("anthropic", "sk-ant-saved")
    assert resolve_key("anthropic", {"ANTHROPIC_API_KEY": KEY}, store) == (
        KEY,
        "env ANTHROPIC_API_KEY",
    )
    assert resolve_key("anthropic", {"ANTHROPIC_API_KEY": "  "}, store) == ("sk-ant-saved", "saved")
    assert resolve_key("anthropic", {}, store) == ("sk-ant-saved", "saved")
    assert resolve_key("openai", {}, store) == (None, "missing")
    assert resolve_key("openai", {}, None) == (None, "missing")


def test_gemini_reads_either_variable_in_order(tmp_path: Path):
    store = KeyStore(tmp_path)
    both = {"GEMINI_API_KEY": "first", "GOOGLE_API_KEY": "second"}
    assert resolve_key("gemini", both, store) == ("first", "env GEMINI_API_KEY")
    assert resolve_key("gemini", {"GOOGLE_API_KEY": "second"}, store) == (
        "second",
        "env GOOGLE_API_KEY",
    )


def test_a_keyless_provider_never_reads_the_environment(tmp_path: Path):
    assert resolve_key("ollama", {"OLLAMA_API_KEY": "x"}, KeyStore(tmp_path)) == (None, "missing")


def test_a_damaged_store_means_missing_not_a_crash(tmp_path: Path):
    store = KeyStore(tmp_path)
    store.path.write_text("garbage")
    assert resolve_key("anthropic", {}, store) == (None, "missing")
    assert store.problem


# ---------------------------------------------------------------- the last connection


def test_the_last_connection_is_remembered(tmp_path: Path):
    connections = ConnectionStore(tmp_path)
    assert connections.last() is None
    connections.remember("anthropic", "claude-sonnet-4-5")
    connections.remember("gemini", "gemini-2.5-flash")
    assert ConnectionStore(tmp_path).last() == ("gemini", "gemini-2.5-flash", "")
    assert [p.name for p in tmp_path.iterdir()] == ["connection.json"]


def test_the_base_url_is_remembered_but_never_one_that_holds_credentials(tmp_path: Path):
    connections = ConnectionStore(tmp_path)
    connections.remember("openai", "qwen", "http://127.0.0.1:8080/v1")
    assert connections.last() == ("openai", "qwen", "http://127.0.0.1:8080/v1")
    for url in ("http://me:sk-secret@127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1?key=sk-secret"):
        with pytest.raises(ValueError, match="credentials"):
            connections.remember("openai", "qwen", url)
        assert "sk-secret" not in (tmp_path / "connection.json").read_text()
    assert connections.last() == ("openai", "qwen", "http://127.0.0.1:8080/v1")


@pytest.mark.parametrize("content", ["{oops", "[]", '{"model": "x"}', '{"provider": 3}', "\udce9",
                                     '{"provider": "openai", "base_url": 8080}'])
def test_a_damaged_connection_file_is_not_used_and_never_overwritten(tmp_path: Path, content: str):
    path = tmp_path / "connection.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    before = path.read_bytes()
    connections = ConnectionStore(tmp_path)
    assert connections.last() is None
    assert str(path) in connections.problem
    with pytest.raises(StateFileError, match="kept as it is"):
        connections.remember("ollama", "qwen2.5-coder:7b")
    assert path.read_bytes() == before
    path.unlink()  # once the user moves it away, remembering works again
    connections.remember("ollama", "qwen2.5-coder:7b")
    assert connections.last() == ("ollama", "qwen2.5-coder:7b", "") and connections.problem == ""


def test_a_keys_file_that_is_a_dangling_link_is_reported_and_not_written_through(tmp_path: Path):
    store = KeyStore(tmp_path)
    store.path.symlink_to(tmp_path / "vault" / "credentials.json")
    assert store.get("anthropic") is None
    assert store.problem is not None and "does not exist" in store.problem
    with pytest.raises(KeyStoreError, match="Nothing was saved"):
        store.set("anthropic", KEY)
    assert not (tmp_path / "vault").exists()


def test_a_connection_file_that_is_a_dangling_link_is_kept(tmp_path: Path):
    path = tmp_path / "connection.json"
    path.symlink_to(tmp_path / "gone.json")
    connections = ConnectionStore(tmp_path)
    assert str(path) in connections.problem and "does not exist" in connections.problem
    with pytest.raises(StateFileError):
        connections.remember("ollama", "qwen2.5-coder:7b")
    assert path.is_symlink() and not (tmp_path / "gone.json").exists()
