"""Prompt tokens of the first request, counted by the real model server's tokenizer.

For each project folder given (default: every task project of bench/small_model when it
exists), the first request tether would send is built in-process (no model request): the
system prompt of the chosen profile and protocol plus the user's request, opened by the
project context. The llama-server's
`/apply-template` renders it with the model's chat template and `/tokenize` counts it, so the
figure is what the server's `usage.prompt_tokens` would report (tokenizing is cheap: nothing is
generated). Native tool schemas are counted as the server's template would show them only in
text mode, so compare text-protocol figures.

Run: python bench/bench_small_prompt.py [--url http://127.0.0.1:8089] [--profile small] DIR...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from tether.engine.prompts import with_context
from tether.runtime import RunOptions, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI

TASKS = Path(__file__).resolve().parent / "small_model" / "tasks"


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def first_request(project: Path, profile: str, request: str) -> list[dict]:
    home = Path(tempfile.mkdtemp())
    settings, _ = load_settings(
        {"provider": "openai", "model": "qwen2.5-coder-1.5b", "openai_base_url": "http://127.0.0.1:8089/v1",
         "profile": profile, "protocol": "text"}, {}, home,
    )
    runtime = build_runtime(settings, RunOptions(root=project, home=home), HeadlessUI(), {})
    runtime.apply_profile(asyncio.run(runtime.resolve_profile()))
    return [{"role": "system", "content": runtime.system_prompt("text")},
            {"role": "user", "content": with_context(runtime.context(), request)}]


def count(url: str, messages: list[dict]) -> int:
    prompt = post(url + "/apply-template", {"messages": messages})["prompt"]
    return len(post(url + "/tokenize", {"content": prompt})["tokens"])


def git_copy(source: Path, scratch: Path) -> Path:
    """The project as a fresh git repository (as the benchmark runs it), so ignores apply."""
    target = scratch / source.parent.name
    shutil.copytree(source, target)
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    subprocess.run(["git", "add", "-A"], cwd=target, check=True)
    return target


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:8089")
    p.add_argument("--profile", default="small")
    p.add_argument("dirs", nargs="*", type=Path)
    args = p.parse_args()
    projects = args.dirs or sorted(TASKS.glob("*/project"))
    if not projects:
        sys.exit("no project folders given and no bench/small_model/tasks found")
    figures = []
    with tempfile.TemporaryDirectory() as scratch:
        for project in projects:
            request = "x " * 20  # a typical one-line request
            toml = project.parent / "task.toml"
            if toml.exists():
                import tomllib

                request = tomllib.loads(toml.read_text())["request"]
            tokens = count(args.url, first_request(git_copy(project, Path(scratch)), args.profile, request))
            figures.append(tokens)
            print(f"{project.parent.name:<24} {tokens:>6}")
    print(f"max {max(figures)}  min {min(figures)}  ({args.profile} profile, text protocol)")


if __name__ == "__main__":
    main()
