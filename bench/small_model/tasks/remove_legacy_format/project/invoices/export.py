"""The export formats: CSV for spreadsheets, JSON for the web app, and the legacy fixed-width
text the old accounting system imported."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

FIELDS = ["number", "customer", "total"]
LEGACY_WIDTHS = {"number": 8, "customer": 20, "total": 10}


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


def _legacy_cell(value: Any, width: int) -> str:
    text = f"{value:.2f}" if isinstance(value, float) else str(value)
    return text[:width].ljust(width)


def to_legacy(invoices: list[dict[str, Any]]) -> str:
    lines = ["".join(_legacy_cell(invoice[f], LEGACY_WIDTHS[f]) for f in FIELDS).rstrip()
             for invoice in invoices]
    return "\n".join(lines) + "\n"


FORMATS = {"csv": to_csv, "json": to_json, "legacy": to_legacy}
