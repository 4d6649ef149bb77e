"""Asks git itself, in a scratch repository holding the finished .gitignore: .env and
everything in dist/ are ignored; .env.example, the sources and docs/distribution.md are not;
what was ignored before still is, and every line of the old .gitignore is kept."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from checklib import fail, original_text, passed, require_unchanged, text

IGNORED = [".env", "dist/quill-1.0.tar.gz", "dist/quill-1.0-py3-none-any.whl",
           "quill/__pycache__/cli.cpython-312.pyc", ".venv/bin/python", ".idea/workspace.xml",
           "notes.swp"]
TRACKED = [".env.example", "README.md", "quill/__main__.py", "docs/distribution.md",
           "distribute.py", ".gitignore"]

rules = text(".gitignore")
kept = rules.splitlines()
lost = [line for line in original_text(".gitignore").splitlines() if line.strip() and line not in kept]
if lost:
    fail(f".gitignore lost lines it had: {lost}")

with tempfile.TemporaryDirectory(prefix="bench-gitignore-") as tmp:
    repo = Path(tmp)
    for rel in IGNORED + TRACKED:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("x\n")
    shutil.copyfile(".gitignore", repo / ".gitignore")
    # Only this .gitignore decides: no user or system git configuration (a global excludes file).
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    done = subprocess.run(["git", "-c", "core.excludesFile=", "check-ignore", "--no-index", "--stdin"],
                          cwd=repo, env=env, input="\n".join(IGNORED + TRACKED) + "\n",
                          capture_output=True, text=True)
    if done.returncode not in (0, 1):
        fail(f"git check-ignore failed: {done.stderr[-300:]}")
    ignored = set(done.stdout.split())
missed = [p for p in IGNORED if p not in ignored]
if missed:
    fail(f"git does not ignore {missed}")
wrong = [p for p in TRACKED if p in ignored]
if wrong:
    fail(f"git now ignores {wrong}, which must stay tracked")
require_unchanged(".env.example", "docs/distribution.md", "README.md")
passed()
