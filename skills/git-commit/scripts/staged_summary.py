"""Summarise the staged changes: each file with its added and removed line counts."""

from __future__ import annotations

import argparse
import subprocess
import sys


def staged_numstat() -> list[tuple[str, str, str]]:
    done = subprocess.run(["git", "diff", "--cached", "--numstat"], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"git diff failed: {done.stderr.strip()}")
    rows = []
    for line in done.stdout.splitlines():
        added, removed, path = line.split("\t", 2)
        rows.append((added, removed, path))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description="List the staged files with +added -removed lines.")
    parser.add_argument("--max-files", metavar="N", default="50",
                        help="list at most N files (default 50)")
    args = parser.parse_args()
    rows = staged_numstat()
    if not rows:
        print("nothing is staged")
        return 1
    limit = int(args.max_files)
    for added, removed, path in rows[:limit]:
        print(f"+{added} -{removed} {path}")
    if len(rows) > limit:
        print(f"... and {len(rows) - limit} more files")
    print(f"{len(rows)} file(s) staged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
