"""Regression tests for security fixes: keys echoed in streamed errors, failures of the
network layer that are not httpx errors, repository-configured programs run by
read-only git commands, and search_in_file following symlinks out of the project."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeServer, Reply

from tether.core.messages import Message
from tether.core.toolspec import ToolContext
from tether.host.git_guard import hardened_git
from tether.providers._http import redact
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ProviderError, RequestOptions
from tether.providers.gemini import GeminiProvider
from tether.providers.ollama import OllamaProvider
from tether.providers.openai import OpenAIProvider
from tether.store.git_ops import GitOps
from tether.tools.file_search import search_in_file
from tether.tools.git import git_diff, git_status
from tether.tools.params import GitDiffParams, GitStatusParams, SearchInFileParams
from tether.ui.terminal.prompt import ProjectFiles

# A key without any well-known prefix: only the provider's own key can catch it.
KEY = "or-v1-abcdef0123456789SECRET"
HELLO = [Message.user("hi")]


# ---------------------------------------------------------------- keys in streamed errors


def _data(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _ollama(url: str) -> OllamaProvider:
    return OllamaProvider(url, api_key=KEY, read_timeout=5)


def _openai(url: str) -> OpenAIProvider:
    return OpenAIProvider(url + "/v1", api_key=KEY, read_timeout=5)


def _anthropic(url: str) -> AnthropicProvider:
    return AnthropicProvider(url, api_key=KEY, read_timeout=5)


def _gemini(url: str) -> GeminiProvider:
    return GeminiProvider(url, api_key=KEY, read_timeout=5)


def _ollama_error(message: str) -> list[bytes]:
    return [json.dumps({"error": message}).encode() + b"\n"]


def _openai_error(message: str) -> list[bytes]:
    return [_data({"error": {"message": message}})]


def _anthropic_error(message: str) -> list[bytes]:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
    return [b"event: error\n" + _data(error)]


def _gemini_error(message: str) -> list[bytes]:
    return [_data({"error": {"status": "RESOURCE_EXHAUSTED", "message": message}})]


PROVIDERS: dict[str, tuple[Callable[[str], Any], Callable[[str], list[bytes]], str, str]] = {
    # name: (make provider, in-stream error frames, model, the kind the error keeps)
    "ollama": (_ollama, _ollama_error, "fake-coder:7b", "api"),
    "openai": (_openai, _openai_error, "fake", "api"),
    "anthropic": (_anthropic, _anthropic_error, "claude-sonnet-4-5", "overloaded"),
    "gemini": (_gemini, _gemini_error, "gemini-2.5-flash", "rate_limit"),
}


async def _stream_error(name: str, server: FakeServer, message: str) -> ProviderError:
    make, frames, model, _ = PROVIDERS[name]
    server.add(Reply(raw_frames=frames(message)))
    provider = make(server.url)
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions(model)):
                pass
    finally:
        await provider.aclose()
    return info.value


@pytest.mark.parametrize("name", PROVIDERS)
async def test_streamed_error_echoing_the_key_is_redacted(name, fake_server):
    error = await _stream_error(name, fake_server, f"Incorrect API key provided: {KEY}")
    assert KEY not in str(error)
    assert "Incorrect API key provided: [redacted]" in str(error)
    assert error.kind == PROVIDERS[name][3]


@pytest.mark.parametrize("name", PROVIDERS)
async def test_streamed_error_cut_off_inside_the_key_shows_none_of_it(name, fake_server):
    # Long enough that the one-line limit cuts the message in the middle of the key.
    padding = "x" * 280
    error = await _stream_error(name, fake_server, f"{padding} key {KEY} was rejected")
    assert KEY[:6] not in str(error)
    # cut at a word: before the key, or inside it where the redaction marks the cut
    assert "key…" in str(error) or "[redacted]…" in str(error)


@pytest.mark.parametrize("short_key", ["x", "k", "dummy"])
def test_a_short_placeholder_key_does_not_garble_the_message(short_key):
    message = "The model `qwen` does not exist; pick one from the list (keep it short)"
    assert redact(message, short_key) == message


def test_a_real_length_key_is_still_redacted_whole_and_when_cut_off():
    assert redact(f"bad key {KEY} given", KEY) == "bad key [redacted] given"
    assert redact(f"bad key {KEY[:10]}…", KEY) == "bad key [redacted]…"


async def test_streamed_error_with_a_dummy_key_keeps_its_text(fake_server):
    fake_server.add(Reply(raw_frames=_openai_error("model 'x-large' does not exist")))
    provider = OpenAIProvider(fake_server.url + "/v1", api_key="x", read_timeout=5)
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions("fake")):
                pass
    finally:
        await provider.aclose()
    assert "model 'x-large' does not exist" in str(info.value)


async def test_streamed_error_without_the_key_is_left_alone(fake_server):
    error = await _stream_error("openai", fake_server, "model is busy")
    assert "model is busy" in str(error) and "[redacted]" not in str(error)


# ---------------------------------------------------------------- non-httpx network errors


@pytest.mark.parametrize("name", PROVIDERS)
async def test_port_out_of_range_is_a_connection_error_naming_the_url(name):
    provider = PROVIDERS[name][0]("http://127.0.0.1:99999")
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions(PROVIDERS[name][2])):
                pass
    finally:
        await provider.aclose()
    assert info.value.kind == "connection"
    assert "cannot reach" in str(info.value) and "127.0.0.1:99999" in str(info.value)
    assert "port must be 0-65535" in str(info.value)


async def test_key_the_network_layer_cannot_send_is_a_connection_error(fake_server):
    # A key pasted with a typographic quote cannot go into an HTTP header.
    provider = OpenAIProvider(fake_server.url + "/v1", api_key="sk-pasted\u2019key")
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions("fake")):
                pass
    finally:
        await provider.aclose()
    assert info.value.kind == "connection"
    assert fake_server.url in str(info.value) and "pasted" not in str(info.value)


async def test_unexpected_failure_while_reading_is_a_connection_error(fake_server, monkeypatch):
    import httpx

    async def broken_lines(self: httpx.Response):
        yield 'data: {"choices": []}'
        raise RuntimeError("decoder exploded")

    monkeypatch.setattr(httpx.Response, "aiter_lines", broken_lines)
    fake_server.add(Reply(text="hello"))
    provider = _openai(fake_server.url)
    try:
        with pytest.raises(ProviderError) as info:
            async for _ in provider.stream(HELLO, None, RequestOptions("fake")):
                pass
    finally:
        await provider.aclose()
    assert info.value.kind == "connection"
    assert "decoder exploded" in str(info.value) and fake_server.url in str(info.value)


# ---------------------------------------------------------------- programs from .git/config


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def hostile_repo(tmp_path: Path, isolated_git: None) -> tuple[Path, Path]:
    """A repository whose own config runs a program that leaves `marker` behind."""
    root, marker = tmp_path / "project", tmp_path / "ran"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    _git(root, "add", "a.txt")
    _git(root, "commit", "-q", "-m", "first")
    (root / "a.txt").write_text("two\n")
    _git(root, "config", "core.fsmonitor", f"touch {shlex.quote(str(marker))}; false")
    return root, marker


def test_hardened_git_turns_the_repository_fsmonitor_off(isolated_git, tmp_path):
    env = hardened_git(tmp_path).env()
    pairs = [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"])
             for i in range(int(env["GIT_CONFIG_COUNT"]))]
    assert ("core.fsmonitor", "false") in pairs


def test_hardened_git_keeps_config_the_user_set(tmp_path, isolated_git, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "tether.test")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "kept")
    env = hardened_git(tmp_path).env()
    assert int(env["GIT_CONFIG_COUNT"]) > 2
    assert (env["GIT_CONFIG_KEY_0"], env["GIT_CONFIG_VALUE_0"]) == ("tether.test", "kept")
    assert (env["GIT_CONFIG_KEY_1"], env["GIT_CONFIG_VALUE_1"]) == ("core.fsmonitor", "false")
    seen = subprocess.run(
        ["git", "config", "--get", "tether.test"], env=env, capture_output=True, text=True
    )
    assert seen.stdout.strip() == "kept"


def test_git_status_does_not_run_the_repository_fsmonitor(hostile_repo):
    root, marker = hostile_repo
    out = git_status(GitStatusParams(), ToolContext(root=root))
    assert "a.txt" in out.text
    assert not marker.exists()


def test_git_diff_does_not_run_the_repository_fsmonitor(hostile_repo):
    root, marker = hostile_repo
    out = git_diff(GitDiffParams(), ToolContext(root=root))
    assert "+two" in out.text
    assert not marker.exists()


def test_git_diff_does_not_run_a_textconv_program(hostile_repo):
    root, marker = hostile_repo
    _git(root, "config", "--unset", "core.fsmonitor")
    (root / ".git" / "info" / "attributes").write_text("*.txt diff=conv\n")
    _git(root, "config", "diff.conv.textconv", f"touch {shlex.quote(str(marker))}; cat")
    out = git_diff(GitDiffParams(), ToolContext(root=root))
    assert "+two" in out.text
    assert not marker.exists()


def test_search_in_file_does_not_run_the_repository_fsmonitor(hostile_repo):
    root, marker = hostile_repo
    out = search_in_file(SearchInFileParams(pattern="two", path="."), ToolContext(root=root))
    assert "a.txt:1: two" in out.text
    assert not marker.exists()


def test_file_completion_does_not_run_the_repository_fsmonitor(hostile_repo):
    root, marker = hostile_repo
    assert "a.txt" in ProjectFiles(root).names()
    assert not marker.exists()


def test_diff_since_runs_no_repository_program(hostile_repo, tmp_path):
    root, marker = hostile_repo
    (root / ".git" / "info" / "attributes").write_text("*.txt diff=conv\n")
    _git(root, "config", "diff.conv.textconv", f"touch {shlex.quote(str(marker))}; cat")
    diff = GitOps(root, tmp_path / "home").diff_since("HEAD")
    assert "+two" in diff
    assert not marker.exists()


# ---------------------------------------------------------------- search_in_file and symlinks


@pytest.fixture
def linked_secret(tmp_path: Path, isolated_git: None) -> tuple[Path, Path]:
    """A project holding a file symlink to a secret outside it, and a file of its own."""
    secret = tmp_path / "outside" / "credentials"
    secret.parent.mkdir()
    secret.write_text("aws_secret_access_key = TOPSECRET123\n")
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").symlink_to(secret)
    (root / "own.txt").write_text("a secret of the project\n")
    return root, secret


@pytest.mark.parametrize("tracked", [False, True], ids=["walk", "git"])
def test_search_skips_files_linking_outside_the_project(linked_secret, tracked):
    root, _ = linked_secret
    if tracked:
        _git(root, "init", "-q")
        _git(root, "add", "notes.txt", "own.txt")
    out = search_in_file(SearchInFileParams(pattern="(?i)secret", path="."), ToolContext(root=root))
    assert "TOPSECRET123" not in out.text
    assert "own.txt:1: a secret of the project" in out.text
    assert "1 behind symlinks leading outside" in out.text


def test_search_of_a_file_symlink_leading_out_reads_nothing(linked_secret):
    root, _ = linked_secret
    out = search_in_file(SearchInFileParams(pattern="SECRET", path="notes.txt"), ToolContext(root=root))
    assert "TOPSECRET123" not in out.text
    assert "No matches" in out.text


def test_search_keeps_links_that_stay_inside_the_project(linked_secret):
    root, _ = linked_secret
    (root / "alias.txt").symlink_to(root / "own.txt")
    out = search_in_file(SearchInFileParams(pattern="project", path="."), ToolContext(root=root))
    assert "alias.txt:1:" in out.text and "own.txt:1:" in out.text


def test_search_of_an_outside_folder_named_on_purpose_still_works(linked_secret):
    # The approval gate asks before a path outside the project is searched; once it is,
    # that folder is searched as asked.
    root, secret = linked_secret
    out = search_in_file(
        SearchInFileParams(pattern="TOPSECRET", path=str(secret.parent)), ToolContext(root=root)
    )
    assert "TOPSECRET123" in out.text
