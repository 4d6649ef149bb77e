import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load():
    settings = json.loads((ROOT / "settings.json").read_text())
    if settings["max_items"] < 1:
        raise ValueError("max_items must be at least 1")
    return settings
