import sys
from pathlib import Path

print(sum(len(p.read_text().splitlines()) for p in Path(sys.argv[1]).rglob("*") if p.is_file()))
