"""test/duration.test.js untouched and passing under node's test runner; formatDuration right
on durations the test does not use, and parseDuration still reads them back."""

import re

from checklib import fail, passed, require_unchanged, run

require_unchanged("test/duration.test.js", "bin/cliptime.js", "package.json")
done = run(["node", "--test"], timeout=120)
out = done.stdout + done.stderr
tests = re.search(r"^# tests (\d+)$", out, re.M)
failed = re.search(r"^# fail (\d+)$", out, re.M)
if done.returncode != 0 or not tests or int(tests.group(1)) < 5 or not failed or failed.group(1) != "0":
    fail(f"node --test does not pass:\n{out[-1500:]}")
PROBES = {36000 + 59 * 60 + 59: "10:59:59", 3599: "59:59", 90061: "25:01:01", 5400.5: "1:30:00",
          7260: "2:01:00"}
script = ("const d = require('./lib/duration');"
          f"for (const s of {list(PROBES)}) {{ const f = d.formatDuration(s);"
          " console.log(f, d.parseDuration(f)); }")
probe = run(["node", "-e", script])
expected = [f"{text} {int(seconds)}" for seconds, text in PROBES.items()]
if probe.stdout.splitlines() != expected:
    fail(f"formatDuration is still wrong on other durations: expected {expected}, "
         f"got {(probe.stdout + probe.stderr)[-400:]!r}")
passed()
