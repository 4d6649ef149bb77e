"""The answer's command uses --min-level WARNING (logtidy's --help is the only place that names
it: the tool is a compressed zip app) on logs/app.log, not --only-level (that one level alone)."""

from checklib import passed, require_answer_has, require_unchanged

require_unchanged("tools/logtidy.pyz", "logs/app.log")
require_answer_has(r"--min-level(?:=|\s+)[\"']?warn(?:ing)?\b", "--min-level WARNING",
                   forbid=r"--only-level")
require_answer_has(r"\bapp\.log\b", "the log file (logs/app.log)")
passed()
