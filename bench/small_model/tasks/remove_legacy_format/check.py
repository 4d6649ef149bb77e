"""No Python file mentions the legacy format any more, --format legacy is refused, CSV and JSON
export print what they printed before (on invoices the project does not have), and the other
tests are all still there and pass."""

import json
import re
import tempfile
from pathlib import Path

from checklib import WORK, fail, passed, python_files, require_pytest, require_unchanged, run_python

left = [str(p.relative_to(WORK)) for p in python_files() if re.search("legacy", p.read_text(), re.I)]
if left:
    fail(f"the legacy format is still there in {', '.join(left)}")

INVOICES = [{"number": "A-7", "customer": "Quay & Sons", "total": 250.0},
            {"number": "A-8", "customer": "Lindqvist, Berg", "total": 19.99},
            {"number": "A-9", "customer": "Ostara Bakery", "total": 1002.4}]
CSV = ('number,customer,total\nA-7,Quay & Sons,250.0\nA-8,"Lindqvist, Berg",19.99\n'
       "A-9,Ostara Bakery,1002.4\n")
with tempfile.TemporaryDirectory(prefix="bench-invoices-") as tmp:
    data = Path(tmp) / "april.json"
    data.write_text(json.dumps(INVOICES))
    runs = {
        "csv (the default)": (run_python("-m", "invoices", str(data)), CSV),
        "--format csv --min-total 100": (
            run_python("-m", "invoices", str(data), "--format", "csv", "--min-total", "100"),
            "".join(line + "\n" for i, line in enumerate(CSV.splitlines()) if i != 2)),
        "--format json --min-total 100": (
            run_python("-m", "invoices", str(data), "--format", "json", "--min-total", "100"),
            json.dumps([INVOICES[0], INVOICES[2]], indent=2) + "\n"),
    }
    refused = run_python("-m", "invoices", str(data), "--format", "legacy")
for what, (done, expected) in runs.items():
    if done.returncode != 0 or done.stdout != expected:
        fail(f"python -m invoices FILE {what} no longer prints what it did: expected {expected!r}, "
             f"got {(done.stdout + done.stderr)[-400:]!r}")
if refused.returncode == 0 or refused.stdout.strip():
    fail(f"python -m invoices FILE --format legacy still works: {refused.stdout[-200:]!r}")

KEPT = ["test_csv_has_a_header_and_a_row_per_invoice", "test_json_keeps_only_the_exported_fields",
        "test_every_format_is_offered"]
tests = (WORK / "tests" / "test_export.py").read_text() if (WORK / "tests" / "test_export.py").is_file() else ""
gone = [name for name in KEPT if not re.search(rf"^def {name}\(", tests, re.M)]
if gone:
    fail(f"tests/test_export.py lost tests that are not about the legacy format: {gone}")
require_pytest("tests")
require_unchanged("data/march.json")
passed()
