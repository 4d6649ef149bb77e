"""settings.json says item_limit (same value, nothing else changed), no code mentions max_items,
and the program obeys item_limit."""

import json

from checklib import WORK, fail, load_json, original_text, passed, python_files, run_python

settings = load_json("settings.json")
expected = json.loads(original_text("settings.json"))
expected["item_limit"] = expected.pop("max_items")
if settings != expected:
    fail(f"settings.json should be {expected}, it is {settings}")
left = [str(p.relative_to(WORK)) for p in python_files() if "max_items" in p.read_text()]
if left:
    fail(f"max_items is still read in {', '.join(left)}")
for limit in (4, 2):
    (WORK / "settings.json").write_text(json.dumps({**expected, "item_limit": limit}))
    done = run_python("-m", "feed")
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != limit + 1 or not lines[0].startswith("== Release notes"):
        fail(f"with item_limit {limit} python -m feed printed {(done.stdout + done.stderr)[-300:]!r}")
passed()
