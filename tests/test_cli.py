"""`tether -p` end to end, in a subprocess, against the local fake provider server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply

from tether.providers import PROVIDERS


def run_cli(args: list[str], cwd: Path, home: Path, stdin: str | None = None, **env: str):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "TETHER"))}
    # The fake server is local, so auto would pick the small profile; these tests are about the
    # full one (tests/test_profile.py covers small), unless a test asks for another.
    environment.update({"TETHER_HOME": str(home), "OPENAI_API_KEY": "sk-test-not-a-real-key",
                        "TETHER_PROFILE": "full", **env})
    return subprocess.run(
        [sys.executable, "-m", "tether", *args],
        cwd=cwd, env=environment, input=stdin, capture_output=True, text=True, timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "answer.txt").write_text("The answer is 42.\n")
    (root / "notes").mkdir()
    return root


def two_tool_script() -> list[Reply]:
    return [
        Reply(tool_calls=[("list_dir", {"path": "."})]),
        Reply(tool_calls=[("read_file", {"filepath": "answer.txt"})]),
        Reply(text="The file says the answer is 42."),
    ]


def openai_args(server: FakeServer, *extra: str) -> list[str]:
    return ["--provider", "openai", "--base-url", server.url + "/v1", "--model", "fake", *extra]


def test_text_format_answer_on_stdout_progress_on_stderr(project: Path, home: Path) -> None:
    with FakeServer(two_tool_script()) as server:
        proc = run_cli(["-p", "What is the answer?", *openai_args(server)], project, home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The file says the answer is 42.\n"
    assert "list_dir" in proc.stderr and "read_file answer.txt" in proc.stderr
    assert "sk-test" not in proc.stdout + proc.stderr


def test_json_format_is_one_result_object(project: Path, home: Path) -> None:
    with FakeServer(two_tool_script()) as server:
        proc = run_cli(["-p", "What is the answer?", "--output-format", "json", *openai_args(server)], project, home)
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["type"] == "result" and result["is_error"] is False
    assert result["result"] == "The file says the answer is 42."
    assert result["stop_reason"] == "end_turn" and result["num_turns"] == 3
    assert result["usage"]["input_tokens"] > 0 and result["usage"]["output_tokens"] > 0
    assert [c["name"] for c in result["tool_calls"]] == ["list_dir", "read_file"]
    assert all(not c["is_error"] and c["elapsed_ms"] >= 0 and c["summary"] for c in result["tool_calls"])
    last = requests[-1][1]
    tool_messages = [m for m in last["messages"] if m["role"] == "tool"]
    assert "42" in tool_messages[-1]["content"]


def test_a_delegated_search_grows_the_parent_context_by_the_report_only(project: Path, home: Path) -> None:
    script = [
        Reply(tool_calls=[("spawn_agent", {"task": "find where the answer is written"})]),
        Reply(tool_calls=[("list_dir", {"path": "."})]),  # the sub-agent's requests
        Reply(tool_calls=[("read_file", {"filepath": "answer.txt"})]),
        Reply(text="REPORT: answer.txt line 1 holds it."),
        Reply(text="It is in answer.txt."),
    ]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "Where is the answer?", "--output-format", "json", "--allow", "spawn_agent",
                        *openai_args(server)], project, home)
        requests = server.bodies("/v1/chat/completions")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert len(requests) == 5
    (agent,) = result["subagents"]
    assert agent["state"] == "completed" and agent["steps"] == 3
    # 10 input tokens a request: the agent's 3 count in the request's usage beside the parent's 2
    assert agent["usage"]["input_tokens"] == 30 and result["usage"]["input_tokens"] == 50
    last = json.dumps(requests[-1]["messages"])
    assert "REPORT: answer.txt line 1 holds it." in last
    assert "The answer is 42." not in last and "The answer is 42." in json.dumps(requests[3]["messages"])
    assert Path(agent["transcript"]).is_file()


def test_stream_json_emits_events_then_the_result(project: Path, home: Path) -> None:
    with FakeServer(two_tool_script()) as server:
        proc = run_cli(["-p", "What is the answer?", "--output-format", "stream-json", *openai_args(server)],
                       project, home)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "init" and kinds[-1] == "result"
    assert events[0]["protocol"] == "native" and "read_file" in events[0]["tools"]
    assert kinds.count("tool_start") == 2 and kinds.count("tool_end") == 2
    assert kinds.index("tool_start") < kinds.index("tool_end") < kinds.index("text")
    assert "".join(e["text"] for e in events if e["type"] == "text") == "The file says the answer is 42."
    assert events[-1]["result"] == "The file says the answer is 42."


def test_prompt_from_stdin(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="pong")]) as server:
        proc = run_cli(["-p", "-", *openai_args(server)], project, home, stdin="ping\n")
        body = server.requests[-1][1]
    assert proc.returncode == 0 and proc.stdout == "pong\n"
    assert body["messages"][-1]["content"].endswith("# Request\nping")


def test_ollama_text_protocol_two_tools(project: Path, home: Path) -> None:
    script = [
        Reply(text='<tool_call>\n{"name": "list_dir", "arguments": {"path": "."}}\n</tool_call>'),
        Reply(text='```json\n{"name": "read_file", "arguments": {"filepath": "answer.txt"}}\n```'),
        Reply(text="It is 42."),
    ]
    with FakeServer(script, tools_capable=False) as server:
        proc = run_cli(["-p", "answer?", "--output-format", "json"], project, home, OLLAMA_HOST=server.url)
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "It is 42."
    assert [c["name"] for c in result["tool_calls"]] == ["list_dir", "read_file"]
    chats = [body for path, body in requests if path == "/api/chat"]
    assert "tools" not in chats[0]
    assert "<tool_call>" in chats[0]["messages"][0]["content"], "the tool menu is in the system prompt"
    assert "[Tool Result for 'read_file']" in chats[-1]["messages"][-1]["content"]


def test_side_effects_are_blocked_without_auto_or_allow(project: Path, home: Path) -> None:
    script = [Reply(tool_calls=[("write_file", {"filepath": "notes/a.md", "content": "hi"})]), Reply(text="ok")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "write", "--output-format", "json", *openai_args(server)], project, home)
    result = json.loads(proc.stdout)
    assert result["tool_calls"][0]["is_error"] is True
    assert not (project / "notes" / "a.md").exists()


@pytest.mark.parametrize("flag", [["--auto"], ["--allow", "write_file(notes/*)"]])
def test_auto_or_a_matching_allow_rule_lets_writes_run(project: Path, home: Path, flag: list[str]) -> None:
    script = [Reply(tool_calls=[("write_file", {"filepath": "notes/a.md", "content": "hi"})]), Reply(text="ok")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "write", *flag, *openai_args(server)], project, home)
    assert proc.returncode == 0, proc.stderr
    assert (project / "notes" / "a.md").read_text() == "hi"


def test_allow_rule_for_another_folder_does_not_allow(project: Path, home: Path) -> None:
    script = [Reply(tool_calls=[("write_file", {"filepath": "a.md", "content": "hi"})]), Reply(text="ok")]
    with FakeServer(script) as server:
        done = run_cli(["-p", "write", "--allow", "write_file(notes/*)", *openai_args(server)], project, home)
    assert not (project / "a.md").exists()
    assert "write_file needs the user's approval" in done.stderr  # the call was made, and refused


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_provider_exit_1_one_clear_line(project: Path, home: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    proc = run_cli(["-p", "hi"], project, home, OLLAMA_HOST=url)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert url in proc.stderr
    assert proc.stdout == ""


def test_unreachable_provider_in_json_is_an_error_result(project: Path, home: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    proc = run_cli(["-p", "hi", "--output-format", "json", "--provider", "openai", "--base-url", url], project, home)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["is_error"] is True and result["stop_reason"] == "error"
    assert "127.0.0.1" in result["result"]


def test_api_error_exit_1(project: Path, home: Path) -> None:
    with FakeServer([Reply(status=400, error_message="model 'fake' does not exist")]) as server:
        proc = run_cli(["-p", "hi", *openai_args(server)], project, home)
    assert proc.returncode == 1
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_step_cap_exit_3(project: Path, home: Path) -> None:
    with FakeServer() as server:
        server.default_reply = Reply(tool_calls=[("list_dir", {"path": "."})])
        proc = run_cli(["-p", "loop", "--max-steps", "2", "--output-format", "json", *openai_args(server)],
                       project, home)
        chats = [b for p, b in server.requests if p.endswith("/chat/completions")]
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["stop_reason"] == "max_steps"
    assert len(chats) == 3 and "tools" not in chats[-1]


@pytest.mark.parametrize("args", [
    ["-p", ""],
    ["-p", "hi", "--max-steps", "0"],
    ["-p", "hi", "--output-format", "yaml"],
    ["-p", "hi", "-C", "/no/such/dir"],
    ["-p", "hi", "--provider", "nosuch"],
    ["-p", "hi", "--allow", "write_file()"],
    ["--no-such-flag"],
])
def test_usage_errors_exit_2(project: Path, home: Path, args: list[str]) -> None:
    proc = run_cli(args, project, home)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip()


def test_version(project: Path, home: Path) -> None:
    proc = run_cli(["--version"], project, home)
    assert proc.returncode == 0 and proc.stdout.startswith("tether ")


def test_a_run_leaves_out_httpx_s_own_command_line_client(project: Path, home: Path) -> None:
    """httpx's package would import click, rich and pygments for a command line tether never runs."""
    script = ("import sys\nfrom tether import cli\ncli.main(['--help'])\nimport httpx\n"
              "print(sorted({'click', 'pygments'} & set(sys.modules)), callable(httpx.main))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True,
                          text=True, env={**os.environ, "TETHER_HOME": str(home)})
    assert proc.stdout.splitlines()[-1] == "[] True"


def read_until_text(proc: subprocess.Popen) -> list[str]:
    """stream-json lines up to the first text delta; fails loudly if the stream ends first."""
    lines = []
    while not lines or not lines[-1].startswith('{"type": "text"'):
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"the stream ended before any text: {lines}\n{proc.stderr.read()}")
        lines.append(line)
    return lines


def test_interrupt_exit_130(project: Path, home: Path) -> None:
    environment = {**os.environ, "TETHER_HOME": str(home), "OPENAI_API_KEY": "k"}
    # The answer takes far longer than any test waits (the server stops pacing at teardown),
    # so SIGINT always lands while it is still streaming.
    with FakeServer([Reply(text="slow " * 2000, chunk_size=5, delay=0.05)]) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether", "-p", "hi", "--output-format", "stream-json", *openai_args(server)],
            cwd=project, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        lines = read_until_text(proc)  # init, then the answer is under way
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert json.loads(lines[0])["type"] == "init"
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    result = json.loads(out.splitlines()[-1])
    assert result["stop_reason"] == "cancelled" and result["num_turns"] == 0  # none completed


def test_a_dropped_stream_keeps_the_partial_answer(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="The first half of an answer that never ends", chunk_size=5, drop_after=5)]) as s:
        text = run_cli(["-p", "hi", *openai_args(s)], project, home)
    with FakeServer([Reply(text="The first half of an answer that never ends", chunk_size=5, drop_after=5)]) as s:
        as_json = run_cli(["-p", "hi", "--output-format", "json", *openai_args(s)], project, home)
    assert text.returncode == 1 and text.stdout.startswith("The first")
    assert "error" in text.stderr
    result = json.loads(as_json.stdout)
    assert result["is_error"] and result["partial_result"].startswith("The first")


def test_rule_file_problems_are_reported_in_one_shot_mode(project: Path, home: Path) -> None:
    (project / ".permissions.json").write_text('{"allow": ["read_file"], "deny": ["write_file()", "delete_file"]}')
    with FakeServer([Reply(text="ok")]) as server:
        proc = run_cli(["-p", "hi", *openai_args(server)], project, home)
    assert proc.returncode == 0
    assert "write_file()" in proc.stderr and "not trusted" in proc.stderr


def test_a_failing_command_is_marked_as_such(project: Path, home: Path) -> None:
    script = [Reply(tool_calls=[("run_cmd", {"command": "exit 3"})]), Reply(text="it failed")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "run it", "--auto", *openai_args(server)], project, home)
    assert "! exit 3" in proc.stderr


def test_a_small_model_session_in_the_text_protocol_writes_runs_and_answers(project: Path, home: Path) -> None:
    """The shapes a small local model really writes: a <content> block, a bare JSON object,
    a json fence; the file body needs no escaping and the command's output reaches the model."""
    body = 'print("sum:", sum([1, 2, 3]))\nprint("quote \\" and backslash \\\\ kept")\n'
    script = [
        Reply(text='I will write it.\n<tool_call>\n{"name": "write_file", "arguments": {"filepath": "calc.py"}}\n'
                   f"<content>\n{body}</content>\n</tool_call>"),
        Reply(text='{"name": "run_cmd", "arguments": {"command": "python3 calc.py"}}'),
        Reply(text='```json\n{"name": "read_file", "arguments": {"filepath": "calc.py"}}\n```'),
        Reply(text="calc.py prints sum: 6."),
    ]
    with FakeServer(script, tools_capable=False) as server:
        proc = run_cli(["-p", "write calc.py and run it", "--auto", "--output-format", "json"],
                       project, home, OLLAMA_HOST=server.url)
        chats = [b for p, b in server.requests if p == "/api/chat"]
    assert proc.returncode == 0, proc.stderr
    assert (project / "calc.py").read_text() == body  # the newline before </content> is the file's
    result = json.loads(proc.stdout)
    assert [c["name"] for c in result["tool_calls"]] == ["write_file", "run_cmd", "read_file"]
    assert not any(c["is_error"] for c in result["tool_calls"])
    assert "sum: 6" in chats[2]["messages"][-1]["content"]
    assert result["result"] == "calc.py prints sum: 6."


# ---------------------------------------------------------------- bad bytes and broken files


@pytest.fixture
def latin1_name(project: Path) -> str:
    """A file whose name is not UTF-8 (caf\\xe9.txt, as a Latin-1 system writes it)."""
    with open(os.fsencode(project) + b"/caf\xe9.txt", "wb") as fh:
        fh.write(b"menu: coffee\n")
    return "caf\\xe9.txt"


@pytest.mark.parametrize("call", [("list_dir", {"path": "."}), ("search_in_file", {"pattern": "coffee"})])
def test_a_file_name_that_is_not_utf8_reaches_the_model_escaped(
    project: Path, home: Path, latin1_name: str, call: tuple[str, dict]
) -> None:
    with FakeServer([Reply(tool_calls=[call]), Reply(text="Seen.")]) as server:
        proc = run_cli(["-p", "look", "--output-format", "json", *openai_args(server)], project, home)
        chats = [b for p, b in server.requests if p.endswith("/chat/completions")]
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["result"] == "Seen." and not result["tool_calls"][0]["is_error"]
    sent = chats[-1]["messages"][-1]["content"]
    assert latin1_name in sent and "not valid UTF-8" in sent


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
def test_a_lone_surrogate_in_tool_arguments_still_ends_with_the_result(
    project: Path, home: Path, fmt: str
) -> None:
    script = [Reply(tool_calls=[("read_file", {"filepath": "x\ud800y"})]), Reply(text="done \ud800")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "read", "--output-format", fmt, *openai_args(server)], project, home)
        chats = [b for p, b in server.requests if p.endswith("/chat/completions")]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    last = json.loads(proc.stdout.splitlines()[-1])
    assert last["type"] == "result" and last["result"] == "done \ufffd"
    assert last["tool_calls"][0]["is_error"] and last["tool_calls"][0]["arguments"] == {"filepath": "x\ufffdy"}
    assert "broken character" in chats[-1]["messages"][-1]["content"]


def test_a_prompt_that_is_not_utf8_is_sent_escaped(project: Path, home: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "TETHER"))}
    environment.update({"TETHER_HOME": str(home), "OPENAI_API_KEY": "k"})
    with FakeServer([Reply(text="ok")]) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "tether", "-p", "-", *openai_args(server)],
            cwd=project, env=environment, input=b"un caf\xe9\n", capture_output=True, timeout=60,
        )
        body = server.requests[-1][1]
    assert proc.returncode == 0, proc.stderr
    assert body["messages"][-1]["content"].endswith("# Request\nun caf\\xe9")
    assert b"1 byte(s) that are not UTF-8" in proc.stderr


def test_a_config_file_that_is_not_utf8_is_named_and_ignored(project: Path, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_bytes(b'max_steps = 5\nmodel = "caf\xe9"\n')
    with FakeServer([Reply(text="ok")]) as server:
        proc = run_cli(["-p", "hi", *openai_args(server)], project, home)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{home / 'config.toml'} is not UTF-8 text (byte 0xe9 on line 2)" in proc.stderr


@pytest.mark.parametrize("flags", [["--auto"], []])
def test_an_unreadable_rules_file_refuses_side_effects_in_one_shot_mode(
    project: Path, home: Path, flags: list[str]
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    rules = home / "permissions.json"
    rules.write_text('{"deny": ["write_file(notes/*)"')  # truncated: its deny rule is lost
    script = [Reply(tool_calls=[("write_file", {"filepath": "notes/a.md", "content": "hi"})]),
              Reply(tool_calls=[("read_file", {"filepath": "answer.txt"})]), Reply(text="ok")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "write", "--output-format", "json", *flags, *openai_args(server)],
                       project, home)
        chats = [b for p, b in server.requests if p.endswith("/chat/completions")]
    refusal = chats[1]["messages"][-1]["content"]
    assert f"{rules} is not valid JSON" in refusal and "deny rules may be missing" in refusal
    result = json.loads(proc.stdout)
    write, read = result["tool_calls"]
    assert write["is_error"] and not read["is_error"]  # reads go on
    assert not (project / "notes" / "a.md").exists()
    assert f"{rules} is not valid JSON" in proc.stderr
    assert rules.read_text() == '{"deny": ["write_file(notes/*)"'


@pytest.mark.parametrize("fmt", ["json", "stream-json", "text"])
@pytest.mark.parametrize("where", ["build", "start"])
async def test_an_unexpected_failure_still_ends_the_output_with_a_result(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, where: str
) -> None:
    import io

    import tether.runtime
    from tether.cli import EXIT_ERROR, run_one_shot
    from tether.runtime import RunOptions
    from tether.store.config import Settings
    from tether.ui.headless import HeadlessUI

    real_build = tether.runtime.build_runtime

    def broken_build(*args: object, **kwargs: object):  # noqa: ANN202
        if where == "build":
            raise RuntimeError("a bug \ud800 in the wiring")
        runtime = real_build(*args, **kwargs)  # type: ignore[arg-type]

        async def start() -> str:
            raise RuntimeError("a bug \ud800 at start")

        runtime.start = start  # type: ignore[method-assign]
        return runtime

    monkeypatch.setattr(tether.runtime, "build_runtime", broken_build)
    out, err = io.StringIO(), io.StringIO()
    ui = HeadlessUI(fmt, out=out, err=err)
    settings = Settings(provider="openai", openai_base_url="http://127.0.0.1:9/v1", model="fake")
    options = RunOptions(root=project, home=home)
    code = await run_one_shot(settings, options, ui, {"OPENAI_API_KEY": "k"}, "hi")
    assert code == EXIT_ERROR
    if fmt == "text":
        assert "stopped by an unexpected RuntimeError: a bug \ufffd" in err.getvalue()
        return
    last = json.loads(out.getvalue().splitlines()[-1])
    assert last["type"] == "result" and last["is_error"] and last["stop_reason"] == "error"
    assert last["result"].startswith("stopped by an unexpected RuntimeError: a bug \ufffd")


def test_a_reader_that_goes_away_ends_the_run_cleanly(project: Path, home: Path) -> None:
    # `tether -p ... | head -c 10`: far more output than a pipe holds, then the reader leaves.
    fmt = "stream-json"
    big = "x" * 3_000_000
    with FakeServer([Reply(text=big, chunk_size=20_000,
                           tool_calls=[("run_cmd", {"command": "touch ran"})]),
                     Reply(text=big, chunk_size=20_000)]) as server:
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "TETHER"))}
        environment.update(TETHER_HOME=str(home), OPENAI_API_KEY="sk-test")
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether", "-p", "go", "--auto", "--sandbox", "off",
             "--output-format", fmt, *openai_args(server)],
            cwd=project, env=environment, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        try:
            assert proc.stdout.read(10)
            proc.stdout.close()
            err = proc.stderr.read().decode()
            code = proc.wait(timeout=60)
        finally:
            proc.kill()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert code == 128 + signal.SIGPIPE, err
    assert not (project / "ran").exists(), "the run went on with nobody reading it"


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
@pytest.mark.parametrize("reply", [
    Reply(raw_frames=[b"data: {not json}\n\n", b"data: [DONE]\n\n"]),
    Reply(text="Half of an answer", chunk_size=3, malformed_chunk=True),
], ids=["garbage-then-done", "one-bad-chunk"])
def test_a_broken_stream_is_an_error_in_every_format(
    project: Path, home: Path, fmt: str, reply: Reply
) -> None:
    with FakeServer([reply]) as server:
        proc = run_cli(["-p", "hi", "--output-format", fmt, *openai_args(server)], project, home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    if fmt == "stream-json":
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        assert [e["level"] for e in lines if e["type"] == "notice"] == ["error"]
        result = lines[-1]
    else:
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("error: "), proc.stderr
        result = json.loads(proc.stdout) if fmt == "json" else None
    if result is not None:
        assert result["is_error"] and result["stop_reason"] == "error"
        assert "readable answer" in result["result"] or "not valid JSON" in result["result"]
        if reply.malformed_chunk:  # what came before the bad piece is kept, marked partial
            assert result["partial_result"] and result["partial_result"] != "Half of an answer"


def test_a_run_with_an_mcp_server_ends_without_a_warning_after_a_command(
    project: Path, home: Path, tmp_path: Path
) -> None:
    from mcp_helpers import fake_entry, outside_config, write_config

    config = write_config(outside_config(tmp_path), {"fake": fake_entry()})
    script = [Reply(tool_calls=[("run_cmd", {"command": "echo ran"})]), Reply(text="Done.")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "go", "--auto", "--sandbox", "off", "--mcp-config", str(config),
                        *openai_args(server)], project, home)
    assert proc.returncode == 0 and proc.stdout == "Done.\n", proc.stderr
    assert "MCP server 'fake' is ready" in proc.stderr
    assert "warning" not in proc.stderr and "stopped" not in proc.stderr, proc.stderr


def read_a_little_then_close(args: list[str], project: Path, home: Path,
                             **env: str) -> tuple[int, str]:
    """Run `tether` with a reader that takes 10 bytes of stdout and leaves, as `| head -c 10`
    does; the exit code and stderr."""
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OPENAI", "TETHER", "PYTHONUNBUFFERED"))}
    environment.update(TETHER_HOME=str(home), OPENAI_API_KEY="sk-test", TETHER_PROFILE="full",
                       **env)
    proc = subprocess.Popen([sys.executable, "-m", "tether", *args], cwd=project,
                            env=environment, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        assert proc.stdout.read(10)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        return proc.wait(timeout=60), err
    finally:
        proc.kill()


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_an_answer_cut_off_by_its_reader_exits_141_in_every_format(
    project: Path, home: Path, fmt: str, unbuffered: bool
) -> None:
    # text and json write the answer in one go at the end: far more than a pipe holds, so the
    # reader leaves in the middle of that write. Without a buffer of its own (PYTHONUNBUFFERED,
    # common in containers) a text stream dropped the rest of a short write silently: exit 0.
    env = {"PYTHONUNBUFFERED": "1"} if unbuffered else {}
    with FakeServer([Reply(text="x" * 3_000_000, chunk_size=100_000)]) as server:
        code, err = read_a_little_then_close(
            ["-p", "go", "--output-format", fmt, *openai_args(server)], project, home, **env)
    assert err == ""
    assert code == 128 + signal.SIGPIPE


@pytest.mark.parametrize("name", sorted(set(PROVIDERS) - {"local"}))  # local: no server
def test_base_url_reaches_every_registered_provider(name: str) -> None:
    """--base-url and the provider read one table: a new provider cannot miss the flag."""
    from tether.cli import with_base_url
    from tether.providers import base_url_of
    from tether.store.config import Settings

    settings = with_base_url(Settings(provider=name), "http://127.0.0.1:9/custom/")
    assert base_url_of(settings, name) == "http://127.0.0.1:9/custom"
