"""The model cache of `tether --local`: the download (against a local HTTP server: progress,
resume after a cut, checksum refused and kept out of the cache), `tether models`, and the
first run with nothing configured."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from fakeserver import QuietServer

from tether.store.model_download import (
    DownloadError,
    ProgressNotices,
    download_model,
    partial_path,
)
from tether.store.models import ModelSpec, cached_models, models_dir

BLOB = bytes(range(256)) * 400  # 102,400 bytes


class ModelServer(QuietServer):
    """Serves BLOB at /model.gguf with Range support; `cut_after` ends the next answer after
    that many bytes, as a dropped connection does."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ModelHandler)
        self.cut_after: int | None = None
        self.ranges: list[str | None] = []
        self.body = BLOB

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/model.gguf"


class ModelHandler(BaseHTTPRequestHandler):
    server: ModelServer

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        wanted = self.headers.get("Range")
        self.server.ranges.append(wanted)
        body = self.server.body
        start = int(wanted.removeprefix("bytes=").rstrip("-")) if wanted else 0
        self.send_response(206 if wanted else 200)
        if wanted:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        rest = body[start:]
        cut, self.server.cut_after = self.server.cut_after, None
        self.wfile.write(rest if cut is None else rest[:cut])
        self.wfile.flush()
        if cut is not None:
            self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    server = ModelServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def spec_of(body: bytes, sha: str | None = None) -> ModelSpec:
    return ModelSpec("tiny-model", "http://unused.invalid/x", len(body),
                     sha or hashlib.sha256(body).hexdigest(), 0.1)


async def test_download_reports_progress_and_lands_verified(
        tmp_path: Path, model_server: ModelServer) -> None:
    seen: list[tuple[int, int]] = []
    path = await download_model(spec_of(BLOB), tmp_path, lambda d, t: seen.append((d, t)),
                                url=model_server.url)
    assert path == tmp_path / "tiny-model.gguf" and path.read_bytes() == BLOB
    assert seen[-1] == (len(BLOB), len(BLOB)) and len(seen) >= 1
    assert [m.source for m in cached_models(tmp_path)] == [model_server.url]


async def test_an_interrupted_download_resumes_with_a_range_request(
        tmp_path: Path, model_server: ModelServer) -> None:
    model_server.cut_after = 30_000
    with pytest.raises(DownloadError, match="Put that file"):
        await download_model(spec_of(BLOB), tmp_path, url=model_server.url)
    partial = partial_path(tmp_path, spec_of(BLOB))
    assert partial.stat().st_size == 30_000
    assert cached_models(tmp_path) == []  # the partial file is not a model of the cache
    path = await download_model(spec_of(BLOB), tmp_path, url=model_server.url)
    assert model_server.ranges == [None, "bytes=30000-"]
    assert path.read_bytes() == BLOB and not partial.exists()


async def test_a_checksum_mismatch_is_refused_and_kept_out_of_the_cache(
        tmp_path: Path, model_server: ModelServer) -> None:
    with pytest.raises(DownloadError, match="expected checksum"):
        await download_model(spec_of(BLOB, sha="0" * 64), tmp_path, url=model_server.url)
    assert cached_models(tmp_path) == []
    assert not (tmp_path / "tiny-model.gguf").exists()
    assert not partial_path(tmp_path, spec_of(BLOB)).exists()


async def test_offline_says_where_to_put_the_file(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError) as caught:
        await download_model(spec_of(BLOB), tmp_path / "models",
                             url=f"http://127.0.0.1:{port}/m.gguf")
    message = str(caught.value)
    assert f"Put that file (102.4 KB) in {tmp_path / 'models'}" in message
    assert "\n" not in message


def test_progress_notices_come_every_ten_percent() -> None:
    said: list[str] = []
    progress = ProgressNotices("m", said.append)
    for done in [*range(0, 1000, 7), 1000]:
        progress(done, 1000)
    assert len(said) == 11 and said[-2].endswith("90% of 1.0 KB") and "[#########.]" in said[-2]


def test_the_cache_is_the_users_never_the_project(tmp_path: Path) -> None:
    assert models_dir({"TETHER_HOME": str(tmp_path)}) == tmp_path / "models"
    assert models_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "tether" / "models"


# ---------------------------------------------------------------- the command line


def run_cli(args: list[str], cwd: Path, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OPENAI", "OLLAMA", "TETHER", "ANTHROPIC", "GEMINI",
                                        "GOOGLE"))}
    environment.update({"TETHER_HOME": str(home), **env})
    return subprocess.run([sys.executable, "-m", "tether", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True)


def test_models_lists_and_removes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / "models"
    folder.mkdir(parents=True)
    (folder / "tiny.gguf").write_bytes(b"GGUF" + b"\0" * 2000)
    (folder / "tiny.gguf.json").write_text('{"url": "https://example.org/tiny.gguf"}')
    (folder / "mine.gguf").write_bytes(b"GGUF")
    listed = run_cli(["models"], tmp_path, home)
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == ["mine  4 B  from placed by hand",
                                          "tiny  2.0 KB  from https://example.org/tiny.gguf"]
    removed = run_cli(["models", "rm", "tiny"], tmp_path, home)
    assert removed.returncode == 0 and not (folder / "tiny.gguf").exists()
    assert not (folder / "tiny.gguf.json").exists()
    missing = run_cli(["models", "rm", "tiny"], tmp_path, home)
    assert missing.returncode == 2 and "cached: mine" in missing.stderr
    escape = run_cli(["models", "rm", "../models/mine"], tmp_path, home)
    assert escape.returncode == 2 and (folder / "mine.gguf").exists()


def test_first_run_in_print_mode_names_local_and_connect(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run_cli(["-p", "hi"], tmp_path, tmp_path / "home", OLLAMA_HOST=f"http://127.0.0.1:{port}")
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "--local" in lines[0] and "/connect" in lines[0]
    assert f"no Ollama at http://127.0.0.1:{port}" in lines[0]
    assert "no API key in the environment" in lines[0]


def test_local_with_another_provider_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli(["-p", "hi", "--local", "--provider", "openai"], tmp_path, tmp_path / "home")
    assert proc.returncode == 2 and "--local" in proc.stderr


def test_base_url_with_local_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli(["-p", "hi", "--local", "--base-url", "http://127.0.0.1:9"], tmp_path,
                   tmp_path / "home")
    assert proc.returncode == 2 and "not supported for provider 'local'" in proc.stderr
