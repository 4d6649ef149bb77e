"""What a session costs: /cost in the chat (tokens, and dollars for a hosted model the price
table knows), and --max-budget stopping a one-shot run whose estimate passes it, or refused
when the model has no known price. The chat in a pty, -p in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env

from tether.core.messages import Usage
from tether.providers.prices import PRICES, price_of

CHAT = "/v1/chat/completions"


def args_for(url: str, model: str, *extra: str) -> list[str]:
    return ["--provider", "openai", "--base-url", url + "/v1", "--model", model, *extra]


def run_cli(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "OLLAMA", "TETHER"))}
    environment.update(TETHER_HOME=str(home), OPENAI_API_KEY="sk-test", TETHER_PROFILE="full")
    return subprocess.run([sys.executable, "-m", "tether", *args], cwd=cwd, env=environment,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


# ---------------------------------------------------------------- the price table


@pytest.mark.parametrize(("provider", "model", "expected"), [
    ("openai", "gpt-4o-2024-08-06", "gpt-4o"),
    ("openai", "gpt-4o-mini", "gpt-4o-mini"),
    ("anthropic", "claude-sonnet-4-20250514", "claude-sonnet-4"),
    ("gemini", "gemini-2.5-flash", "gemini-2.5-flash"),
])
def test_a_dated_model_name_takes_its_family_price(provider: str, model: str, expected: str) -> None:
    assert price_of(provider, model) == PRICES[expected]


@pytest.mark.parametrize(("provider", "model"), [
    ("ollama", "gpt-4o"),  # a local server is not priced, whatever the name
    ("openai", "gpt-4o.5"),  # not a dated gpt-4o
    ("openai", "qwen2.5-coder"),
])
def test_a_model_the_table_does_not_know_has_no_price(provider: str, model: str) -> None:
    assert price_of(provider, model) is None


def test_cached_input_is_priced_at_its_own_rate() -> None:
    price = PRICES["gpt-4o"]
    assert price.cost(Usage(1_000_000, 0, 0)) == pytest.approx(2.50)
    assert price.cost(Usage(1_000_000, 1_000_000, 1_000_000)) == pytest.approx(1.25 + 10.0)


# ---------------------------------------------------------------- --max-budget


def test_max_budget_stops_the_run_once_the_estimate_passes_it(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = [Reply(tool_calls=[("list_dir", {"path": "."})], usage=(10_000, 100)),  # about $0.026
              Reply(text="never asked")]
    with FakeServer(script) as server:
        proc = run_cli(["-p", "look around", "--max-budget", "0.01", "--output-format", "json",
                        *args_for(server.url, "gpt-4o")], project, home)
        asked = server.bodies(CHAT)
    assert proc.returncode == 4, proc.stderr
    message = "stopped: the estimated cost $0.0260 (gpt-4o at the prices of"
    assert message in proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["is_error"] is True and result["result"].startswith(message)
    assert len(asked) == 1


def test_max_budget_under_the_limit_changes_nothing(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with FakeServer([Reply(text="Cheap.", usage=(100, 5))]) as server:
        proc = run_cli(["-p", "hi", "--max-budget", "1", *args_for(server.url, "gpt-4o")], project, home)
    assert proc.returncode == 0 and proc.stdout == "Cheap.\n", proc.stderr


def test_max_budget_for_a_model_without_a_price_is_refused(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with FakeServer([Reply(text="never asked")]) as server:
        proc = run_cli(["-p", "hi", "--max-budget", "0.5", *args_for(server.url, "local-model")],
                       project, home)
        asked = server.bodies(CHAT)
    assert proc.returncode == 2
    assert proc.stderr.startswith("tether: --max-budget: the cost of openai model 'local-model' "
                                  "cannot be estimated")
    assert len(proc.stderr.splitlines()) == 1 and not asked


# ---------------------------------------------------------------- /cost


def cost_shown(project: Path, home: Path, model: str) -> str:
    replies = [Reply(text="Hello.", usage=(3_000, 100), cached_tokens=2_000), Reply(text="Greeting")]
    with FakeServer(replies) as server, PtyApp(args_for(server.url, model), cwd=project,
                                               env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("hi")
        app.wait_for_text("Hello.")
        app.wait_for_prompt()
        app.line("/cost")
        shown = app.wait_for_text("This session:")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
    return " ".join(shown.split())


def test_cost_prices_a_known_hosted_model(project: Path, home: Path) -> None:
    shown = cost_shown(project, home, "gpt-4o")
    # 1,000 fresh input at $2.50/M, 2,000 cached at $1.25/M, 100 out at $10/M
    assert ("This session: 3,000 tokens in (2,000 cached), 100 out; about $0.0060 at gpt-4o's "
            "prices (USD, price table of") in shown


def test_cost_of_an_unknown_model_is_tokens_only(project: Path, home: Path) -> None:
    shown = cost_shown(project, home, "fake")
    assert "This session: 3,000 tokens in (2,000 cached), 100 out; price unknown for openai fake" in shown
