"""tests/test_pagination.py untouched and passing; page_count right on other inputs too."""

from checklib import fail, passed, require_pytest, require_unchanged, run_python

require_unchanged("tests/test_pagination.py")
require_pytest("tests/test_pagination.py")
probe = run_python("-c", "from pager.pages import page_count as c; "
                         "print(c(1, 7), c(7, 7), c(8, 7), c(0, 3), c(100, 9))")
if probe.stdout.split() != ["1", "1", "2", "0", "12"]:
    fail(f"page_count is wrong on other inputs: {(probe.stdout + probe.stderr)[-300:]!r}")
passed()
