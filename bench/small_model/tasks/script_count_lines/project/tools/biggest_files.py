"""Print the N largest files under a folder: python tools/biggest_files.py FOLDER [N]"""

import sys
from pathlib import Path


def main() -> None:
    folder = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    files = sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size,
                   reverse=True)
    for path in files[:count]:
        print(f"{path.stat().st_size:>8}  {path}")


if __name__ == "__main__":
    main()
