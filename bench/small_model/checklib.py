"""Helpers for the benchmark's check scripts.

A check runs with the finished task folder as its working directory. The runner
passes two paths in the environment: BENCH_ORIGINAL, the untouched project
folder, and BENCH_RESULT, tether's json result (it may be missing or broken:
that only fails questions, whose answer must appear in the final answer).
The runner puts this folder on PYTHONPATH, so a check says `from checklib import ...`.
A check ends with `passed()` (exit 0) or `fail(why)` (exit 1, "FAIL: why" on
stdout); the selftest treats any other way of failing as a bug in the check.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

WORK = Path.cwd()


def fail(why: str) -> NoReturn:
    print(f"FAIL: {why}")
    sys.exit(1)


def passed(what: str = "solved") -> NoReturn:
    print(f"OK: {what}")
    sys.exit(0)


def original_dir() -> Path:
    return Path(os.environ["BENCH_ORIGINAL"])


def original_text(rel: str) -> str:
    return (original_dir() / rel).read_text(encoding="utf-8")


def text(rel: str) -> str:
    """A file of the finished folder; a missing or unreadable file fails the check."""
    path = WORK / rel
    if not path.is_file():
        fail(f"{rel} does not exist")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{rel} cannot be read: {exc}")


def require_unchanged(*rels: str) -> None:
    """Byte-identical to the untouched project."""
    for rel in rels:
        path = WORK / rel
        if not path.is_file() or path.read_bytes() != (original_dir() / rel).read_bytes():
            fail(f"{rel} was changed or removed; it must stay as it was")


def answer() -> str:
    """tether's final answer from its json result; empty when the run errored or wrote none."""
    try:
        result = json.loads(Path(os.environ["BENCH_RESULT"]).read_text(encoding="utf-8"))
    except (KeyError, OSError, ValueError):
        return ""
    if not isinstance(result, dict) or result.get("is_error"):
        return ""
    value = result.get("result")
    return value if isinstance(value, str) else ""


def require_answer_has(pattern: str, shown: str, forbid: str | None = None) -> None:
    """The final answer matches the regex `pattern` (case-insensitive) and not `forbid`."""
    reply = answer()
    if not re.search(pattern, reply, re.I):
        fail(f"the final answer does not say {shown}: {reply[:200]!r}")
    if forbid and re.search(forbid, reply, re.I):
        fail(f"the final answer also gives a wrong value: {reply[:200]!r}")


def run(args: list[str], stdin: str = "", timeout: float = 60,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command in the finished folder (or `cwd`); a hang or a missing program fails the check."""
    try:
        return subprocess.run(args, cwd=cwd or WORK, input=stdin, capture_output=True, text=True,
                              timeout=timeout, env=check_env())
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(args)} did not finish within {timeout:.0f} s")
    except OSError as exc:
        fail(f"{' '.join(args)} could not start: {exc}")


def run_python(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, *args], stdin=stdin, timeout=timeout)


def require_pytest(*targets: str) -> None:
    """pytest passes on `targets` and collected at least one test."""
    done = run_python("-m", "pytest", "-q", "-p", "no:cacheprovider", *targets, timeout=120)
    if done.returncode != 0:
        fail(f"pytest {' '.join(targets)} failed:\n{(done.stdout + done.stderr)[-1500:]}")
    if not re.search(r"\b\d+ passed\b", done.stdout):
        fail(f"pytest {' '.join(targets)} ran no test")


def check_env() -> dict[str, str]:
    """The environment of a command the check runs: as the agent's commands, this interpreter is
    `python` (a script the model wrote may call it so)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_") and k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def load_json(rel: str) -> Any:
    try:
        return json.loads(text(rel))
    except ValueError as exc:
        fail(f"{rel} is no longer valid JSON: {exc}")


def load_toml(rel: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text(rel))
    except tomllib.TOMLDecodeError as exc:
        fail(f"{rel} is no longer valid TOML: {exc}")


def load_yaml(rel: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text(rel))
    except yaml.YAMLError as exc:
        fail(f"{rel} is no longer valid YAML: {exc}")


def changed_lines(rel: str) -> int:
    """How many lines differ from the untouched file (replaced, added or removed)."""
    import difflib

    before = original_text(rel).splitlines()
    after = text(rel).splitlines()
    diff = difflib.ndiff(before, after)
    return sum(1 for line in diff if line[:2] in ("+ ", "- "))


def python_files(under: str = ".") -> list[Path]:
    return sorted(p for p in (WORK / under).rglob("*.py") if ".git" not in p.parts)
