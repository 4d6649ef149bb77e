"""The answer must give the default port from ledger/config/defaults.py (7341)."""

from checklib import passed, require_answer_has

require_answer_has(r"\b7341\b", "7341")
passed()
