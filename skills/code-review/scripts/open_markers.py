"""List TODO, FIXME and XXX markers in the text files under a folder."""

from __future__ import annotations

import argparse
import os
import re
import sys

SKIPPED = {".git", ".venv", "node_modules", "__pycache__"}


def markers(folder: str, pattern: re.Pattern[str]) -> list[str]:
    found = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
        for name in sorted(files):
            path = os.path.join(top, name)
            try:
                with open(path, encoding="utf-8") as handle:
                    for number, line in enumerate(handle, start=1):
                        if pattern.search(line):
                            found.append(f"{path}:{number}: {line.strip()}")
            except (UnicodeDecodeError, OSError):
                continue
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description="List TODO/FIXME/XXX markers under a folder.")
    parser.add_argument("folder", help="the folder to search")
    parser.add_argument("--markers", metavar="WORDS", default="TODO,FIXME,XXX",
                        help="comma-separated marker words (default TODO,FIXME,XXX)")
    args = parser.parse_args()
    if not os.path.isdir(args.folder):
        print(f"not a folder: {args.folder}", file=sys.stderr)
        return 2
    words = [re.escape(w) for w in args.markers.split(",") if w]
    found = markers(args.folder, re.compile(r"\b(" + "|".join(words) + r")\b"))
    print("\n".join(found) if found else "no markers found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
