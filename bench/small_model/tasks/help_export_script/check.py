"""export.sh calls tools/tabconv.pyz (whose separator option only its --help names: the tool is
a compressed zip app); `bash export.sh`, in a copy of the folder, writes stock.json with the
stock list's records, and again with the records of a stock list it has never seen."""

import json
import re
import shutil
import tempfile
from pathlib import Path

from checklib import WORK, fail, passed, require_unchanged, run, text

script = text("export.sh")
calls = [line for line in script.splitlines()
         if "tabconv.pyz" in line and not line.lstrip().startswith("#")]
if not calls:
    fail("export.sh does not run tools/tabconv.pyz")

STOCK = [{"sku": "TB-100", "name": "Tea bags, green", "qty": "240", "price": "3.95"},
         {"sku": "MG-210", "name": "Mug, blue", "qty": "36", "price": "7.50"},
         {"sku": "KT-015", "name": "Kettle 1.7 l", "qty": "8", "price": "34.00"},
         {"sku": "FL-330", "name": "Filter papers", "qty": "500", "price": "2.25"}]
UNSEEN = [{"sku": "CP-901", "name": "Coffee press, 8 cups", "qty": "12", "price": "29.90"},
          {"sku": "SP-044", "name": "Spoons; set of 6", "qty": "0", "price": "11.00"}]


def same(record: dict, expected: dict[str, str]) -> bool:
    """The record of a row: each cell as written, or (the tool's --numbers) as a number."""
    if not isinstance(record, dict) or sorted(record) != sorted(expected):
        return False
    for key, want in expected.items():
        got = record[key]
        if isinstance(got, bool) or not (got == want or (isinstance(got, (int, float))
                                                        and re.fullmatch(r"-?[\d.]+", want)
                                                        and float(want) == got)):
            return False
    return True


def export(folder: Path, rows: list[dict[str, str]], what: str) -> None:
    (folder / "stock.json").unlink(missing_ok=True)
    done = run(["bash", "export.sh"], cwd=folder, timeout=60)
    if done.returncode != 0:
        fail(f"bash export.sh ({what}) exited {done.returncode}: {(done.stdout + done.stderr)[-400:]}")
    out = folder / "stock.json"
    if not out.is_file():
        fail(f"bash export.sh ({what}) wrote no stock.json")
    try:
        records = json.loads(out.read_text(encoding="utf-8"))
    except ValueError as exc:
        fail(f"the stock.json export.sh wrote ({what}) is not JSON: {exc}")
    if not isinstance(records, list) or len(records) != len(rows) \
            or not all(same(r, e) for r, e in zip(records, rows, strict=True)):
        fail(f"the stock.json export.sh wrote ({what}) should hold {rows}, it holds "
             f"{json.dumps(records)[:400]}")


with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
    copy = Path(tmp) / "shop"
    shutil.copytree(WORK, copy, ignore=shutil.ignore_patterns(".git"))
    export(copy, STOCK, "on data/stock.csv")
    table = "sku;name;qty;price\n" + "".join(
        f"{r['sku']};\"{r['name']}\";{r['qty']};{r['price']}\n" if ";" in r["name"]
        else ";".join(r.values()) + "\n" for r in UNSEEN)
    (copy / "data" / "stock.csv").write_text(table, encoding="utf-8")
    export(copy, UNSEEN, "on a stock list it has not seen")
require_unchanged("data/stock.csv", "tools/tabconv.pyz")
passed()
