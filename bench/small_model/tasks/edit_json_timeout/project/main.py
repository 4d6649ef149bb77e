import json
from pathlib import Path

CONFIG = json.loads((Path(__file__).parent / "config" / "app.json").read_text())
print(CONFIG["name"], CONFIG["http"]["timeout_s"])
