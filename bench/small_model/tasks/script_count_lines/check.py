"""tools/count_lines.py FOLDER prints the total line count of the .py files under FOLDER,
subfolders included; other files do not count."""

import re
import tempfile
from pathlib import Path

from checklib import fail, passed, run_python, text

text("tools/count_lines.py")
with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp) / "tree"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "a.py").write_text("x = 1\ny = 2\n")                            # 2
    (root / "pkg" / "b.py").write_text("def f():\n    return 3\n\n\nf()\n")  # 5
    (root / "pkg" / "deep" / "c.py").write_text("\n".join(["pass"] * 7) + "\n")  # 7
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    (root / "pkg" / "data.json").write_text("{}\n")
    done = run_python("tools/count_lines.py", str(root))
numbers = re.findall(r"\d+", done.stdout)
if done.returncode != 0 or not numbers or numbers[-1] != "14":
    fail(f"tools/count_lines.py on a tree with 14 lines of Python printed "
         f"{(done.stdout + done.stderr)[-300:]!r}")
passed()
