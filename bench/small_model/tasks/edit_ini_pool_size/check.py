"""deploy/services.ini, read as the program reads it (configparser, [DEFAULT] filling in):
the worker's pool_size is 8, every other value of every service as it was, comments kept."""

import configparser

from checklib import fail, original_text, passed, require_unchanged, text


def effective(source: str, what: str) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser()
    try:
        parser.read_string(source)
    except configparser.Error as exc:
        fail(f"{what} is no longer valid INI: {exc}")
    return {name: dict(parser[name]) for name in ["DEFAULT", *parser.sections()]}


now = effective(text("deploy/services.ini"), "deploy/services.ini")
expected = effective(original_text("deploy/services.ini"), "the original")
if now.get("worker", {}).get("pool_size", "").strip() != "8":
    fail(f"the worker's pool_size should be 8, it is {now.get('worker', {}).get('pool_size')!r}")
expected["worker"]["pool_size"] = "8"
for name in sorted(set(now) | set(expected)):
    if now.get(name) != expected.get(name):
        fail(f"[{name}] should read {expected.get(name)}, it reads {now.get(name)}")
comments = [line for line in original_text("deploy/services.ini").splitlines() if line.startswith(";")]
missing = [c for c in comments if c not in text("deploy/services.ini").splitlines()]
if missing:
    fail(f"deploy/services.ini lost its comments: {missing}")
require_unchanged("relay/settings.py", "relay/__main__.py")
passed()
