"""Word statistics for a text file: python tools/textstats.py FILE [--min-length N]"""

import argparse
import re
from collections import Counter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--min-length", type=int, default=1)
    args = parser.parse_args()
    with open(args.file, encoding="utf-8") as f:
        words = [w for w in re.findall(r"[a-z']+", f.read().lower()) if len(w) >= args.min_length]
    counts = Counter(words)
    print(f"words: {len(words)}")
    print(f"unique: {len(counts)}")
    top = ", ".join(f"{w} ({n})" for w, n in counts.most_common(3))
    print(f"most common: {top}")


if __name__ == "__main__":
    main()
