"""error_count.txt holds 14, the ERROR-level lines of logs/server.log; the logs are untouched."""

import re

from checklib import fail, passed, require_unchanged, text

found = re.findall(r"\d+", text("error_count.txt"))
if found != ["14"]:
    fail(f"error_count.txt should give the count 14, it holds {text('error_count.txt')[:80]!r}")
require_unchanged("logs/server.log", "logs/server.log.1")
passed()
