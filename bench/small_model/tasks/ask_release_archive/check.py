"""The answer names tally-counter_2-3-0.tar.gz: the project's name from pyproject.toml, an
underscore, the version with dashes for dots (release.sh's ${version//./-})."""

from checklib import passed, require_answer_has, require_unchanged

require_unchanged("release.sh", "pyproject.toml")
require_answer_has(r"(?<![\w.-])(dist/)?tally-counter_2-3-0\.tar\.gz\b", "tally-counter_2-3-0.tar.gz",
                   forbid=r"2\.3\.0\.tar")
passed()
