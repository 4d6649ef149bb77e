"""TARGET_DIR is renamed PUBLISH_DIR in config.env and publish.sh: no TARGET_DIR is left there,
config.env sets PUBLISH_DIR to the same path, and publish.sh prints what it printed before."""

import re

from checklib import fail, original_dir, passed, run, text

left = [rel for rel in ("config.env", "publish.sh") if re.search(r"\bTARGET_DIR\b", text(rel))]
if left:
    fail(f"TARGET_DIR is still named in {left}")
if not re.search(r"^PUBLISH_DIR=/srv/www/handbook$", text("config.env"), re.M):
    fail("config.env does not set PUBLISH_DIR=/srv/www/handbook")
before = run(["bash", str(original_dir() / "publish.sh"), "2.1"])
after = run(["bash", "publish.sh", "2.1"])
if after.returncode != 0 or after.stdout != before.stdout:
    fail(f"bash publish.sh 2.1 printed {(after.stdout + after.stderr)[-400:]!r}, expected {before.stdout!r}")
passed()
