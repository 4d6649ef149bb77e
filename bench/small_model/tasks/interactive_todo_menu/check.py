"""Through todo.py (its log shows both changes): "water the plants" is done, "call the bank" is
a new open item, the other items are as they were, todo.py is untouched."""

import re

from checklib import fail, load_json, original_text, passed, require_unchanged, text

require_unchanged("todo.py")
items = load_json("todo.json")
if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
    fail(f"todo.json is not a list of items: {items!r}")
state = {item.get("title"): item.get("done") for item in items}
want = {"renew the passport": False, "water the plants": True, "pay the rent": True,
        "call the bank": False}
if state != want or len(items) != len(want):
    fail(f"todo.json holds {state}, expected {want}")
added = text("todo.log")[len(original_text("todo.log")):]
for change in (r"done 'water the plants'", r"added 'call the bank'"):
    if not re.search(change, added):
        fail(f"todo.log does not show the change {change!r} made through todo.py: {added!r}")
passed()
