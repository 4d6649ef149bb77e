"""Messages and settings that tell the truth, seen as a user sees them: a bad provider in
config.toml, unusable --base-url values, a server that answers with a web page, summaries
cut at a word, arguments that were not JSON, the chat's footer after a dropped stream,
/undo with auto-commit off and plan mode's refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from fakeserver import FakeServer, QuietServer, Reply
from ptyapp import PtyApp, app_env, openai_args

from tether.core.textclip import clip_words
from tether.engine.dispatch import first_line, summarize
from tether.providers._errors import one_line

CHAT = "/v1/chat/completions"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return root


def run_cli(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "TETHER"))}
    environment.update(TETHER_HOME=str(home), OPENAI_API_KEY="sk-test", TETHER_PROFILE="full")
    return subprocess.run([sys.executable, "-m", "tether", *args], cwd=cwd, env=environment,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


# ---------------------------------------------------------------- settings


def test_an_unknown_provider_in_config_is_reported_and_ignored_with_base_url(project: Path, home: Path) -> None:
    home.mkdir()
    (home / "config.toml").write_text('provider = "nope"\n')
    with FakeServer([Reply(text="Hi from ollama."), Reply(text="Hi again.")]) as server:
        # the default provider (ollama) serves the request; --base-url sets its URL
        with_url = run_cli(["-p", "hi", "--model", "fake", "--base-url", server.url], project, home)
        asked = server.bodies("/api/chat")
    assert with_url.returncode == 0, with_url.stderr
    assert with_url.stdout == "Hi from ollama.\n" and asked
    assert "invalid value for 'provider' ('nope' is not a provider" in with_url.stderr
    assert "ignored" in with_url.stderr
    assert "--base-url is not supported" not in with_url.stderr


def test_an_unknown_provider_in_config_does_not_stop_a_one_shot_run(project: Path, home: Path) -> None:
    home.mkdir()
    (home / "config.toml").write_text('provider = "nope"\n')
    with FakeServer([Reply(text="Fine.")]) as server:
        proc = run_cli(["-p", "hi", *openai_args(server.url)], project, home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Fine.\n" and "'nope' is not a provider" in proc.stderr


@pytest.mark.parametrize("url", ["http://", "", "ftp://example.com", "   "])
def test_a_base_url_no_request_could_use_is_a_usage_error(project: Path, home: Path, url: str) -> None:
    proc = run_cli(["-p", "hi", "--provider", "openai", "--base-url", url], project, home)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"tether: --base-url {url!r}: ") and "URL" in line
    assert "cannot reach" not in line


# ---------------------------------------------------------------- a server that is no LLM API

ERROR_PAGE = (
    "<!DOCTYPE html>\n<html>\n<head><title>400 Bad Request</title>\n<style>body{margin:0}</style>"
    "</head>\n<body>\n<h1>Not Found</h1>\n" + "<p>The requested URL was not found here.</p>\n" * 40
    + "<hr><address>Apache Server at 127.0.0.1</address>\n</body></html>\n"
)


class _PageHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def _page(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = ERROR_PAGE.encode()
        self.send_response(400)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _page


@pytest.fixture
def web_server() -> Iterator[str]:
    httpd = QuietServer(("127.0.0.1", 0), _PageHandler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_web_page_answer_shows_the_status_and_one_line(project: Path, home: Path, web_server: str) -> None:
    proc = run_cli(["-p", "hi", *openai_args(web_server)], project, home)
    assert proc.returncode == 1
    [error] = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert "returned an error (400 Bad Request: a web page, not an API answer)." in error
    assert "<" not in error and "requested URL" not in error and "margin" not in error
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------- cut at a word


def test_cut_text_ends_at_a_word() -> None:
    message = "This cannot be undone because the file changed after the edit was made"
    assert first_line(message, 20) == "This cannot be…"
    assert one_line(message, 22) == "This cannot be undone…"
    assert clip_words(message, 200) == message
    assert clip_words("x" * 50, 10) == "x" * 9 + "…"  # one long word: cut inside it


def test_a_summary_leaves_out_the_sentence_that_introduces_what_follows() -> None:
    result = ("old_content was not found in calc.py. The closest match (90% similar) is line 2:\n"
              "2:ab|    return a + b\nCopy the text exactly.")
    assert summarize(result) == "old_content was not found in calc.py. (3 lines)"


def test_a_failed_edit_is_summed_up_without_a_dangling_colon(project: Path, home: Path) -> None:
    edit = ("edit_file", {"filepath": "calc.py", "old_content": "    return a - b\n",
                          "new_content": "    return a * b\n"})
    with FakeServer([Reply(tool_calls=[edit]), Reply(text="It did not match.")]) as server:
        proc = run_cli(["-p", "fix it", "--auto", *openai_args(server.url)], project, home)
    assert proc.returncode == 0, proc.stderr
    [summary] = [line for line in proc.stderr.splitlines() if line.lstrip().startswith("✗")]
    assert "old_content was not found in calc.py." in summary
    assert "is line" not in summary and ":" not in summary.split("calc.py.")[1]


# ---------------------------------------------------------------- arguments that are not JSON


def broken_call_frames() -> list[bytes]:
    def frame(delta: dict, finish: str | None = None) -> bytes:
        chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "fake",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(chunk)}\n\n".encode()

    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": '{"filepath": "calc.py"'}}
    return [frame({"role": "assistant", "content": ""}), frame({"tool_calls": [call]}),
            frame({}, "tool_calls"), b"data: [DONE]\n\n"]


@pytest.mark.parametrize("fmt", ["text", "stream-json"])
def test_arguments_that_are_not_json_never_show_the_internal_key(
    project: Path, home: Path, fmt: str
) -> None:
    with FakeServer([Reply(raw_frames=broken_call_frames()), Reply(text="Sent it again.")]) as server:
        proc = run_cli(["-p", "read calc.py", "--output-format", fmt, *openai_args(server.url)],
                       project, home)
    assert proc.returncode == 0, proc.stderr
    assert "__invalid_json__" not in proc.stdout + proc.stderr
    if fmt == "text":
        assert 'read_file (arguments that are not valid JSON: {"filepath": "calc.py")' in proc.stderr
        return
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    [start] = [e for e in events if e["type"] == "tool_start"]
    assert start["arguments"] == {} and start["invalid_arguments"] == '{"filepath": "calc.py"'


# ---------------------------------------------------------------- the chat


def chat(server: FakeServer, project: Path, home: Path) -> PtyApp:
    app = PtyApp(openai_args(server.url), cwd=project, env=app_env(home))
    try:
        app.wait_for_prompt()
    except BaseException:
        app.close()
        raise
    return app


def test_the_footer_after_a_dropped_stream_counts_the_request_that_was_cut_off(
    project: Path, home: Path
) -> None:
    with FakeServer([Reply(text="The first half of an answer that never ends", chunk_size=5,
                           drop_after=5)]) as server, chat(server, project, home) as app:
        app.line("explain")
        app.wait_for_text("request(s)")
        app.wait_for_prompt()
        footer = next(line for line in app.text_since_line().splitlines() if "request(s)" in line)
        app.ctrl_d()
    assert "The first" in app.text()
    assert footer.startswith("0 request(s) + 1 cut off") and "0→0" not in footer
    assert "tokens not reported" in footer


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x",
                        "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"})


def test_undo_with_autocommit_off_says_so(project: Path, home: Path) -> None:
    git(project, "init", "-q")
    git(project, "add", "calc.py")
    git(project, "commit", "-qm", "my own work")
    with FakeServer() as server, chat(server, project, home) as app:
        app.line("/autocommit off")
        app.wait_for_prompt()
        app.line("/undo")
        app.wait_for_prompt()
        said = " ".join(app.text_since_line().split())
        app.ctrl_d()
    assert "auto-commit is off" in said and "Nothing of tether's to undo" in said
    assert "is yours" not in said


def test_plan_mode_refuses_as_plan_mode(project: Path, home: Path) -> None:
    write = ("write_file", {"filepath": "new.py", "content": "x = 1\n"})
    with FakeServer([Reply(tool_calls=[write]), Reply(text="I will plan first.")]) as server, \
            chat(server, project, home) as app:
        app.line("/planmode on")
        app.wait_for_prompt()
        app.line("add new.py")
        app.wait_for_text("I will plan first.")
        app.wait_for_prompt()
        app.ctrl_d()
        refusal = [m for m in server.bodies(CHAT)[1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "Blocked by plan mode: nothing may change" in refusal and "permission rule" not in refusal
    assert not (project / "new.py").exists()
