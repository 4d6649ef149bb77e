"""python -m invoices FILE [--format csv|json] [--min-total N]"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from invoices.export import FORMATS


def main() -> None:
    parser = argparse.ArgumentParser(prog="invoices", description="Export invoice records.")
    parser.add_argument("file", type=Path, help="a JSON file of invoices")
    parser.add_argument("--format", choices=sorted(FORMATS), default="csv")
    parser.add_argument("--min-total", type=float, default=0.0,
                        help="leave out invoices below this total")
    args = parser.parse_args()
    invoices = json.loads(args.file.read_text(encoding="utf-8"))
    chosen = [i for i in invoices if i["total"] >= args.min_total]
    sys.stdout.write(FORMATS[args.format](chosen))


main()
