"""The small-model benchmark: strict checks (selftest) and the runner's plumbing, on a fake model."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "bench" / "small_model" / "run.py"
TASKS = REPO / "bench" / "small_model" / "tasks"


def run_bench(*args: str, sigint_ignored: bool = False) -> subprocess.CompletedProcess[str]:
    # A shell's background job starts with SIGINT ignored: sigint_ignored runs the runner so.
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    return subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True,
                          timeout=900, preexec_fn=ignore)


def test_every_check_fails_untouched_and_near_misses_and_passes_the_reference() -> None:
    done = run_bench("--selftest")
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = [p for p in TASKS.iterdir() if (p / "task.toml").is_file()]
    assert len(tasks) >= 16
    assert done.stdout.count("\nok   ") + done.stdout.startswith("ok   ") == len(tasks)


def test_selftest_reports_a_check_that_passes_on_the_untouched_folder(tmp_path: Path) -> None:
    lax = tmp_path / "lax"
    shutil.copytree(TASKS / "edit_json_timeout", lax)
    (lax / "check.py").write_text("from checklib import passed\npassed()\n")
    done = run_bench("--selftest", "--tasks-dir", str(tmp_path))
    assert done.returncode == 1
    assert "BAD  lax" in done.stdout
    assert "untouched folder: expected a clean FAIL, got exit 0" in done.stdout
    assert "near miss 'wrote the number as a string'" in done.stdout


def test_a_run_drives_tether_in_a_fresh_repository_each_time_and_records_it(tmp_path: Path) -> None:
    solve = Reply(tool_calls=[("write_file", {"filepath": "todo_count.txt", "content": "9\n"})],
                  usage=(120, 7))
    with FakeServer([solve, Reply(text="Wrote 9.", usage=(150, 3)),
                     Reply(text="There are 9.", usage=(90, 4))]) as server:
        done = run_bench("--provider", "openai", "--base-url", server.url + "/v1",
                         "--model", "fake-coder:7b", "--protocol", "native", "--profile", "full", "--tasks", "count_todos", "--no-warmup",
                         "--repeat", "2", "--label", "fake", "--results-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "solved 1/1 + 0/1" in done.stdout
    results = json.loads((tmp_path / "fake.json").read_text())
    assert results["summary"]["solved_per_run"] == [1, 0]
    first, second = results["attempts"]
    assert (first["solved"], first["requests"], first["exit_code"]) == (True, 2, 0)
    assert (first["prompt_tokens"], first["completion_tokens"]) == (270, 10)
    assert first["tool_calls"] == ["write_file"]
    # the second run starts from the untouched project, so the first run's file is not there
    assert (second["solved"], second["requests"], second["tool_calls"]) == (False, 1, [])
    assert "todo_count.txt does not exist" in second["check"]
    transcript = json.loads((tmp_path / "fake" / "count_todos.r1.out.json").read_text())
    assert transcript["result"] == "Wrote 9."
    assert "todo_count.txt" in (tmp_path / "fake" / "count_todos.r1.diff").read_text()
    sent = server.bodies("/v1/chat/completions")[0]
    assert "count the lines that contain TODO" in json.dumps(sent)


def test_levers_off_reach_tether_and_the_results(tmp_path: Path) -> None:
    with FakeServer([Reply(text="There are 9.", usage=(90, 4))]) as server:
        done = run_bench("--provider", "openai", "--base-url", server.url + "/v1",
                         "--model", "fake-coder:7b", "--profile", "small", "--tasks", "count_todos",
                         "--no-warmup", "--levers-off", "terse,stop", "--output-format", "stream-json",
                         "--label", "off", "--results-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "off.json").read_text())["levers_off"] == "terse,stop"
    events = (tmp_path / "off" / "count_todos.r1.out.jsonl").read_text().splitlines()
    levers = json.loads(events[0])["levers"]
    assert "terse" not in levers and "stop" not in levers and "nudges" in levers


@pytest.mark.parametrize("sigint_ignored", [False, True])
def test_a_run_that_times_out_is_interrupted_and_keeps_what_tether_reported(
    tmp_path: Path, sigint_ignored: bool,
) -> None:
    # The timeout must outlast tether's start on a loaded machine (its Ctrl-C handler writes
    # the result only once it is running); the server never answers within it.
    with FakeServer([Reply(text="thinking...", delay=300)]) as server:
        done = run_bench("--provider", "openai", "--base-url", server.url + "/v1",
                         "--model", "fake-coder:7b", "--tasks", "ask_retry_limit", "--timeout", "20", "--no-warmup",
                         "--output-format", "stream-json", "--label", "slow",
                         "--results-dir", str(tmp_path), sigint_ignored=sigint_ignored)
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = json.loads((tmp_path / "slow.json").read_text())["attempts"]
    assert (result["solved"], result["timed_out"], result["exit_code"]) == (False, True, None)
    assert result["stop_reason"] == "cancelled"  # tether's own result, written on Ctrl-C
    lines = (tmp_path / "slow" / "ask_retry_limit.r1.out.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["type"] == "init"
