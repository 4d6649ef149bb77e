"""Builds a task's zip-app tool (`python tools/NAME.pyz`) from its source folder, byte for byte
the same each time (fixed timestamps, sorted entries).

A task whose request needs what only a program's --help shows ships the program compressed, so
its option names appear in no plain text file of the project:

    python bench/small_model/build_pyz.py tasks/ask_help_option/tool/logtidy \
        tasks/ask_help_option/project/tools/logtidy.pyz
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

EPOCH = (2024, 1, 1, 0, 0, 0)


def build(source: Path, target: Path) -> None:
    with target.open("wb") as raw:
        raw.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts):
                entry = zipfile.ZipInfo(path.relative_to(source).as_posix(), EPOCH)
                entry.compress_type = zipfile.ZIP_DEFLATED
                entry.external_attr = 0o644 << 16
                archive.writestr(entry, path.read_bytes())
    target.chmod(0o755)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: build_pyz.py SOURCE_FOLDER TARGET.pyz")
    build(Path(sys.argv[1]), Path(sys.argv[2]))
