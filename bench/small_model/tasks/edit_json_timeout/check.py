"""config/app.json: http.timeout_s is the number 45; every other value is as it was."""

import json

from checklib import fail, load_json, original_text, passed, require_unchanged

config = load_json("config/app.json")
timeout = config.get("http", {}).get("timeout_s") if isinstance(config, dict) else None
if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout != 45:
    fail(f"http.timeout_s should be the number 45, it is {timeout!r}")
expected = json.loads(original_text("config/app.json"))
expected["http"]["timeout_s"] = timeout
if config != expected:
    fail("something besides http.timeout_s changed in config/app.json")
require_unchanged("main.py")
passed()
