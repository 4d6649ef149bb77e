import os
import sys
from pathlib import Path


def load_env(path: Path = Path(".env")) -> None:
    """Put the KEY=value lines of .env into the environment (values already set win)."""
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            os.environ.setdefault(key.strip(), value.strip())


load_env()
if not os.environ.get("QUILL_API_TOKEN"):
    sys.exit("quill: set QUILL_API_TOKEN in .env (see .env.example)")
print(f"would post {len(sys.argv) - 1} folder(s) to {os.environ.get('QUILL_BASE_URL')}")
