import sys
from pathlib import Path

print(sum(len(p.read_text().splitlines()) for p in Path(sys.argv[1]).glob("*.py")))
