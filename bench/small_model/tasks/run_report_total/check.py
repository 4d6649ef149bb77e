"""The answer quotes report.py's grand total (7416.22); report.py and its data are untouched."""

from checklib import passed, require_answer_has, require_unchanged

require_unchanged("report.py", "data/orders.csv")
require_answer_has(r"7,?416\.22\b", "7416.22")
passed()
