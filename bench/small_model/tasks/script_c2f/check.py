"""scripts/c2f.py converts every Celsius argument to Fahrenheit, one line each."""

import re

from checklib import fail, passed, require_unchanged, run_python, text

text("scripts/c2f.py")
ARGS = ["100", "-40", "36.6", "0"]
EXPECTED = [212.0, -40.0, 97.88, 32.0]
done = run_python("scripts/c2f.py", *ARGS)
lines = [line for line in done.stdout.splitlines() if line.strip()]
if done.returncode != 0:
    fail(f"c2f.py {' '.join(ARGS)} exited {done.returncode}: {done.stderr[-300:]}")
if len(lines) != len(ARGS):
    fail(f"expected {len(ARGS)} lines for {len(ARGS)} arguments, got {done.stdout!r}")
for line, expected in zip(lines, EXPECTED, strict=True):
    numbers = re.findall(r"-?\d+(?:\.\d+)?", line)
    if not numbers or abs(float(numbers[-1]) - expected) > 0.01:
        fail(f"c2f.py {' '.join(ARGS)} printed {done.stdout!r}; expected {EXPECTED}")
require_unchanged("scripts/km_to_miles.py")
passed()
