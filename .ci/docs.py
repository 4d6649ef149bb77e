#!/usr/bin/env python3
"""Regenerate the settings table of docs/configuration.md from the code's settings, then
copy docs/*.md into the package (src/tether/ui/docs/), where `tether help TOPIC` reads them.
Run it after editing a page or a setting: `python .ci/docs.py` (tests/test_docs.py fails
until the copies and the table are up to date)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from tether.ui.docs_pages import with_settings_table  # noqa: E402


def main() -> int:
    docs, packaged = REPO / "docs", REPO / "src" / "tether" / "ui" / "docs"
    configuration = docs / "configuration.md"
    configuration.write_text(with_settings_table(configuration.read_text()))
    packaged.mkdir(exist_ok=True)
    for stale in set(p.name for p in packaged.glob("*.md")) - set(p.name for p in docs.glob("*.md")):
        (packaged / stale).unlink()
    for page in sorted(docs.glob("*.md")):
        shutil.copyfile(page, packaged / page.name)
    print(f"{len(list(docs.glob('*.md')))} pages copied to {packaged.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
