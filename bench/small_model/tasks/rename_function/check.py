"""calc_total is gone from every Python file, compute_order_total is defined in shop/cart.py,
and app.py prints what it printed before."""

import re

from checklib import WORK, fail, passed, python_files, run_python, text

left = [str(p.relative_to(WORK)) for p in python_files() if "calc_total" in p.read_text()]
if left:
    fail(f"calc_total is still used in {', '.join(left)}")
if not re.search(r"^def compute_order_total\(", text("shop/cart.py"), re.M):
    fail("shop/cart.py does not define compute_order_total")
done = run_python("app.py")
if done.stdout != "2 x tea\n1 x scone\ntotal: 11.03\nbefore discount: 1225\n":
    fail(f"app.py no longer prints the same: {(done.stdout + done.stderr)[-400:]!r}")
passed()
