"""The model table: what varies by model family is data (core/models.toml, and the user's own
file in TETHER_HOME), read once, matched most-specific-first, and followed by the profile
choice, the protocol and the temperature."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeserver import FakeServer

from tether.core.model_table import (
    BUILTIN_FILE,
    ModelEntry,
    ModelTable,
    builtin_table,
    known_context_window,
    load_model_table,
    read_entries,
)
from tether.core.profile import FULL, SMALL, choose_profile, choose_protocol, default_temperature
from tether.engine.context import context_window
from tether.providers.gemini import thinks
from tether.runtime import RunOptions, build_runtime
from tether.store.config import load_settings
from tether.ui.headless import HeadlessUI


def _table(*rows: tuple[str, dict]) -> ModelTable:
    return ModelTable(tuple(ModelEntry((pattern,), **fields) for pattern, fields in rows))


# ---------------------------------------------------------------- matching


@pytest.mark.parametrize(
    ("model", "pattern"),
    [
        ("qwen2.5-coder:1.5b", "qwen2.5-coder"),
        ("Qwen/Qwen2.5-Coder-1.5B-Instruct", "qwen2.5-coder"),  # case does not matter
        ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder"),
        ("qwen3:8b", "qwen3"),
        ("qwen3-coder:30b", "qwen3-coder"),  # the most specific pattern wins
        ("gemma3n:e4b", "gemma3n"),
        ("llama3.2-vision:11b", "llama3.2-vision"),
        ("llama3.2:3b", "llama3.2"),
        ("openrouter/anthropic/claude-3-haiku", "claude"),
        ("gemini-2.5-flash", "gemini-2.5"),
        ("gemini-2.0-flash", "gemini-2"),
        ("mistral-small3.1:24b", "mistral-small3.1"),  # the vision row, with the family's values
        ("mistral-small:24b", "mistral-small"),
        ("dolphin-mixtral", None),  # "phi" inside a word is not the phi family
        ("gpt-4o", "gpt-4o"),
        ("mystery-model", None),
    ],
)
def test_the_builtin_table_matches_the_most_specific_family(model: str, pattern: str | None) -> None:
    found = builtin_table().match(model)
    assert (found.pattern if found else None) == pattern


def test_wildcards_count_less_than_letters_and_a_tie_goes_to_the_later_entry() -> None:
    table = _table(("qwen*", {"temperature": 0.1}), ("qwen3", {"temperature": 0.2}),
                   ("QWEN3", {"temperature": 0.3}))
    assert table.entry("qwen3:4b").temperature == 0.3  # type: ignore[union-attr]
    assert table.entry("qwen2:7b").temperature == 0.1  # type: ignore[union-attr]
    assert table.entry("myqwen3") is None


# ---------------------------------------------------------------- the user's file


def test_a_user_file_adds_entries_and_replaces_one_of_the_same_pattern(home: Path) -> None:
    home.mkdir(exist_ok=True)
    (home / "models.toml").write_text(
        '[[model]]\nmatch = "qwen3"\nnative_tools = false\n\n'
        '[[model]]\nmatch = ["my-*-model"]\nprofile = "small"\n'
    )
    table = load_model_table(home)
    qwen3 = table.match("qwen3:8b")
    assert qwen3 is not None and qwen3.entry.native_tools is False
    assert qwen3.entry.temperature is None  # replaced, not merged
    assert qwen3.shown() == f"qwen3 ({home / 'models.toml'})"
    assert table.entry("my-big-model").profile == "small"  # type: ignore[union-attr]
    assert table.entry("gpt-4o").context_window == 128_000  # type: ignore[union-attr]
    assert table.problems == ()


def test_no_user_file_is_the_builtin_table(home: Path) -> None:
    assert load_model_table(home) == builtin_table()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[model\n", "is not valid TOML"),
        ('[[model]]\nmatch = "qwen3"\ntemperature = "hot"\n',
         "entry 1 (qwen3): `temperature` must be a number from 0 to 2, not 'hot'"),
        ('[[model]]\nmatch = "a"\n\n[[model]]\nmatch = "b"\nprofile = "tiny"\n',
         "entry 2 (b): `profile` must be small or full, not 'tiny'"),
        ('[[model]]\nmatch = "a"\nstop_words = ["x"]\n', "entry 1 (a): unknown field `stop_words`"),
        ('[[model]]\nprofile = "small"\n', "entry 1: `match` must be a pattern or a list of patterns"),
        ('[[model]]\nmatch = "*"\n', "entry 1: `match` must be a pattern"),
        ('[[model]]\nmatch = "a"\ncontext_window = true\n', "`context_window` must be a positive"),
        ('[other]\nx = 1\n', "must hold only [[model]] entries"),
    ],
)
def test_a_bad_user_file_is_one_line_naming_it_and_the_builtin_table_is_used(
        home: Path, text: str, message: str) -> None:
    home.mkdir()
    path = home / "models.toml"
    path.write_text(text)
    table = load_model_table(home)
    assert table.entries == builtin_table().entries
    (problem,) = table.problems
    assert str(path) in problem and message in problem and "\n" not in problem
    assert problem.endswith("the built-in model table is used")


def test_the_builtin_file_is_valid_and_every_entry_says_where_its_values_come_from() -> None:
    entries, problem = read_entries(BUILTIN_FILE, "built-in")
    assert problem == "" and entries
    blocks = BUILTIN_FILE.read_text().split("\n[[model]]\n")[1:]
    assert len(blocks) == len(entries)
    assert all(block.lstrip().startswith("#") for block in blocks)  # a source comment each


async def test_a_project_file_is_never_read(tmp_path: Path, home: Path) -> None:
    """A hostile repository must not change how tether treats its model."""
    (tmp_path / "models.toml").write_text('[[model]]\nmatch = "gpt-4o"\nprofile = "small"\n')
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "models.toml").write_text('[[model]]\nmatch = "gpt-4o"\nprofile = "small"\n')
    loaded, _ = load_settings({"provider": "openai", "model": "gpt-4o"}, {}, home)
    runtime = build_runtime(loaded, RunOptions(root=tmp_path, home=home, trusted=True), HeadlessUI(), {})
    try:
        assert runtime.models == builtin_table()
    finally:
        await runtime.aclose()


# ---------------------------------------------------------------- what follows the table


def test_the_profile_for_an_unknown_size_follows_the_table() -> None:
    table = _table(("tiny-family", {"profile": "small"}), ("big-family", {"profile": "full"}))
    small = choose_profile("auto", "tiny-family-chat", None, table.match("tiny-family-chat"))
    assert (small.name, small.reason) == (
        "small", "tiny-family-chat, size unknown, model table: tiny-family (built-in)")
    # a size, stated or named, still decides first
    assert choose_profile("auto", "big-family-1.5b", None, table.match("big-family-1.5b")).name == "small"
    assert choose_profile("auto", "tiny-family", 70.0, table.match("tiny-family")).name == "full"
    assert choose_profile("full", "tiny-family", None, table.match("tiny-family")).name == "full"
    assert builtin_table().entry("gemma3n")  # the shipped table has such families
    assert choose_profile("auto", "gemma3n", None, builtin_table().match("gemma3n")).name == "small"


async def test_the_protocol_follows_the_table() -> None:
    asked: list[bool] = []

    async def native() -> bool:
        asked.append(True)
        return True

    distrusted = ModelEntry(("gemma3",), native_tools=False)
    assert await choose_protocol("auto", FULL, distrusted, native) == "text"
    assert asked == []  # the provider is not asked
    assert await choose_protocol("auto", FULL, ModelEntry(("x",)), native) == "native"
    assert await choose_protocol("auto", FULL, None, native) == "native"
    assert await choose_protocol("native", FULL, distrusted, native) == "native"  # the setting rules
    assert await choose_protocol("auto", SMALL, ModelEntry(("x",), native_tools=True), native) == "text"


def test_the_temperature_follows_the_table_unless_the_user_set_one() -> None:
    qwen3 = builtin_table().entry("qwen3:4b")
    assert default_temperature(None, SMALL, qwen3) == 0.6  # its model card: no greedy decoding
    assert default_temperature(0.2, SMALL, qwen3) == 0.2
    assert default_temperature(None, SMALL, builtin_table().entry("qwen2.5-coder:1.5b")) == 0.0
    assert default_temperature(None, FULL, None) is None


async def test_hosted_windows_and_thoughts_come_from_the_table() -> None:
    assert known_context_window("gpt-4.1-nano") == 1_047_576
    assert known_context_window("qwen2.5-coder:7b") is None
    assert thinks("gemini-2.5-pro") and thinks("gemini-3-pro-preview") and not thinks("gemini-2.0-flash")

    class Silent:
        async def context_window(self, model: str) -> None:
            return None

    assert await context_window(Silent(), "m", None, known=32_768) == 32_768  # type: ignore[arg-type]


async def test_the_status_and_json_say_which_entry_matched(tmp_path: Path, home: Path) -> None:
    home.mkdir(exist_ok=True)
    (home / "models.toml").write_text('[[model]]\nmatch = "house-model"\nnative_tools = false\n')
    with FakeServer(models=["house-model"]) as server:
        loaded, _ = load_settings({"provider": "openai", "model": "house-model",
                                   "openai_base_url": server.url + "/v1"}, {}, home)
        runtime = build_runtime(loaded, RunOptions(root=tmp_path, home=home), HeadlessUI(), {})
        try:
            runtime.apply_profile(await runtime.resolve_profile())
            mode = await runtime.resolve_protocol()
        finally:
            await runtime.aclose()
    assert mode == "text"  # the user's entry distrusts its native calls
    assert runtime.profile_shown() == (
        f"full profile: house-model, size unknown, model table: house-model ({home / 'models.toml'})")
    from tether.cli import run_info

    assert run_info(runtime, tmp_path, mode)["model_table"] == f"house-model ({home / 'models.toml'})"
