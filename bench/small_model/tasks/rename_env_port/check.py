"""APP_PORT is SERVER_PORT in serve.py, start.sh and README.md: serve.py reads the new name (and
no longer the old), start.sh sets it, nothing names APP_PORT."""

import re
import subprocess
import sys

from checklib import WORK, check_env, fail, passed, run

for rel in ("serve.py", "start.sh", "README.md"):
    path = WORK / rel
    if not path.is_file():
        fail(f"{rel} is gone")
    body = path.read_text(encoding="utf-8")
    if "APP_PORT" in body:
        fail(f"{rel} still names APP_PORT")
    if "SERVER_PORT" not in body:
        fail(f"{rel} does not name SERVER_PORT")


def port_with(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "serve.py", "--print-port"], cwd=WORK, env={**check_env(), **env},
                          capture_output=True, text=True, timeout=30)
    return (done.stdout + done.stderr).strip()


if port_with({"SERVER_PORT": "1234"}) != "1234":
    fail(f"SERVER_PORT=1234 python serve.py --print-port printed {port_with({'SERVER_PORT': '1234'})!r}")
if port_with({"APP_PORT": "4321"}) != "8000":
    fail("serve.py still reads APP_PORT")
if not re.search(r"^\s*(export\s+)?SERVER_PORT=9000\b", (WORK / "start.sh").read_text(), re.M):
    fail("start.sh does not set SERVER_PORT=9000")
done = run(["bash", "-n", "start.sh"])
if done.returncode != 0:
    fail(f"start.sh is no longer valid bash: {done.stderr[-300:]!r}")
passed()
