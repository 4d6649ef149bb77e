"""The headless contract: real `tether -p` output, run as a subprocess against the fake model
server, validated against the JSON Schemas kept in `src/tether/ui/schema/`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from test_cli import openai_args, run_cli

import tether
from tether.ui.contract import EVENT_TYPES, SCHEMA_DIR, SCHEMA_VERSION, schema_file


def load(kind: str) -> dict:
    return json.loads(schema_file(kind).read_text())


def registry() -> Registry:
    """Every schema by its `$id`, as a reader's validator would resolve the shared `common`."""
    resources = [Resource.from_contents(load(p.stem)) for p in sorted(SCHEMA_DIR.glob("*.json"))]
    return Registry().with_resources((r.id(), r) for r in resources)


def validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(load(kind), registry=registry())


def problems(obj: dict) -> list[str]:
    """What is wrong with one output object against the schema of its type."""
    return [f"{obj['type']}: {'/'.join(map(str, e.path))}: {e.message}"
            for e in validator(obj["type"]).iter_errors(obj)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "answer.txt").write_text("The answer is 42.\n")
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *command], cwd=root, check=True)
    return root


def busy_script() -> list[Reply]:
    """One run that meets every kind of event: thinking, text, a read, a write that is
    allowed and committed, a command that is refused, a sub-agent with a tool call."""
    return [
        Reply(thinking="Look first.", tool_calls=[("read_file", {"filepath": "answer.txt"})]),
        Reply(tool_calls=[("write_file", {"filepath": "notes/out.txt", "content": "42\n"})]),
        Reply(tool_calls=[("run_cmd", {"command": "rm -rf build"})]),
        Reply(tool_calls=[("spawn_agent", {"task": "check the answer"})]),
        Reply(tool_calls=[("read_file", {"filepath": "answer.txt"})]),  # the sub-agent's
        Reply(tool_calls=[("run_cmd", {"command": "echo checked"})]),  # its live output
        Reply(text="REPORT: it says 42."),
        Reply(text="Wrote notes/out.txt; the command was refused."),
    ]


def busy_run(repo: Path, home: Path, fmt: str) -> subprocess.CompletedProcess:
    with FakeServer(busy_script()) as server:
        return run_cli(["-p", "Write the answer down", "--output-format", fmt,
                        "--allow", "write_file", "--allow", "spawn_agent",
                        "--allow", "run_cmd(echo checked)", "--sandbox", "off",
                        "--mcp-config", str(repo / "none.json"), *openai_args(server)],
                       repo, home)


def test_every_schema_is_a_valid_json_schema_and_names_its_type() -> None:
    for kind in EVENT_TYPES:
        schema = load(kind)
        Draft202012Validator.check_schema(schema)
        assert schema["properties"]["type"]["const"] == kind
        assert {"type", "schema_version"} <= set(schema["required"])
    assert {p.stem for p in SCHEMA_DIR.glob("*.json")} == {*EVENT_TYPES, "common"}
    assert load("common")["$defs"]["schema_version"]["const"] == SCHEMA_VERSION


def test_a_schema_refuses_what_breaks_the_contract() -> None:
    """The schemas are strict enough to catch a broken shape (so the tests below prove it)."""
    good = {"type": "tool_start", "schema_version": SCHEMA_VERSION, "id": "c1", "name": "read_file",
            "arguments": {"filepath": "a"}}
    assert problems(good) == []
    assert problems({**good, "schema_version": 0}) and problems({**good, "arguments": "a"})
    assert problems({k: v for k, v in good.items() if k != "id"})


def test_stream_json_output_matches_the_schemas(repo: Path, home: Path) -> None:
    (repo / "none.json").write_text('{"mcpServers": {}}')
    proc = busy_run(repo, home, "stream-json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "init" and kinds[-1] == "result" and kinds.count("result") == 1
    # the run met every kind of line but the ones it has no reason to write
    assert set(kinds) >= set(EVENT_TYPES) - {"notice", "agent_notice", "checks"}
    assert all(e["schema_version"] == SCHEMA_VERSION for e in events)
    assert [p for e in events for p in problems(e)] == []
    init = events[0]
    assert init["tether_version"] == tether.__version__ and init["provider"] == "openai"
    assert init["model"] == "fake" and init["protocol"] == "native" and init["profile"] == "full"
    assert "write_file" in init["tools"] and init["mcp_servers"] == [] and init["instructions"] == []


def test_the_result_lists_files_changed_commits_and_refusals(repo: Path, home: Path) -> None:
    (repo / "none.json").write_text('{"mcpServers": {}}')
    proc = busy_run(repo, home, "json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert problems(result) == []
    assert result["files_changed"] == ["notes/out.txt"]
    (commit,) = result["commits"]
    log = subprocess.run(["git", "log", "-1", "--format=%H"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert commit["sha"] == log and commit["paths"] == ["notes/out.txt"] and commit["tool"] == "write_file"
    (denial,) = result["permission_denials"]
    assert denial["name"] == "run_cmd" and denial["arguments"] == {"command": "rm -rf build"}
    assert "approval" in denial["reason"] and denial["id"]


def agents_script() -> list[Reply]:
    """spawn_agents with three jobs, run one at a time (the server is local): the first writes
    a file, the second is refused a command, the third is refused by a deny rule."""
    jobs = [{"task": "write the note"}, {"task": "clean the build"}, {"task": "read the forbidden file"}]
    return [
        Reply(tool_calls=[("spawn_agents", {"agents": jobs})]),
        Reply(tool_calls=[("write_file", {"filepath": "agent/note.txt", "content": "42\n"})]),
        Reply(text="REPORT ONE: wrote agent/note.txt."),
        Reply(tool_calls=[("run_cmd", {"command": "rm -rf build"})]),
        Reply(text="REPORT TWO: the command was refused."),
        Reply(text="The agents did what they could."),
    ]


def test_the_result_lists_what_sub_agents_changed_and_were_refused(repo: Path, home: Path) -> None:
    (repo / "none.json").write_text('{"mcpServers": {}}')
    with FakeServer(agents_script()) as server:
        proc = run_cli(["-p", "Delegate it", "--output-format", "json", "--allow", "write_file",
                        "--allow", "spawn_agent", "--deny", "spawn_agent(*forbidden*)",
                        "--mcp-config", str(repo / "none.json"), *openai_args(server)], repo, home)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert problems(result) == []
    assert (repo / "agent" / "note.txt").read_text() == "42\n"
    assert result["files_changed"] == ["agent/note.txt"]
    first, second, third = result["subagents"]
    assert [a["state"] for a in (first, second, third)] == ["completed", "completed", "rejected"]
    command, job = result["permission_denials"]
    assert command["name"] == "run_cmd" and command["arguments"] == {"command": "rm -rf build"}
    assert (command["agent"], command["agent_name"]) == (second["id"], "general")
    assert job["name"] == "spawn_agent" and job["arguments"] == {"task": "read the forbidden file"}
    assert job["agent"] == third["id"] and "spawn_agent(*forbidden*)" in job["reason"]
    assert job["id"] == third["parent_call"] != ""


def test_an_error_result_keeps_the_contract(tmp_path: Path, home: Path) -> None:
    """The provider fails: the result is still whole, with empty lists, and valid."""
    with FakeServer([Reply(status=500, error_message="boom")] * 5) as server:
        proc = run_cli(["-p", "hi", "--output-format", "stream-json", *openai_args(server)],
                       tmp_path, home, TETHER_MAX_RETRIES="0")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 1 and events[-1]["is_error"] is True
    assert [p for e in events for p in problems(e)] == []
    assert events[-1]["files_changed"] == [] and events[-1]["commits"] == []


# ---------------------------------------------------------------- the docs' examples

HEADLESS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "headless.md"


def documented_examples() -> dict[str, dict]:
    """Each example object docs/headless.md shows for the headless contract, by type: the
    stream-json table's example column, and the `json` format's result block. `{...}` and
    "..." stand for what the page leaves out (an empty object, a shortened string)."""
    text = HEADLESS_PAGE.read_text()
    section = text[text.index("## The headless contract"):]
    examples = {}
    for row in re.finditer(r"^\| `(\w+)` \| .* \| `(\{.*\})` \|$", section, re.MULTILINE):
        examples[row.group(1)] = json.loads(row.group(2).replace("{...}", "{}"))
    block = re.search(r"```json\n(\s*\{\"type\": \"result\".*?)```", text, re.DOTALL)
    assert block is not None, "docs/headless.md's json result example is gone"
    examples["result"] = json.loads(block.group(1))
    return examples


def test_the_docs_show_every_event_and_each_example_matches_its_schema() -> None:
    examples = documented_examples()
    assert set(examples) == set(EVENT_TYPES)
    wrong = [p for obj in examples.values() for p in problems(obj)]
    assert wrong == []


def test_each_finished_request_gets_a_request_line_with_its_usage_and_time(repo: Path, home: Path) -> None:
    script = [Reply(tool_calls=[("read_file", {"filepath": "answer.txt"})]), Reply(text="It says 42.")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "What does answer.txt say?", "--output-format", "stream-json",
                        *openai_args(server)], repo, home)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    requests = [e for e in events if e["type"] == "request"]
    assert len(requests) == events[-1]["num_turns"] == 2
    assert [e["stop_reason"] for e in requests] == ["tool_use", "end_turn"]
    assert all(e["elapsed_ms"] >= 0 and problems(e) == [] for e in requests)
    kinds = [e["type"] for e in events]
    assert kinds.index("request") < kinds.index("tool_start")  # the request's line before its calls run
