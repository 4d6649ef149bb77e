"""The setting retries is renamed max_retries: settings.json has max_retries 4 and no retries,
the code reads max_retries (its default too), and main.py prints the same plan for settings
files that give max_retries or leave it to the default."""

import json
import re

from checklib import WORK, fail, load_json, passed, python_files, run_python

settings = load_json("settings.json")
if settings.get("max_retries") != 4 or "retries" in settings:
    fail(f"settings.json should have max_retries 4 and no retries: {settings}")
left = sorted(str(p.relative_to(WORK)) for p in python_files() if re.search(r"""["']retries["']""", p.read_text()))
if left:
    fail(f"the setting retries is still read in {left}")
(WORK / "other.json").write_text(json.dumps({"base_url": "http://h", "max_retries": 7}))
(WORK / "bare.json").write_text(json.dumps({"base_url": "http://h"}))
for name, want in (("settings.json", "GET https://api.example.test/status (up to 4 retries, 10 s each)\n"),
                   ("other.json", "GET http://h/status (up to 7 retries, 5 s each)\n"),
                   ("bare.json", "GET http://h/status (up to 2 retries, 5 s each)\n")):
    done = run_python("main.py", name)
    if done.stdout != want:
        fail(f"python main.py {name} printed {(done.stdout + done.stderr)[-400:]!r}, expected {want!r}")
passed()
