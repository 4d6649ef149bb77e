"""StockItem is renamed Product in every .py file: no StockItem is left, the tests pass, a
new test that uses Product passes, and stock.py prints what it printed before."""

import re

from checklib import WORK, fail, original_dir, passed, python_files, require_pytest, run_python

left = sorted(str(p.relative_to(WORK)) for p in python_files() if re.search(r"\bStockItem\b", p.read_text()))
if left:
    fail(f"StockItem is still named in {left}")
require_pytest("tests")
probe = run_python("-c", "from inventory.models import Product; from inventory.store import Store; "
                   "p = Store().add('Q', 'q', 9); print(type(p) is Product, p.is_low(10))")
if probe.stdout != "True True\n":
    fail(f"inventory.models.Product does not work as StockItem did: {(probe.stdout + probe.stderr)[-300:]!r}")
before = run_python(str(original_dir() / "stock.py"))
after = run_python("stock.py")
if after.returncode != 0 or after.stdout != before.stdout:
    fail(f"python stock.py printed {(after.stdout + after.stderr)[-400:]!r}, expected {before.stdout!r}")
passed()
