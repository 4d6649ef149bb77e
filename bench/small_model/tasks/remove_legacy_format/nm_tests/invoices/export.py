"""The export formats: CSV for spreadsheets, JSON for the web app."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

FIELDS = ["number", "customer", "total"]


def to_csv(invoices: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for invoice in invoices:
        writer.writerow({field: invoice[field] for field in FIELDS})
    return out.getvalue()


def to_json(invoices: list[dict[str, Any]]) -> str:
    return json.dumps([{field: invoice[field] for field in FIELDS} for invoice in invoices],
                      indent=2) + "\n"


FORMATS = {"csv": to_csv, "json": to_json}
