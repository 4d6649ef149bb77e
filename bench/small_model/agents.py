"""The agents the benchmark drives, each as its users drive it from a script: tether
(`tether -p REQUEST --auto`) and aider (`aider --message REQUEST --yes-always FILES`).

An agent builds its command line and environment for one task run, prepares its fresh home
folder, and reads back from what the run left (stdout, its own log files) the figures every
run records: the final answer the check reads, requests, prompt and completion tokens.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tasks import Task

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
}
AIDER_VENV = Path.home() / ".cache" / "tether-bench-aider"
DEFAULT_AIDER = AIDER_VENV / "bin" / "aider"


@dataclass
class Figures:
    """What one run of an agent reported."""

    result: dict[str, Any]  # a tether-style result object: the check reads `result` as the answer
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    stop_reason: str
    tool_calls: list[str]
    error: str
    request_s: list[float] = field(default_factory=list)
    """Seconds each finished model request took, in order (tether's stream-json `request`
    lines; empty for aider and for json output). The wall time less their sum is the tools'
    time, tether's own, and a request the timeout cut short."""


class Agent(Protocol):
    name: str

    def command(self, task: Task, work: Path, stem: Path) -> list[str]: ...
    def env(self, home: Path) -> dict[str, str]: ...
    def prepare_home(self, home: Path, task: Task) -> None: ...
    def stdout_file(self, stem: Path) -> Path: ...
    def figures(self, stdout: str, stem: Path, timed_out: bool) -> Figures: ...
    def problem(self) -> str | None: ...
    def settings(self) -> dict[str, Any]: ...
    def leftovers(self, work: Path) -> list[Path]: ...


def clean_env(drop_prefixes: tuple[str, ...]) -> dict[str, str]:
    """The caller's environment without the agents' own settings, a benchmark git identity,
    and this interpreter first on PATH: the model's commands find it (and pytest) as `python`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop_prefixes)}
    env.update(GIT_IDENTITY)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # This interpreter carries tether's own test plugins; pytest-asyncio's configuration
    # warning would open every test run of the tasks, whose tests use none of it.
    env["PYTEST_ADDOPTS"] = "-p no:asyncio"
    return env


# ---------------------------------------------------------------- tether


@dataclass
class TetherAgent:
    """Where and how tether runs: the model server, the source tree and the flags."""

    provider: str
    base_url: str
    model: str
    tether_src: Path
    protocol: str | None = None
    profile: str | None = None
    max_steps: int | None = None
    extra: list[str] = field(default_factory=list)
    output_format: str = "json"
    levers_off: str = ""
    """Small-profile levers to switch off (tether's TETHER_PROFILE_OFF), to measure each one."""
    name: str = "tether"
    levers_on: str = ""
    """Levers off by default to switch on (tether's TETHER_PROFILE_ON), e.g. grammar."""

    def command(self, task: Task, work: Path, stem: Path) -> list[str]:
        cmd = [sys.executable, "-m", "tether", "-p", task.request, "--auto",
               "--output-format", self.output_format, "--provider", self.provider,
               "--model", self.model]
        if self.provider != "local":
            cmd += ["--base-url", self.base_url]
        if self.protocol:
            cmd += ["--protocol", self.protocol]
        if self.profile:
            cmd += ["--profile", self.profile]
        if self.max_steps:
            cmd += ["--max-steps", str(self.max_steps)]
        return cmd + self.extra

    def env(self, home: Path) -> dict[str, str]:
        """Without tether settings, this source first on PYTHONPATH, a fresh home."""
        env = clean_env(("TETHER_",))
        env["TETHER_HOME"] = str(home)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(self.tether_src)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.setdefault("OPENAI_API_KEY", "none")
        if self.levers_off:
            env["TETHER_PROFILE_OFF"] = self.levers_off
        if self.levers_on:
            env["TETHER_PROFILE_ON"] = self.levers_on
        return env

    def prepare_home(self, home: Path, task: Task) -> None:
        # A busy model server may take minutes before its first token: the task's timeout is
        # the one time limit, not tether's per-response wait.
        (home / "config.toml").write_text(f"request_timeout = {task.timeout}\n", encoding="utf-8")

    def stdout_file(self, stem: Path) -> Path:
        return Path(f"{stem}.out.{'jsonl' if self.output_format == 'stream-json' else 'json'}")

    def figures(self, stdout: str, stem: Path, timed_out: bool) -> Figures:
        result = result_object(stdout)
        usage = result.get("usage") or {}
        return Figures(
            result=result, requests=int(result.get("num_turns") or 0),
            prompt_tokens=int(usage.get("input_tokens") or 0),
            completion_tokens=int(usage.get("output_tokens") or 0),
            cached_tokens=int(usage.get("cached_tokens") or 0),
            stop_reason=str(result.get("stop_reason") or ("timeout" if timed_out else "no result")),
            tool_calls=[c.get("name", "?") for c in result.get("tool_calls") or []],
            error=str(result.get("result") or "") if result.get("stop_reason") == "error" else "",
            request_s=request_seconds(stdout),
        )

    def problem(self) -> str | None:
        """Why tether cannot run from this source with this interpreter, or None when it can."""
        if not (self.tether_src / "tether" / "__init__.py").is_file():
            return f"--tether-src: {self.tether_src} has no tether package"
        done = subprocess.run([sys.executable, "-m", "tether", "--help"], capture_output=True,
                              text=True, env=self.env(Path(tempfile.gettempdir())))
        if done.returncode != 0:
            return (f"{sys.executable} -m tether --help failed with PYTHONPATH={self.tether_src} "
                    f"(is this the interpreter of tether's environment?):\n{done.stderr[-800:]}")
        if self.profile and "--profile" not in done.stdout:
            return f"the tether at {self.tether_src} has no --profile flag; run without --profile"
        return None

    def settings(self) -> dict[str, Any]:
        return {
            "agent": self.name, "provider": self.provider, "base_url": self.base_url,
            "model": self.model, "protocol": self.protocol, "profile": self.profile,
            "max_steps": self.max_steps, "levers_off": self.levers_off,
            "levers_on": self.levers_on,
            "output_format": self.output_format, "tether_src": str(self.tether_src),
            "tether_revision": tether_revision(self.tether_src),
        }

    def leftovers(self, work: Path) -> list[Path]:
        return []


def result_object(stdout: str) -> dict[str, Any]:
    """The last `"type": "result"` object tether printed, or {} when there is none."""
    for line in reversed(stdout.splitlines()):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("type") == "result":
            return obj
    return {}


def request_seconds(stdout: str) -> list[float]:
    """The seconds of each `"type": "request"` line tether wrote (stream-json), in order."""
    seconds = []
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("type") == "request":
            seconds.append(round(float(obj.get("elapsed_ms") or 0) / 1000, 1))
    return seconds


def tether_revision(src: Path) -> str:
    """The last commit that changed the tether source folder, "+changes" when it has changed
    since (so a benchmark branch's own commits do not count as tether changes)."""
    commit = subprocess.run(["git", "log", "-1", "--format=%h", "--", "."], cwd=src,
                            capture_output=True, text=True).stdout.strip()
    if not commit:
        return "unknown"
    changes = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=src,
                             capture_output=True, text=True).stdout.strip()
    return commit + ("+changes" if changes else "")


# ---------------------------------------------------------------- aider


@dataclass
class AiderAgent:
    """aider-chat in its own venv (setup_aider.sh), one `--message` per task run.

    Files: aider edits only the files named on its command line, and finds others through its
    repository map. It gets the project files the request names (an exercise: the stub to
    edit, its test file and instructions read-only with --read), and no others, as a user who
    types the request would name them. Shell commands are never run under --yes-always (aider
    asks for an explicit yes), so aider checks its work only through extra flags
    (`--aider-arg=--auto-test --aider-arg=--test-cmd=...`), which the results record.
    """

    aider_bin: Path
    provider: str
    base_url: str
    model: str
    extra: list[str] = field(default_factory=list)
    name: str = "aider"

    def model_name(self) -> str:
        return f"ollama_chat/{self.model}" if self.provider == "ollama" else f"openai/{self.model}"

    def command(self, task: Task, work: Path, stem: Path) -> list[str]:
        named = named_files(task.request, work)
        editable = [f for f in named if f not in task.read_only]
        read_only = [f for f in named if f in task.read_only]
        cmd = [str(self.aider_bin), "--model", self.model_name()]
        if self.provider != "ollama":
            cmd += ["--openai-api-base", self.base_url, "--openai-api-key", "x"]
        cmd += [
            "--message", task.request, "--yes-always",
            # The repository stays as tether sees it: no commits (each would cost a request
            # for its message), no .gitignore entry, aider's own files outside the folder.
            "--no-auto-commits", "--no-dirty-commits", "--no-gitignore",
            "--no-show-model-warnings", "--no-check-update", "--no-analytics",
            "--no-show-release-notes", "--no-pretty", "--no-fancy-input",
            # Whole replies, so the token figures are the server's own counts (streamed, aider
            # estimates them); the model sees the same requests either way.
            "--no-stream",
            "--timeout", str(int(task.timeout)),
            "--chat-history-file", f"{stem}.chat.md",
            "--input-history-file", f"{stem}.input.txt",
            "--llm-history-file", f"{stem}.llm.txt",
            "--analytics-log", f"{stem}.events.jsonl",
            *self.extra,
        ]
        for rel in read_only:
            cmd += ["--read", rel]
        return cmd + editable

    def env(self, home: Path) -> dict[str, str]:
        """Without aider's, tether's and the OpenAI client's settings, a fresh HOME (so no
        ~/.aider.conf.yml of the caller's steers it), and litellm's bundled price list."""
        env = clean_env(("AIDER_", "TETHER_", "OPENAI_", "OLLAMA_"))
        env["HOME"] = str(home)
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        if self.provider == "ollama":
            env["OLLAMA_API_BASE"] = self.base_url
        return env

    def prepare_home(self, home: Path, task: Task) -> None:
        # aider fetches a model price list from the internet when its cache is empty; a local
        # model is not in it, so a cache that holds nothing about it changes nothing but the
        # attempt to go out.
        # aider reads the git identity from git's config, not the environment.
        (home / ".gitconfig").write_text(
            "[user]\n\tname = bench\n\temail = bench@localhost\n", encoding="utf-8")
        caches = home / ".aider" / "caches"
        caches.mkdir(parents=True, exist_ok=True)
        (caches / "model_prices_and_context_window.json").write_text(
            json.dumps({"no-such-model": {}}), encoding="utf-8")

    def stdout_file(self, stem: Path) -> Path:
        return Path(f"{stem}.out.txt")

    def figures(self, stdout: str, stem: Path, timed_out: bool) -> Figures:
        events = read_events(Path(f"{stem}.events.jsonl"))
        sent = [e for e in events if e.get("event") == "message_send"]
        if sent:
            prompt = sum(int(e["properties"].get("prompt_tokens") or 0) for e in sent)
            completion = sum(int(e["properties"].get("completion_tokens") or 0) for e in sent)
            requests = len(sent)
        else:
            requests, prompt, completion = token_lines(stdout)
        answer = last_reply(read_text(Path(f"{stem}.chat.md")))
        error = aider_error(stdout)
        result = {"type": "result", "is_error": bool(error), "result": answer,
                  "stop_reason": "timeout" if timed_out else ("error" if error else "end_turn")}
        return Figures(result=result, requests=requests, prompt_tokens=prompt,
                       completion_tokens=completion, cached_tokens=0,
                       stop_reason=str(result["stop_reason"]),
                       tool_calls=[f"edit {p}" for p in re.findall(r"^Applied edit to (.+)$",
                                                                      stdout, re.M)],
                       error=error)

    def problem(self) -> str | None:
        if not self.aider_bin.is_file():
            return (f"aider is not installed at {self.aider_bin}: run "
                    "bench/small_model/setup_aider.sh (or pass --aider-bin); skipping the run")
        done = subprocess.run([str(self.aider_bin), "--version"], capture_output=True, text=True,
                              env=self.env(Path(tempfile.gettempdir())), timeout=120)
        if done.returncode != 0:
            return f"{self.aider_bin} --version failed; skipping the run:\n{done.stderr[-800:]}"
        return None

    def settings(self) -> dict[str, Any]:
        version = subprocess.run([str(self.aider_bin), "--version"], capture_output=True,
                                 text=True, env=self.env(Path(tempfile.gettempdir())),
                                 timeout=120).stdout.strip()
        return {"agent": self.name, "provider": self.provider, "base_url": self.base_url,
                "model": self.model, "aider_model": self.model_name(), "aider_version": version,
                "aider_args": self.extra}

    def leftovers(self, work: Path) -> list[Path]:
        """aider's caches in the folder (its repository map's tags): not the model's work."""
        return sorted(work.glob(".aider*"))


PATH_LIKE = re.compile(r"[\w./-]*\w\.\w+")


def named_files(request: str, work: Path) -> list[str]:
    """The project files the request names, as paths relative to `work`, in the order named:
    a path as written (`tests/test_core.py`, `.docs/instructions.md`), or a bare file name
    that exactly one project file has (`report.py` for `scripts/report.py`)."""
    files = [p.relative_to(work).as_posix() for p in work.rglob("*")
             if p.is_file() and ".git" not in p.relative_to(work).parts]
    by_name: dict[str, list[str]] = {}
    for rel in files:
        by_name.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
    named: list[str] = []
    for word in PATH_LIKE.findall(request):
        word = word.removeprefix("./")
        match = word if word in files else None
        if match is None and "/" not in word and len(by_name.get(word, [])) == 1:
            match = by_name[word][0]
        if match and match not in named:
            named.append(match)
    return named


TOKENS_LINE = re.compile(r"^Tokens: ([\d.]+k?) sent, (?:.*?, )?([\d.]+k?) received\.", re.M)


def token_count(text: str) -> int:
    """aider's shown count: `812`, `1.2k`, `12k`."""
    return round(float(text[:-1]) * 1000) if text.endswith("k") else int(text)


def token_lines(stdout: str) -> tuple[int, int, int]:
    """Requests, prompt and completion tokens from aider's "Tokens: X sent, Y received." lines
    (one a request; rounded to hundreds past 1,000): the figures when no event log was kept."""
    lines = TOKENS_LINE.findall(stdout)
    return (len(lines), sum(token_count(s) for s, _ in lines),
            sum(token_count(r) for _, r in lines))


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def read_events(path: Path) -> list[dict[str, Any]]:
    events = []
    for line in read_text(path).splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("properties"), dict):
            events.append(event)
    return events


def last_reply(history: str) -> str:
    """The model's last reply in aider's chat history: the history's lines are the user's
    message (`#### `), aider's own output (`> `) and the model's replies (plain text)."""
    blocks: list[list[str]] = [[]]
    for line in history.splitlines():
        if line.startswith(("#### ", "> ", "# aider chat started")) or line.rstrip() == ">":
            if blocks[-1]:
                blocks.append([])
            continue
        blocks[-1].append(line)
    replies = ["\n".join(b).strip() for b in blocks if "\n".join(b).strip()]
    return replies[-1] if replies else ""


def aider_error(stdout: str) -> str:
    """The first model-server error aider printed (litellm's), or ""."""
    found = re.search(r"^.*litellm\.\w*(?:Error|Exception)\b.*$", stdout, re.M)
    return found.group(0).strip()[:300] if found else ""
