import argparse
from pathlib import Path


def counts(text: str) -> tuple[int, int, int]:
    return len(text.splitlines()), len(text.split()), len(text)


def main() -> None:
    parser = argparse.ArgumentParser(prog="tally", description="Count lines, words and characters.")
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.files:
        lines, words, chars = counts(path.read_text(encoding="utf-8"))
        print(f"{lines:6} {words:6} {chars:7} {path}")
