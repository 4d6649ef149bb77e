"""tabconv: converts a delimited text table (CSV and the like) into JSON records."""

import argparse
import csv
import json
import sys


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="tabconv", description="Convert a delimited table with a header row into JSON records.")
    parser.add_argument("table", metavar="TABLE", help="the table file to read")
    parser.add_argument("-s", "--sep", default=",", metavar="CHAR",
                        help="the character between cells (default: ,)")
    parser.add_argument("-o", "--out", metavar="FILE", help="write the JSON to FILE, not to stdout")
    parser.add_argument("--numbers", action="store_true",
                        help="write cells that look like numbers as JSON numbers")
    parser.add_argument("--skip", type=int, default=0, metavar="N",
                        help="skip N lines before the header row")
    parser.add_argument("--compact", action="store_true", help="no indentation")
    return parser.parse_args(argv)


def cell(text, numbers):
    if numbers:
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
    return text


def main(argv=None):
    args = parse_args(argv)
    if len(args.sep) != 1:
        sys.exit(f"tabconv: --sep takes one character, not {args.sep!r}")
    with open(args.table, encoding="utf-8", newline="") as stream:
        for _ in range(args.skip):
            next(stream, None)
        rows = list(csv.DictReader(stream, delimiter=args.sep))
    records = [{key: cell(value, args.numbers) for key, value in row.items()} for row in rows]
    text = json.dumps(records, indent=None if args.compact else 2, ensure_ascii=False) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as stream:
            stream.write(text)
    else:
        sys.stdout.write(text)
    return 0


sys.exit(main())
