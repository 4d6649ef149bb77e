"""The request prefix is the same in every project and on every day, so a local server's
prompt cache is reused: real `tether -p` runs in two projects, their first requests compared."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from test_cli import openai_args, run_cli


def project(tmp_path: Path, name: str) -> Path:
    """A project of its own: its own instructions and files (so its own project map)."""
    root = tmp_path / name
    (root / "src").mkdir(parents=True)
    (root / "AGENTS.md").write_text(f"Instructions of {name}: use tabs.\n")
    (root / "src" / f"{name}_main.py").write_text("print('hi')\n")
    return root


def first_request(root: Path, home: Path, profile: str) -> tuple[str, list[str]]:
    """The system prompt of the run's first request, and the tools on its menu."""
    with FakeServer([Reply(text="ok")]) as server:
        proc = run_cli(["-p", "hi", "--output-format", "stream-json", "--protocol", "text",
                        "--profile", profile, "--trust", *openai_args(server)], root, home)
        body = next(b for path, b in server.requests if path.endswith("/chat/completions"))
    assert proc.returncode == 0, proc.stderr
    init = json.loads(proc.stdout.splitlines()[0])
    assert init["instructions"], "the project's AGENTS.md was not read"
    return body["messages"][0]["content"], init["tools"]


@pytest.mark.parametrize("profile", ["full", "small"])
def test_two_projects_share_the_stable_prefix(tmp_path: Path, home: Path, profile: str) -> None:
    one, two = project(tmp_path, "alpha"), project(tmp_path, "beta")
    first, tools = first_request(one, home, profile)
    second, _ = first_request(two, home, profile)
    # what differs between the projects or the days: the full profile names the place and
    # the date, the small one keeps them out and sends a project map instead
    varying = {"instructions": "Instructions of alpha"}
    if profile == "full":
        varying.update(root=f"Project root: {one}", date=datetime.date.today().isoformat())
    else:
        varying.update(map="alpha_main.py")
    shared = len(commonprefix(first, second))
    for what, text in varying.items():
        assert text in first, f"the {what} is not in the prompt"
        assert text not in first[:shared], f"the {what} is inside the shared prefix"
    stable = first[:shared]
    assert all(f"## {name}" in stable or f"{name}(" in stable or name in stable for name in tools)
    assert stable.startswith("You are tether") and len(stable) > 0.6 * len(first)


def commonprefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]
