import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load():
    settings = json.loads((ROOT / "settings.json").read_text())
    if settings["item_limit"] < 1:
        raise ValueError("item_limit must be at least 1")
    return settings
