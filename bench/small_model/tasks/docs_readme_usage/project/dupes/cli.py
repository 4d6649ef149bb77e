"""The command line: python -m dupes FOLDER [options]."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dupes.finder import duplicate_groups


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dupes", description="Find files with the same content.")
    parser.add_argument("folder", type=Path, help="the folder tree to search")
    parser.add_argument("--min-size", type=int, default=4096, metavar="BYTES",
                        help="skip files smaller than this")
    parser.add_argument("--hash", choices=["md5", "sha1", "sha256"], default="sha1",
                        help="how file contents are compared")
    parser.add_argument("--json", action="store_true", help="print the groups as JSON")
    parser.add_argument("--delete", action="store_true",
                        help="delete every copy but the first of each group")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    groups = duplicate_groups(args.folder, args.min_size, args.hash)
    if args.json:
        print(json.dumps([[str(p) for p in group] for group in groups], indent=2))
    else:
        for group in groups:
            print("\n".join(str(p) for p in group), end="\n\n")
    if args.delete:
        for group in groups:
            for extra in group[1:]:
                extra.unlink()
    return 0
