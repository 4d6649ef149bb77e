"""How read_file marks a file's lines: `N| text`, or `N:hh| text` with the edit anchor's hash.

Small models copy the marks with the lines into what they write; the edit tool and the text
protocol's repairs both take them off, and both recognise them by this one pattern.
"""

from __future__ import annotations

import re

READ_PREFIX = re.compile(r"^(\d+)(?::[0-9a-f]{2})?\| ?", re.M)
"""read_file's mark at the start of a line; group 1 is the line number."""
