"""A CommandContext without a terminal: the slash commands' stand-in for the app in unit tests.

It holds a real Runtime (against a FakeServer's OpenAI-compatible endpoint) and real Sessions
in a temporary TETHER_HOME; what a command says is kept in `said`, what it prints in `printed`,
and `answers` are the lines the user would type, or the keys pressed at a one-key question
(none left: Ctrl-D).
"""

from __future__ import annotations

import io
import subprocess
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from tether.core.ui_protocol import NoticeLevel, SilentUI
from tether.runtime import RunOptions, Runtime, build_runtime
from tether.store.config import Settings
from tether.store.session import SessionStore
from tether.ui.terminal.keyboard import Choices, yes_no
from tether.ui.terminal.sessions import Sessions
from tether.ui.terminal.slash.handlers import COMMANDS


def fake_settings(url: str, **changes: Any) -> Settings:
    """The full profile on the fake server, no sandbox probe (the commands do not run any)."""
    values: dict[str, Any] = dict(provider="openai", openai_base_url=url + "/v1", model="fake",
                                  profile="full", sandbox="off")
    values.update(changes)
    return Settings(**values)


class FakeContext:
    def __init__(self, runtime: Runtime, answers: Iterable[str] = ()) -> None:
        self.out = io.StringIO()
        self.console = Console(file=self.out, width=200, color_system=None)
        self.runtime = runtime
        self.sessions = Sessions.opened(SessionStore(runtime.options.home), runtime.root,
                                        lambda: self.runtime, self.say)
        self.protocol = "…"
        self.deepthink = False
        self.show_thinking = False
        self.exiting = False
        self.said: list[tuple[str, str]] = []
        self.answers = list(answers)
        self.asked: list[tuple[str, bool]] = []
        self.started = False
        self.turns: list[str] = []
        self.turn_sources: list[str] = []
        """Requests a command sent as if typed (/mcp prompt)."""

    def say(self, message: str, level: NoticeLevel = "info") -> None:
        self.said.append((message, level))

    async def ask_line(self, message: str, default: str = "", secret: bool = False,
                       fresh: bool = True) -> str:
        self.asked.append((message, secret))
        if not self.answers:
            raise EOFError
        return self.answers.pop(0)

    async def choose(self, choices: Choices) -> str | None:
        """The next answer as the key pressed: one that answers nothing fails the test (the
        real question would wait on); none left is Ctrl-D."""
        self.asked.append((choices.question, False))
        if not self.answers:
            return None
        key = self.answers.pop(0)
        assert key in choices.answers, f"{key!r} does not answer {choices.question!r}"
        return key

    async def confirm(self, question: str) -> bool:
        return await self.choose(yes_no(question)) == "y"

    async def ready(self) -> None:
        if self.started:
            return
        self.started = True
        try:
            self.protocol = await self.runtime.start()
        except Exception as exc:  # as the app does: the provider could not be asked
            self.say(f"Could not ask the provider what the model supports: {exc}", "warning")

    async def turn(self, line: str, source: str = "") -> None:
        self.turns.append(line)
        self.turn_sources.append(source)

    async def run_cancellable(self, work: Awaitable[Any]) -> Any:
        result = await work
        await self.sessions.save()
        return result

    async def rebuild(self, settings: Settings | None = None) -> None:
        await self.ready()
        self.runtime, self.protocol = await self.runtime.restarted(settings)

    async def run(self, line: str) -> None:
        """Run one command line, as the app's prompt would."""
        await COMMANDS.run(self, line)

    @property
    def printed(self) -> str:
        return self.out.getvalue()

    def messages(self, level: str | None = None) -> list[str]:
        return [text for text, lvl in self.said if level is None or lvl == level]


def make_context(url: str, root: Path, home: Path, answers: Iterable[str] = (),
                 env: dict[str, str] | None = None, allow: Sequence[str] = (),
                 trusted: bool = False, **settings: Any) -> FakeContext:
    options = RunOptions(root=root, home=home, trusted=trusted, allow=allow)
    runtime = build_runtime(fake_settings(url, **settings), options, SilentUI(),
                            env if env is not None else {"OPENAI_API_KEY": "x"})
    return FakeContext(runtime, answers)


def git(root: Path, *args: str) -> str:
    """Run git in `root` (conftest's `isolated_git` keeps the user's configuration out); its output."""
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def calc_repo(tmp_path: Path, files: Mapping[str, str] | None = None) -> Path:
    """A repository, `project` under tmp_path, on branch main: a tiny calc.py and `files`
    (path: text), committed once; what the git slash commands and /init work on."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for name, text in {"calc.py": "def add(a, b):\n    return a + b\n", **(files or {})}.items():
        (root / name).write_text(text)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root
