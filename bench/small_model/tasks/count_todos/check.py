"""todo_count.txt holds 9 (TODO lines in src/**/*.py, case-sensitive); the sources are untouched."""

import re

from checklib import fail, original_dir, passed, require_unchanged, text

count = text("todo_count.txt").strip()
if not re.fullmatch(r"\d+", count):
    fail(f"todo_count.txt should hold just a number, it holds {count[:80]!r}")
if count != "9":
    fail(f"todo_count.txt says {count}, the right count is 9")
sources = original_dir() / "src"
require_unchanged(*(str(p.relative_to(original_dir())) for p in sources.rglob("*.py")))
passed()
