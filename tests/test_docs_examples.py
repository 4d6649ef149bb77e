"""Every example command in README.md and docs/ that can run offline runs here, as written,
against the local scripted model server: only the server's address is put in (OLLAMA_HOST,
or the value of the example's own --base-url). An example that opens the chat, installs
something or needs a real model is not one that can run offline, and is left out."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from test_cli import run_cli

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
ONE_SHOT = ("-p", "--print", "exec", "help", "models", "--version", "--help")
"""A tether command with one of these answers and exits: no terminal, no chat."""


def shell_lines(text: str) -> list[str]:
    """The command lines of a page's ```sh blocks, continuation lines joined."""
    lines = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines += [line.strip() for line in joined.splitlines() if line.strip()]
    return lines


def runnable(line: str) -> bool:
    """Every part of the line is tether (fed by echo, read by head) answering and exiting."""
    for part in line.split(" && "):
        words = shlex.split(part.split(" | head")[0].split("| ", 1)[-1])
        if words[:1] != ["tether"] or not any(w in ONE_SHOT for w in words[1:]):
            return False
    return True


def examples() -> list[tuple[str, str]]:
    found = [(path.relative_to(REPO).as_posix(), line)
             for path in DOC_FILES for line in shell_lines(path.read_text()) if runnable(line)]
    return sorted(set(found))


EXAMPLES = examples()


def test_the_examples_are_found() -> None:
    """The collector itself: the pages do show runnable examples, and chat-opening or
    install commands are not among them."""
    lines = [line for _, line in EXAMPLES]
    assert any(line.startswith("tether -p") for line in lines)
    assert any("exec" in line for line in lines) and any("| tether" in line for line in lines)
    assert not any(line.startswith("pip") or line == "tether" for line in lines)


def pointed_at(words: list[str], server: FakeServer) -> list[str]:
    """The example's own arguments with its --base-url (if any) put on the scripted server."""
    words = list(words)
    if "--base-url" in words:
        words[words.index("--base-url") + 1] = server.url + "/v1"
    return words


def run_part(part: str, server: FakeServer, root: Path, home: Path) -> subprocess.CompletedProcess:
    stdin = None
    if " | tether" in part:  # `echo TEXT | tether ...`: TEXT is its stdin
        feeder, part = part.split(" | ", 1)
        stdin = " ".join(shlex.split(feeder)[1:]) + "\n"
    part = part.split(" | head")[0]  # head only shortens what is shown
    words = pointed_at(shlex.split(part)[1:], server)
    return run_cli(words, root, home, stdin=stdin, OLLAMA_HOST=server.url,
                   OPENAI_BASE_URL=server.url + "/v1")


@pytest.mark.parametrize(("page", "line"), EXAMPLES, ids=[f"{p}: {line}" for p, line in EXAMPLES])
def test_each_example_runs_offline(page: str, line: str, tmp_path: Path, home: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *command], cwd=root, check=True)
    with FakeServer([Reply(tool_calls=[("list_dir", {"path": "."})])]) as server:
        server.default_reply = Reply(text="It prints hi.")
        for part in line.split(" && "):
            proc = run_part(part, server, root, home)
            assert proc.returncode == 0, f"{page}: {part}\n{proc.stderr}"
            assert "Traceback" not in proc.stderr
            if "--output-format json" in part:
                assert json.loads(proc.stdout)["is_error"] is False
            elif "stream-json" in part:
                events = [json.loads(event) for event in proc.stdout.splitlines()]
                assert events[0]["type"] == "init" and events[-1]["type"] == "result"
            elif " -p " in f" {part} " or " exec " in f" {part} ":
                assert proc.stdout.endswith("It prints hi.\n")
