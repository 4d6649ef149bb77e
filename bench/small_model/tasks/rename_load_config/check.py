"""load_cfg is load_config everywhere: no Python file names load_cfg, the function works under
its new name, both programs and the tests still run."""

import re

from checklib import WORK, fail, passed, python_files, require_pytest, run_python

left = [str(p.relative_to(WORK)) for p in python_files() if re.search(r"\bload_cfg\b", p.read_text())]
if left:
    fail(f"load_cfg is still named in {left}")
done = run_python("-m", "app.main", "settings.json")
if done.returncode != 0 or done.stdout != "billing: 4 workers, normal mode\n":
    fail(f"python -m app.main settings.json printed {(done.stdout + done.stderr)[-300:]!r}")
done = run_python("-m", "app.check_settings", "settings.json")
if done.returncode != 0 or done.stdout != "settings.json: ok\n":
    fail(f"python -m app.check_settings settings.json printed {(done.stdout + done.stderr)[-300:]!r}")
require_pytest("tests")
passed()
