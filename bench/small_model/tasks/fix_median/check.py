"""tests/test_core.py untouched and passing; median is right on inputs the test does not use."""

from checklib import fail, passed, require_pytest, require_unchanged, run_python

require_unchanged("tests/test_core.py")
require_pytest("tests/test_core.py")
probe = run_python("-c", "from stats.core import median; "
                         "print(median([8, 2, 6, 4]), median([5]), median([9, 1, 5]), median([1.5, 2.5]))")
if probe.stdout.split() != ["5.0", "5", "5", "2.0"]:
    fail(f"median is still wrong on other inputs: {(probe.stdout + probe.stderr)[-300:]!r}")
passed()
