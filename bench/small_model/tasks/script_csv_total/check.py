"""total.py FILE COLUMN prints the column's sum, on a CSV the model has never seen."""

import re
import tempfile
from pathlib import Path

from checklib import fail, passed, run_python, text

text("total.py")
CSV = "id,amount,weight,label\n1,10.25,3.5,a\n2,7.5,0.25,b\n3,100,1.75,c\n4,0.75,12,d\n"
CASES = {"amount": 118.5, "weight": 17.5}

with tempfile.TemporaryDirectory() as tmp:
    data = Path(tmp) / "other.csv"
    data.write_text(CSV)
    for column, expected in CASES.items():
        done = run_python("total.py", str(data), column)
        numbers = re.findall(r"-?\d+(?:\.\d+)?", done.stdout)
        if done.returncode != 0 or not numbers:
            fail(f"total.py {column}: exit {done.returncode}, output {(done.stdout + done.stderr)[-300:]!r}")
        if abs(float(numbers[-1]) - expected) > 1e-6:
            fail(f"total.py other.csv {column} printed {done.stdout.strip()!r}, expected {expected}")
passed()
