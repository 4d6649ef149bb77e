"""The answer must name the upload retry limit from uploader/policy.py (11)."""

from checklib import passed, require_answer_has

require_answer_has(r"\b11\b|\beleven\b", "11")
passed()
