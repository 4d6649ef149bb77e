"""padLeft is renamed leftPad in every .js file: no padLeft is left, lib/text.js exports
leftPad, and bin/report.js prints what it printed before."""

import re

from checklib import WORK, fail, original_dir, passed, run

left = sorted(str(p.relative_to(WORK)) for p in WORK.rglob("*.js") if re.search(r"\bpadLeft\b", p.read_text()))
if left:
    fail(f"padLeft is still named in {left}")
probe = run(["node", "-e", "const t = require('./lib/text'); console.log(typeof t.leftPad, t.leftPad(7, 3))"])
if probe.stdout != "function   7\n":
    fail(f"lib/text.js does not export a working leftPad: {(probe.stdout + probe.stderr)[-300:]!r}")
before = run(["node", str(original_dir() / "bin" / "report.js")])
after = run(["node", "bin/report.js"])
if after.returncode != 0 or after.stdout != before.stdout:
    fail(f"node bin/report.js printed {(after.stdout + after.stderr)[-400:]!r}, expected {before.stdout!r}")
passed()
