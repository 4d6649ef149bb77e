import json

from invoices.export import FORMATS, to_csv, to_json

INVOICES = [
    {"number": "INV-1", "customer": "Acme", "total": 10.5},
    {"number": "INV-2", "customer": "A very long customer name indeed", "total": 7.0},
]


def test_csv_has_a_header_and_a_row_per_invoice() -> None:
    assert to_csv(INVOICES).splitlines() == [
        "number,customer,total",
        "INV-1,Acme,10.5",
        "INV-2,A very long customer name indeed,7.0",
    ]


def test_json_keeps_only_the_exported_fields() -> None:
    data = json.loads(to_json([{**INVOICES[0], "internal_note": "x"}]))
    assert data == [{"number": "INV-1", "customer": "Acme", "total": 10.5}]


def test_every_format_is_offered() -> None:
    assert sorted(FORMATS) == ["csv", "json"]
