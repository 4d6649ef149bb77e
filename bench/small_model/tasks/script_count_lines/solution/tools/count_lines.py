"""Print the total number of lines of the .py files under a folder."""

import sys
from pathlib import Path

total = 0
for path in Path(sys.argv[1]).rglob("*.py"):
    total += len(path.read_text().splitlines())
print(total)
