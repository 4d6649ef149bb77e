"""The answer gives 50, the unique count textstats.py reports with --min-length 5."""

from checklib import passed, require_answer_has, require_unchanged

require_unchanged("tools/textstats.py", "notes/meeting-2024-04-18.txt")
require_answer_has(r"\b50\b", "50 unique words")
passed()
