"""`--local --model ./x.gguf` through Ollama when the local extra is not installed: the file is
checked before any request, hashed, uploaded as a blob (`HEAD`/`POST /api/blobs/sha256:HEX`)
and made a model with `/api/create` under a name derived from it, against the fake server
speaking those endpoints; a second run finds the name in `/api/tags` and uploads nothing."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fakeserver import Create, FakeServer, Reply
from test_local_ollama import (
    cli_env,
    local_settings,
    needs_no_extra,
    yes_then_stop,
    yes_then_talk,
)

from tether.providers import first_run
from tether.providers.first_run import NotPulled, local_through_ollama
from tether.providers.ollama import UPLOAD_CHUNK, PullError, import_gguf, ollama_name, source_name


@pytest.fixture(autouse=True)
def no_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(first_run, "local_installed", lambda: False)


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    """A file that starts like a GGUF model, two and a half upload chunks long."""
    path = tmp_path / "My Coder.Q4.gguf"
    path.write_bytes(b"GGUF" + bytes(UPLOAD_CHUNK * 5 // 2 - 4))
    return path


def digest_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_requests(server: FakeServer) -> list[str]:
    return [path for path, _ in server.requests if path.startswith(("/api/blobs/", "/api/create"))]


async def test_a_file_is_imported_with_progress_and_run_under_its_derived_name(
        fake_server: FakeServer, gguf: Path) -> None:
    said: list[str] = []
    settings = await local_through_ollama(
        local_settings(fake_server.url, model=str(gguf), ollama_pull="yes"), said.append)
    digest = digest_of(gguf)
    name = f"tether-my-coder.q4-{digest[:12]}"
    assert (settings.provider, settings.model) == ("ollama", name)
    assert fake_server.blobs == {f"sha256:{digest}": gguf.stat().st_size}
    assert fake_server.bodies("/api/create") == [
        {"model": name, "files": {gguf.name: f"sha256:{digest}"}, "stream": True}]
    progress = [line for line in said if line.startswith(f"importing {gguf.name} [")]
    assert [line.split("] ")[1].split("%")[0] for line in progress] == ["40", "80", "100"]
    assert said[0].endswith(f"--local runs {gguf.name} there, as {name}")
    assert said[-1] == f"imported {gguf.name} as {name}"


async def test_a_second_run_uploads_nothing(fake_server: FakeServer, gguf: Path) -> None:
    settings = local_settings(fake_server.url, model=str(gguf), ollama_pull="yes")
    first = await local_through_ollama(settings, lambda _: None)
    uploads = import_requests(fake_server)
    assert len(uploads) == 3  # HEAD, POST of the blob, create
    again = await local_through_ollama(settings, lambda _: None)
    assert again.model == first.model and import_requests(fake_server) == uploads


async def test_a_second_run_with_the_digest_cache_hashes_nothing(
        fake_server: FakeServer, gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.store import file_digests

    hashed: list[Path] = []
    real = file_digests.sha256_of
    monkeypatch.setattr(file_digests, "sha256_of", lambda path: hashed.append(path) or real(path))
    settings = local_settings(fake_server.url, model=str(gguf), ollama_pull="yes")
    cache = tmp_path / "models" / file_digests.DIGESTS_FILE
    first = await local_through_ollama(settings, lambda _: None, digests=cache)
    again = await local_through_ollama(settings, lambda _: None, digests=cache)
    assert again.model == first.model == f"tether-my-coder.q4-{digest_of(gguf)[:12]}"
    assert hashed == [gguf]


async def test_a_blob_ollama_has_is_not_sent_again(fake_server: FakeServer, gguf: Path) -> None:
    fake_server.blobs[f"sha256:{digest_of(gguf)}"] = gguf.stat().st_size
    said: list[str] = []
    await local_through_ollama(local_settings(fake_server.url, model=str(gguf), ollama_pull="yes"),
                               said.append)
    assert [p for p in import_requests(fake_server) if p != "/api/create"] == [
        f"/api/blobs/sha256:{digest_of(gguf)}"]  # the HEAD only
    assert not any(line.startswith("importing " + gguf.name + " [") for line in said)


@pytest.mark.parametrize("answer", [True, False])
async def test_the_chat_asks_before_importing(fake_server: FakeServer, gguf: Path, answer: bool) -> None:
    asked: list[str] = []

    async def confirm(question: str) -> bool:
        asked.append(question)
        return answer

    settings = local_settings(fake_server.url, model=str(gguf))
    if answer:
        assert (await local_through_ollama(settings, lambda _: None, confirm)).provider == "ollama"
    else:
        with pytest.raises(NotPulled, match="Not imported: pip install 'tether.local.'"):
            await local_through_ollama(settings, lambda _: None, confirm)
    name = ollama_name(gguf, digest_of(gguf))
    assert asked == [f"Import {gguf.name} into Ollama as {name} (2.6 MB)?"]
    assert len(fake_server.bodies("/api/create")) == (1 if answer else 0)


@pytest.mark.parametrize(("choice", "said"), [
    ("no", 'ollama_pull is "no", so --local does not import it'),
    ("ask", 'and -p asks nothing: set ollama_pull = "yes" in TETHER_HOME/config.toml to let '
            "--local import it (2.6 MB), or pip install 'tether[local]'"),
])
async def test_no_import_unless_the_setting_allows_it(
        fake_server: FakeServer, gguf: Path, choice: str, said: str) -> None:
    with pytest.raises(NotPulled) as caught:
        await local_through_ollama(local_settings(fake_server.url, model=str(gguf), ollama_pull=choice),
                                   lambda _: None)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert import_requests(fake_server) == []


@pytest.mark.parametrize(("content", "said"), [
    (None, "no model file at"),
    (b"PK\x03\x04 a zip, not a model", "is not a GGUF model file"),
    (b"", "is not a GGUF model file"),
])
async def test_a_file_that_is_no_gguf_is_refused_before_any_request(
        fake_server: FakeServer, tmp_path: Path, content: bytes | None, said: str) -> None:
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(NotPulled, match=said) as caught:
        await local_through_ollama(local_settings(fake_server.url, model=str(path), ollama_pull="yes"),
                                   lambda _: None)
    assert "\n" not in str(caught.value) and fake_server.requests == []


async def test_a_folder_named_like_a_model_is_refused(fake_server: FakeServer, tmp_path: Path) -> None:
    (tmp_path / "dir.gguf").mkdir()
    with pytest.raises(NotPulled, match="cannot read"):
        await local_through_ollama(
            local_settings(fake_server.url, model=str(tmp_path / "dir.gguf"), ollama_pull="yes"),
            lambda _: None)
    assert fake_server.requests == []


@pytest.mark.parametrize(("create", "said"), [
    (Create(status=400, error_message="unsupported architecture \"foo\""),
     "refused to import tether-my-coder.q4-", ),
    (Create(error_after=1, error_message="invalid file magic\x1b[2J"),
     "Ollama could not import tether-my-coder.q4-"),
    (Create(no_success=True), "ended before the import of tether-my-coder.q4-"),
    (Create(drop_after=1), "the connection to Ollama at"),
])
async def test_a_create_that_fails_is_one_line(
        fake_server: FakeServer, gguf: Path, create: Create, said: str) -> None:
    fake_server.creates.append(create)
    with pytest.raises(NotPulled) as caught:
        await local_through_ollama(local_settings(fake_server.url, model=str(gguf), ollama_pull="yes"),
                                   lambda _: None)
    message = str(caught.value)
    assert said in message and "\n" not in message and "\x1b" not in message
    assert not any(m.startswith("tether-") for m in fake_server.models)


async def test_bytes_that_do_not_match_the_digest_are_refused(fake_server: FakeServer, gguf: Path) -> None:
    with pytest.raises(PullError, match="refused to import x .400 Bad Request.: digest mismatch"):
        await import_gguf(fake_server.url, "x", gguf, "0" * 64, lambda done, total: None)
    assert fake_server.blobs == {} and fake_server.bodies("/api/create") == []


def test_the_name_keeps_only_what_ollama_takes() -> None:
    digest = "ABCDEF0123456789" * 4
    assert ollama_name(Path("/m/Qwen2.5 Coder (7B)!.gguf"), digest) == \
        "tether-qwen2.5-coder-7b-abcdef012345"
    assert ollama_name(Path("/m/___.gguf"), digest).startswith("tether-model-")
    assert ollama_name(Path("/m/a...b.gguf"), digest).startswith("tether-a.b-")
    assert len(ollama_name(Path("/m/" + "x" * 300 + ".gguf"), digest)) <= 80
    assert source_name(Path("/m/a:b\\c.gguf")) == "a_b_c.gguf"


@needs_no_extra
def test_print_mode_imports_and_answers_when_the_setting_says_yes(
        fake_server: FakeServer, gguf: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('ollama_pull = "yes"\n')
    fake_server.add(Reply(text="Hello from your model."))
    done = subprocess.run([sys.executable, "-m", "tether", "-p", "hi", "--local", "--model",
                           str(gguf)], cwd=tmp_path, env=cli_env(home, fake_server.url),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello from your model."
    name = ollama_name(gguf, digest_of(gguf))
    assert f"imported {gguf.name} as {name}" in done.stderr
    assert fake_server.bodies("/api/chat")[0]["model"] == name
    remembered = json.loads((home / "models" / "digests.json").read_text())
    assert remembered[str(gguf.resolve())]["sha256"] == digest_of(gguf)


@needs_no_extra
def test_the_chat_asks_imports_and_talks_to_ollama(fake_server: FakeServer, gguf: Path,
                                                    tmp_path: Path) -> None:
    fake_server.add(Reply(text="Imported and ready."))
    shown = yes_then_talk(["--local", "--model", str(gguf)], tmp_path, fake_server.url,
                          f"Import {gguf.name} into Ollama", "Imported and ready.")
    name = ollama_name(gguf, digest_of(gguf))
    assert f"imported {gguf.name} as {name}" in shown and "Traceback" not in shown
    assert [body["model"] for body in fake_server.bodies("/api/chat")][:1] == [name]
    assert (tmp_path / "home" / "models" / "digests.json").is_file()


@needs_no_extra
def test_ctrl_c_stops_an_import_in_the_chat_and_the_chat_goes_on(
        fake_server: FakeServer, gguf: Path, tmp_path: Path) -> None:
    gate = threading.Event()
    fake_server.creates.append(Create(gate=gate, gate_after=1))
    try:
        shown = yes_then_stop(["--local", "--model", str(gguf)], tmp_path, fake_server.url,
                              f"Import {gguf.name} into Ollama",
                              f"importing {gguf.name} [##########] 100%", "Import stopped")
    finally:
        gate.set()
    assert f"imported {gguf.name}" not in shown and "Traceback" not in shown
    assert not any(m.startswith("tether-") for m in fake_server.models)
