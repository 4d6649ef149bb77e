"""/connect for a server of one's own: the base URL set by the command or a question, no key
needed there, and the choice (with the URL, never a key) remembered for the next start."""

from __future__ import annotations

import json
from pathlib import Path

from fakeserver import FakeServer
from slash_context import FakeContext, make_context

from tether.cli import remembered_connection
from tether.store.config import load_settings
from tether.store.keys import ConnectionStore, KeyStore

UNUSED_URL = "http://127.0.0.1:9"
"""Where the context starts: nothing answers there, so only the server connected to is asked."""


SERVER_MODELS = ["fake", "other-model"]
"""What the `server` fixture (conftest) lists as the server's models."""


def keyless_context(project: Path, home: Path, answers: list[str]) -> FakeContext:
    """A chat with no key anywhere, on a local URL where nothing answers."""
    return make_context(UNUSED_URL, project, home, answers, env={})


async def test_connect_with_a_url_reaches_a_local_server_without_a_key(
    server: FakeServer, project: Path, home: Path
) -> None:
    local = server.url + "/v1"
    ctx = keyless_context(project, home, answers=[""])  # Enter at the key question
    await ctx.run(f"/connect openai {local} other-model")
    question, secret = ctx.asked[0]
    assert secret and "empty if the server needs none" in question
    assert ctx.messages()[-1] == f"Connected: openai · other-model (native tools) at {local}."
    assert ctx.runtime.settings.openai_base_url == local and ctx.runtime.model == "other-model"
    assert KeyStore(home).providers() == []  # nothing was saved as a key
    assert ConnectionStore(home).last() == ("openai", "other-model", local)
    assert server.headers and all("authorization" not in h for h in server.headers)


async def test_the_hosted_api_still_refuses_an_empty_key(project: Path, home: Path) -> None:
    ctx = keyless_context(project, home, answers=[""])
    await ctx.run("/connect openai https://api.openai.com/v1 fake")
    assert "empty if the server needs none" not in ctx.asked[0][0]
    assert ctx.said[-1] == ("No key given; not switched.", "warning")
    assert ctx.runtime.settings.openai_base_url == UNUSED_URL + "/v1"


async def test_connect_from_the_list_asks_for_the_server_then_the_model(
    server: FakeServer, project: Path, home: Path
) -> None:
    local = server.url + "/v1/"
    ctx = keyless_context(project, home, answers=["openai", local, "", "2"])
    await ctx.run("/connect")
    assert [q for q, _ in ctx.asked][1] == f"base URL (Enter keeps {UNUSED_URL}/v1): "
    assert ctx.runtime.settings.openai_base_url == local.rstrip("/")
    assert ctx.runtime.model == "other-model"


async def test_a_url_that_is_no_url_or_a_cancelled_key_switches_nothing(
    project: Path, home: Path
) -> None:
    ctx = keyless_context(project, home, answers=[])
    await ctx.run("/connect openai http:// fake")
    message, level = ctx.said[-1]
    assert level == "warning" and message.startswith("Cannot use 'http:' as the base URL")
    assert ctx.asked == []
    await ctx.run("/connect gemini http://127.0.0.1:1/x")  # Ctrl-D at the key question
    assert ctx.said[-1] == ("Not switched.", "info")
    assert ctx.runtime.settings.provider == "openai" and not (home / "connection.json").exists()


async def test_the_next_start_goes_to_the_remembered_server(
    server: FakeServer, project: Path, home: Path
) -> None:
    local = server.url + "/v1"
    ctx = keyless_context(project, home, answers=[""])
    await ctx.run(f"/connect openai {local} fake")
    layer, problem = remembered_connection(home, None)
    settings, warnings = load_settings({}, {}, home, layer)  # no OPENAI_BASE_URL this time
    assert (settings.provider, settings.model, settings.openai_base_url) == ("openai", "fake", local)
    assert problem == "" and warnings == []
    settings, _ = load_settings({}, {"OPENAI_BASE_URL": "http://10.0.0.2/v1"}, home, layer)
    assert settings.openai_base_url == "http://10.0.0.2/v1"  # the environment still wins
    saved = json.loads((home / "connection.json").read_text())
    assert saved == {"provider": "openai", "model": "fake", "base_url": local}
