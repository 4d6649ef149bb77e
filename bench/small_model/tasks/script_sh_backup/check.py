"""bash backup.sh DIR copies exactly DIR's .txt files into DIR/backup/ (made when missing) and
prints the count; clean.sh is untouched."""

import re
import tempfile
from pathlib import Path

from checklib import fail, passed, require_unchanged, run, text

require_unchanged("clean.sh")
text("backup.sh")
with tempfile.TemporaryDirectory() as tmp:
    folder = Path(tmp) / "docs"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(f"{name}\n")
    (folder / "d.md").write_text("# d\n")
    done = run(["bash", "backup.sh", str(folder)])
    backup = folder / "backup"
    copied = sorted(p.name for p in backup.iterdir()) if backup.is_dir() else []
    if done.returncode != 0:
        fail(f"bash backup.sh DIR exited {done.returncode}: {(done.stdout + done.stderr)[-300:]!r}")
    if copied != ["a.txt", "b.txt", "c.txt"]:
        fail(f"DIR/backup/ holds {copied}, expected the three .txt files")
    if (backup / "b.txt").read_text() != "b.txt\n":
        fail("backup/b.txt does not hold what b.txt held")
    if re.findall(r"\d+", done.stdout)[-1:] != ["3"]:
        fail(f"backup.sh copied 3 files but printed {done.stdout!r}")
passed()
