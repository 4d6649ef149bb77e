"""`--local` through Ollama when the local extra is not installed: the model is looked up with
`/api/tags` and pulled with `/api/pull` (against the fake server speaking Ollama's pull stream:
progress, refusal, a full disk, a dropped connection, Ctrl-C), then run with the ollama
provider; in -p nothing is asked, in the chat a yes pulls it. A GGUF file's import is in
test_local_ollama_import.py."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeServer, Pull, Reply, closed_port
from ptyapp import PtyApp, app_env

from tether.providers import first_run
from tether.providers.first_run import (
    NotPulled,
    local_installed,
    local_through_ollama,
    may_go_through_ollama,
)
from tether.providers.ollama import PullError, has_model, pull_model, same_model
from tether.store.config import Settings

MODEL = "qwen2.5-coder:1.5b"
needs_no_extra = pytest.mark.skipif(local_installed(), reason="with the local extra installed, "
                                    "--local runs in-process and never goes through Ollama")


@pytest.fixture
def ollama() -> Iterator[FakeServer]:
    """An Ollama that has other models, not the one --local runs."""
    with FakeServer(models=["llama3.2:latest"]) as server:
        yield server


@pytest.fixture(autouse=True)
def no_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, the route is taken as on a machine without llama-cpp-python."""
    monkeypatch.setattr(first_run, "local_installed", lambda: False)


def local_settings(url: str, **changes: object) -> Settings:
    return Settings(provider="local", ollama_host=url, **changes)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the pull itself


async def test_a_pull_reports_progress_over_the_layers_and_ends_at_success(ollama: FakeServer) -> None:
    seen: list[tuple[int, int]] = []
    await pull_model(ollama.url, MODEL, lambda done, total: seen.append((done, total)))
    assert ollama.bodies("/api/pull") == [{"model": MODEL, "stream": True}]
    assert seen[-1] == (1_001_000, 1_001_000)
    assert (250_000, 1_000_000) in seen  # the first layer's progress, before the second was seen
    assert await has_model(ollama.url, MODEL)


async def test_the_model_list_is_read_with_ollamas_tag_rules(ollama: FakeServer) -> None:
    assert await has_model(ollama.url, "llama3.2") and not await has_model(ollama.url, MODEL)
    assert not await has_model(f"http://127.0.0.1:{closed_port()}", MODEL)
    assert same_model("Qwen2.5-Coder:1.5b", MODEL) and not same_model("qwen2.5-coder", MODEL)
    assert same_model("library/llama3:latest", "library/llama3")


@pytest.mark.parametrize(("pull", "said"), [
    (Pull(status=500, error_message="pull model manifest: file does not exist"),
     "refused to pull qwen2.5-coder:1.5b (500 Internal Server Error): pull model manifest: "
     "file does not exist"),
    (Pull(error_after=4, error_message="write /root/.ollama/models/blobs/sha256-aa-partial: "
          "no space left on device"),
     "Ollama could not pull qwen2.5-coder:1.5b: write /root/.ollama/models/blobs/"
     "sha256-aa-partial: no space left on device"),
    (Pull(drop_after=3), "the connection to Ollama at"),
    (Pull(no_success=True), "ended before the pull of qwen2.5-coder:1.5b finished"),
    (Pull(error_after=2, error_message="disk\nfull\x1b[2J"), "disk full\\x1b[2J"),
])
async def test_a_pull_that_fails_is_one_line(ollama: FakeServer, pull: Pull, said: str) -> None:
    ollama.pulls.append(pull)
    with pytest.raises(PullError) as caught:
        await pull_model(ollama.url, MODEL, lambda done, total: None)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert not await has_model(ollama.url, MODEL)


async def test_cancelling_a_pull_closes_its_connection(ollama: FakeServer) -> None:
    gate = threading.Event()
    ollama.pulls.append(Pull(gate=gate, gate_after=3))
    started = asyncio.Event()
    task = asyncio.ensure_future(pull_model(ollama.url, MODEL, lambda done, total: started.set()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    assert not await has_model(ollama.url, MODEL)


# ---------------------------------------------------------------- the route --local takes


async def test_a_model_ollama_has_is_used_without_a_pull(ollama: FakeServer) -> None:
    ollama.models.append(MODEL)
    said: list[str] = []
    settings = await local_through_ollama(local_settings(ollama.url), said.append)
    assert (settings.provider, settings.model) == ("ollama", MODEL)
    assert ollama.bodies("/api/pull") == []
    assert said == [f"tether[local] is not installed and Ollama answers at {ollama.url}: --local "
                    f"runs {MODEL} there"]


async def test_nothing_asked_means_no_pull_and_one_line_naming_the_choices(ollama: FakeServer) -> None:
    with pytest.raises(NotPulled) as caught:
        await local_through_ollama(local_settings(ollama.url), lambda _: None)
    message = str(caught.value)
    assert f"`ollama pull {MODEL}` (about 1.1 GB)" in message and 'ollama_pull = "yes"' in message
    assert "tether[local]" in message and "\n" not in message
    assert ollama.bodies("/api/pull") == []


@pytest.mark.parametrize("answer", [True, False])
async def test_the_chat_asks_before_pulling(ollama: FakeServer, answer: bool) -> None:
    asked: list[str] = []
    said: list[str] = []

    async def confirm(question: str) -> bool:
        asked.append(question)
        return answer

    if answer:
        settings = await local_through_ollama(local_settings(ollama.url), said.append, confirm)
        assert settings.provider == "ollama" and said[-1] == f"pulled {MODEL}"
        assert any(line.startswith(f"pulling {MODEL} [##########] 100%") for line in said)
    else:
        with pytest.raises(NotPulled, match="Not pulled"):
            await local_through_ollama(local_settings(ollama.url), said.append, confirm)
    assert asked == [f"Pull {MODEL} into Ollama (about 1.1 GB)?"]
    assert len(ollama.bodies("/api/pull")) == (1 if answer else 0)


async def test_ollama_pull_no_never_pulls(ollama: FakeServer) -> None:
    with pytest.raises(NotPulled, match='ollama_pull is "no"'):
        await local_through_ollama(local_settings(ollama.url, ollama_pull="no"), lambda _: None)
    assert ollama.bodies("/api/pull") == []


async def test_a_failed_pull_is_not_pulled(ollama: FakeServer) -> None:
    ollama.pulls.append(Pull(status=500, error_message="registry unreachable"))
    with pytest.raises(NotPulled, match="registry unreachable"):
        await local_through_ollama(local_settings(ollama.url, ollama_pull="yes"), lambda _: None)


async def test_the_route_is_for_the_default_model_or_a_file_without_the_extra(
        ollama: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for settings in (local_settings(ollama.url, model="other-model"),
                     Settings(provider="ollama", ollama_host=ollama.url)):
        assert not may_go_through_ollama(settings)
        assert await local_through_ollama(settings, lambda _: None) is settings
    assert may_go_through_ollama(local_settings(ollama.url, model="qwen2.5-coder-1.5b-instruct-q4_k_m"))
    assert may_go_through_ollama(local_settings(ollama.url, model="./mine.gguf"))
    monkeypatch.setattr(first_run, "local_installed", lambda: True)
    assert not may_go_through_ollama(local_settings(ollama.url))
    assert not may_go_through_ollama(local_settings(ollama.url, model="./mine.gguf"))
    assert ollama.requests == []


async def test_no_ollama_leaves_the_local_provider() -> None:
    settings = local_settings(f"http://127.0.0.1:{closed_port()}", ollama_pull="yes")
    assert await local_through_ollama(settings, lambda _: None) is settings


# ---------------------------------------------------------------- the command line and the chat


def cli_env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI", "OLLAMA", "TETHER", "ANTHROPIC", "GEMINI", "GOOGLE"))}
    return {**env, "TETHER_HOME": str(home), "OLLAMA_HOST": url, "TETHER_PROFILE": "full"}


@needs_no_extra
def test_print_mode_names_the_choices_and_pulls_when_the_setting_says_yes(ollama: FakeServer, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "tether", "-p", "hi", "--local"]
    env = cli_env(tmp_path / "home", ollama.url)
    refused = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert refused.returncode == 1 and refused.stdout == "" and "Traceback" not in refused.stderr
    assert 'ollama_pull = "yes"' in refused.stderr.splitlines()[-1]
    ollama.add(Reply(text="Hello from Ollama."))
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text('ollama_pull = "yes"\n')
    pulled = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.strip() == "Hello from Ollama."
    assert f"pulling {MODEL} [##########] 100%" in pulled.stderr
    assert ollama.bodies("/api/chat")[0]["model"] == MODEL


@needs_no_extra
def test_ctrl_c_stops_a_pull_in_print_mode(ollama: FakeServer, tmp_path: Path) -> None:
    gate = threading.Event()
    ollama.pulls.append(Pull(gate=gate, gate_after=3))
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('ollama_pull = "yes"\n')
    proc = subprocess.Popen([sys.executable, "-m", "tether", "-p", "hi", "--local"],
                            cwd=tmp_path, env=cli_env(home, ollama.url),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the pull is under way once its first progress is told
            if line.startswith(f"pulling {MODEL} ["):
                break
        proc.send_signal(signal.SIGINT)
        assert proc.wait() == 130
    finally:
        gate.set()
        proc.kill()
        proc.communicate()
    assert ollama.bodies("/api/chat") == [] and MODEL not in ollama.models


def yes_then_talk(args: list[str], tmp_path: Path, url: str, question: str, answer: str) -> str:
    """The chat started with `args`: yes to `question`, then "hi" answered with `answer`;
    the screen."""
    project = tmp_path / "project"
    project.mkdir()
    with PtyApp(args, cwd=project, env=app_env(tmp_path / "home", OLLAMA_HOST=url)) as app:
        app.wait_for_text(question)
        app.send("y")
        app.wait_for_prompt()
        app.line("hi")
        app.wait_for_text(answer)
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        return app.text()


def yes_then_stop(args: list[str], tmp_path: Path, url: str, question: str, under_way: str,
                  stopped: str) -> str:
    """The chat started with `args`: yes to `question`, Ctrl-C once `under_way` shows, then
    `stopped` and the prompt; the screen."""
    project = tmp_path / "project"
    project.mkdir()
    with PtyApp(args, cwd=project, env=app_env(tmp_path / "home", OLLAMA_HOST=url)) as app:
        app.wait_for_text(question)
        app.send("y")
        app.wait_for_text(under_way)
        app.ctrl_c()
        app.wait_for_text(stopped)
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        return app.text()


@needs_no_extra
def test_the_chat_asks_pulls_and_talks_to_ollama(ollama: FakeServer, tmp_path: Path) -> None:
    ollama.add(Reply(text="Pulled and ready."))
    shown = yes_then_talk(["--local"], tmp_path, ollama.url, f"Pull {MODEL} into Ollama",
                          "Pulled and ready.")
    assert f"pulled {MODEL}" in shown and "Traceback" not in shown
    assert [body["model"] for body in ollama.bodies("/api/chat")][:1] == [MODEL]


@needs_no_extra
def test_ctrl_c_stops_a_pull_in_the_chat_and_the_chat_goes_on(ollama: FakeServer, tmp_path: Path) -> None:
    gate = threading.Event()
    ollama.pulls.append(Pull(gate=gate, gate_after=3))
    try:
        shown = yes_then_stop(["--local"], tmp_path, ollama.url, f"Pull {MODEL} into Ollama",
                              f"pulling {MODEL} [", "Pull stopped")
    finally:
        gate.set()
    assert f"pulled {MODEL}" not in shown and "Traceback" not in shown
    assert MODEL not in ollama.models
