"""textkit.strings.slugify is right on unseen inputs; tests/test_strings.py tests it, keeps the
old tests, and passes."""

import json
import re

from checklib import fail, original_text, passed, require_pytest, run_python, text

CASES = {"Hello, World!": "hello-world", "  Many   spaces  ": "many-spaces",
         "already-a-slug": "already-a-slug", "C++ & Rust 2024": "c-rust-2024",
         "--Edge--": "edge", "": "", "ABC_def": "abc-def"}
probe = run_python("-c", "import json, sys; from textkit.strings import slugify; "
                         f"print(json.dumps([slugify(t) for t in {list(CASES)!r}]))")
try:
    got = json.loads(probe.stdout)
except ValueError:
    fail(f"textkit.strings.slugify cannot be called: {(probe.stdout + probe.stderr)[-400:]!r}")
wrong = {t: g for t, g, want in zip(CASES, got, CASES.values(), strict=True) if g != want}
if wrong:
    fail(f"slugify gives wrong results: {wrong}")
tests = text("tests/test_strings.py")
if not re.search(r"^def test\w*\([^)]*\):(?:(?!^def ).)*slugify\(", tests, re.M | re.S):
    fail("tests/test_strings.py has no test that calls slugify")
old = re.findall(r"^def (test\w+)", original_text("tests/test_strings.py"), re.M)
gone = [name for name in old if not re.search(rf"^def {name}\(", tests, re.M)]
if gone:
    fail(f"the old tests {gone} are gone from tests/test_strings.py")
require_pytest("tests/test_strings.py")
passed()
