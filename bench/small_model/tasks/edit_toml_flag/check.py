"""settings.toml: telemetry.enabled is false, every other value and every comment as it was."""

from checklib import fail, load_toml, original_text, passed, require_unchanged, text, tomllib

settings = load_toml("settings.toml")
if settings.get("telemetry", {}).get("enabled") is not False:
    fail(f"telemetry.enabled should be false, it is {settings.get('telemetry', {}).get('enabled')!r}")
expected = tomllib.loads(original_text("settings.toml"))
expected["telemetry"]["enabled"] = False
if settings != expected:
    fail("something besides telemetry.enabled changed in settings.toml")
comments = [line for line in original_text("settings.toml").splitlines() if line.startswith("#")]
missing = [c for c in comments if c not in text("settings.toml").splitlines()]
if missing:
    fail(f"settings.toml lost its comments: {missing}")
require_unchanged("notes.py")
passed()
