"""Settings: layered, typed, and a bad value loses only itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.store.config import (
    Settings,
    field_docs,
    load_settings,
    normalize_ollama_host,
    tether_home,
)


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_defaults_without_any_file(tmp_path: Path) -> None:
    settings, warnings = load_settings(env={}, home=tmp_path)
    assert settings == Settings()
    assert warnings == []


def test_layers_file_then_remembered_then_environment_then_flags(tmp_path: Path) -> None:
    write_config(tmp_path, 'provider = "openai"\nmodel = "from-file"\nmax_steps = 7\nresult_caps = {read_file = 999}\n')
    settings, _ = load_settings(env={}, home=tmp_path)
    assert (settings.provider, settings.model, settings.max_steps) == ("openai", "from-file", 7)
    assert settings.result_caps == {"read_file": 999}
    settings, _ = load_settings(env={}, home=tmp_path, remembered={"provider": "anthropic", "model": "m2"})
    assert (settings.provider, settings.model) == ("anthropic", "m2")
    settings, _ = load_settings(env={"TETHER_MODEL": "from-env", "TETHER_MAX_STEPS": "9"}, home=tmp_path)
    assert (settings.model, settings.max_steps) == ("from-env", 9)
    settings, _ = load_settings({"model": "from-flag", "max_steps": None}, {"TETHER_MODEL": "e"}, tmp_path)
    assert settings.model == "from-flag" and settings.max_steps == 7


def test_an_invalid_value_is_reported_with_its_key_and_ignored(tmp_path: Path) -> None:
    write_config(tmp_path, 'max_steps = 0\nprotocol = "smoke-signals"\nmodel = "kept"\nbogus = 1\n')
    settings, warnings = load_settings(env={}, home=tmp_path)
    assert settings.model == "kept"
    assert settings.max_steps == 20 and settings.protocol == "auto"
    text = "\n".join(warnings)
    assert "'max_steps'" in text and "'protocol'" in text and "'bogus'" in text
    assert str(tmp_path / "config.toml") in text


def test_a_broken_file_is_reported_not_a_crash(tmp_path: Path) -> None:
    write_config(tmp_path, "this is = = not toml [")
    settings, warnings = load_settings(env={}, home=tmp_path)
    assert settings == Settings()
    assert warnings == [f"{tmp_path / 'config.toml'} is not valid TOML (Expected '=' after a key "
                        "in a key/value pair (at line 1, column 6)); its settings are ignored"]


def test_a_bad_environment_value_is_reported(tmp_path: Path) -> None:
    settings, warnings = load_settings(env={"TETHER_MAX_STEPS": "lots"}, home=tmp_path)
    assert settings.max_steps == 20
    assert any("environment" in w and "'max_steps'" in w for w in warnings)


def test_ollama_host_without_scheme_and_tether_home(tmp_path: Path) -> None:
    assert normalize_ollama_host("localhost:11434/") == "http://localhost:11434"
    settings, _ = load_settings(env={"OLLAMA_HOST": "10.0.0.5:1234"}, home=tmp_path)
    assert settings.ollama_host == "http://10.0.0.5:1234"
    assert tether_home({"TETHER_HOME": str(tmp_path)}) == tmp_path
    assert tether_home({}).name == ".tether"


def test_every_setting_has_a_description() -> None:
    assert all(field_docs().values())


def test_a_file_that_is_not_utf8_is_named_with_its_line_and_ignored(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "config.toml").write_bytes(b'max_steps = 5\n# caf\xe9\n')
    settings, warnings = load_settings(env={}, home=tmp_path)
    assert settings == Settings()
    assert warnings == [f"{tmp_path / 'config.toml'} is not UTF-8 text (byte 0xe9 on line 2); "
                        "its settings are ignored"]


def test_a_directory_in_place_of_the_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()
    settings, warnings = load_settings(env={}, home=tmp_path)
    assert settings == Settings()
    assert warnings == [f"{tmp_path / 'config.toml'} is a directory, not a file; "
                        "its settings are ignored"]


def test_an_unreadable_file_is_reported(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    write_config(tmp_path, "max_steps = 5\n")
    (tmp_path / "config.toml").chmod(0)
    _, warnings = load_settings(env={}, home=tmp_path)
    assert "cannot be read (Permission denied)" in warnings[0]


def test_values_are_converted_as_a_person_means_them(tmp_path: Path) -> None:
    write_config(tmp_path, 'keep_thinking = "yes"\ntool_timeout = 30\ncontext_window = 8192.0\n'
                 'web_sources = ["github", "wikipedia"]\ninstruction_fallbacks = ["AGENTS.md"]\n')
    settings, warnings = load_settings(env={"TETHER_MAX_STEPS": " 12 "}, home=tmp_path)
    assert warnings == []
    assert settings.keep_thinking is True and settings.tool_timeout == 30.0
    assert settings.context_window == 8192 and isinstance(settings.context_window, int)
    assert settings.web_sources == ("github", "wikipedia")
    assert settings.instruction_fallbacks == ("AGENTS.md",) and settings.max_steps == 12


@pytest.mark.parametrize(("line", "reason"), [
    ("max_steps = 1001", "must be at most 1000"),
    ("tool_timeout = 0", "must be more than 0"),
    ("max_steps = 2.5", "expected a whole number"),
    ("max_steps = true", "expected a whole number"),
    ('temperature = "warm"', "expected a number"),
    ('compress = "maybe"', "expected true or false"),
    ('profile = "tiny"', "expected one of auto, small, full"),
    ('web_sources = "github"', "expected a list"),
    ('web_sources = ["altavista"]', "expected one of duckduckgo"),
    ("model = 7", "expected text"),
    ("result_caps = [1]", "expected a table of names"),
    ('result_caps = {read_file = "lots"}', "expected a whole number"),
    ('openai_base_url = "ftp://host"', "expected an http:// or https:// URL with a host"),
    ('searxng_url = "nope"', "expected an http:// or https:// URL"),
])
def test_a_bad_value_says_what_was_expected(tmp_path: Path, line: str, reason: str) -> None:
    write_config(tmp_path, line + "\n")
    settings, warnings = load_settings(env={}, home=tmp_path)
    key = line.split(" = ")[0]
    assert len(warnings) == 1 and f"invalid value for '{key}' ({reason}" in warnings[0], warnings
    assert getattr(settings, key) == getattr(Settings(), key)


def test_settings_know_what_was_given_and_keep_it_through_a_change() -> None:
    assert Settings().given == frozenset()
    settings = Settings(max_steps=30, model="m")
    assert settings.given == {"max_steps", "model"}
    changed = settings.with_changes(model="other", connect_timeout=1)
    assert (changed.max_steps, changed.model, changed.connect_timeout) == (30, "other", 1.0)
    assert changed.given == {"max_steps", "model", "connect_timeout"}
    assert settings.model == "m"  # the original is unchanged
    with pytest.raises(ValueError, match="max_steps: must be at least 1"):
        settings.with_changes(max_steps=0)
    with pytest.raises(TypeError):
        Settings(not_a_setting=1)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        settings.model = "x"  # type: ignore[misc]


@pytest.mark.parametrize(("line", "key", "value"), [
    ('max_steps = "12.0"', "max_steps", 12),
    ("keep_thinking = 1.0", "keep_thinking", True),
    ('compress = " off "', "compress", False),
])
def test_more_ways_of_writing_a_value(tmp_path: Path, line: str, key: str, value: object) -> None:
    write_config(tmp_path, line + "\n")
    settings, warnings = load_settings(env={}, home=tmp_path)
    assert warnings == [] and getattr(settings, key) == value


@pytest.mark.parametrize("line", ["tool_timeout = 1" + "0" * 400, "request_timeout = inf",
                                  'temperature = "nan"', "max_steps = 1" + "0" * 400])
def test_a_number_too_big_or_endless_is_reported_not_a_crash(tmp_path: Path, line: str) -> None:
    write_config(tmp_path, line + "\n")
    settings, warnings = load_settings(env={}, home=tmp_path)
    key = line.split(" = ")[0]
    assert len(warnings) == 1 and f"invalid value for '{key}'" in warnings[0]
    assert getattr(settings, key) == getattr(Settings(), key)
